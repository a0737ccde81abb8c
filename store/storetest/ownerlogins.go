package storetest

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"
)

// testOwnerLogins: the owner's logins (ownerauth.Logins) — a stored login
// is valid until its expiry; a revoked one is not, on this store and on the
// same database opened again (a restart, another node); revoking an
// unknown login is no error; storing a login drops the expired ones.
func testOwnerLogins(t *testing.T, e Engine) {
	ctx := context.Background()
	clock := NewClock(time.UnixMilli(1_800_000_000_000))
	st, reopen := e.Open(t, Options{Now: clock.Now})
	now := clock.Now().UnixMilli()
	a, b, c := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b")), sha256.Sum256([]byte("c"))
	hour := int64(time.Hour / time.Millisecond)
	for _, h := range [][sha256.Size]byte{a, b} {
		if err := st.AddOwnerLogin(ctx, h, now+hour); err != nil {
			t.Fatal(err)
		}
	}
	valid := func(st Store, h [sha256.Size]byte, at int64) bool {
		t.Helper()
		ok, err := st.OwnerLoginValid(ctx, h, at)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !valid(st, a, now) || !valid(st, b, now) {
		t.Fatal("a stored login is not valid")
	}
	if valid(st, c, now) {
		t.Error("a login never stored is valid")
	}
	if valid(st, a, now+hour) {
		t.Error("a login is valid at its expiry")
	}
	if err := st.RevokeOwnerLogin(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeOwnerLogin(ctx, c); err != nil {
		t.Errorf("revoking an unknown login: %v", err)
	}
	if valid(st, a, now) || !valid(st, b, now) {
		t.Error("revoking one login did not end it alone")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = reopen(Options{Now: clock.Now})
	if valid(st, a, now) || !valid(st, b, now) {
		t.Error("after reopening, the revoked login is valid again or the other one is gone")
	}
	// b expires; storing the next login drops it.
	clock.Advance(2 * time.Hour)
	if err := st.AddOwnerLogin(ctx, c, clock.Now().UnixMilli()+hour); err != nil {
		t.Fatal(err)
	}
	if n := e.Count(t, st, "SELECT count(*) FROM owner_logins"); n != 1 {
		t.Errorf("%d owner logins stored after the expired one should have been dropped, want 1", n)
	}
}
