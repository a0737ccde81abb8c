package storetest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/share"
)

func testSharesLifecycle(t *testing.T, e Engine) {
	ctx := context.Background()
	st, clk, reopen := newShareStore(t, e)
	expires := clk.Now().Add(time.Hour).UnixMilli()

	s, tok, err := st.CreateShare(ctx, share.Spec{SessionID: "s1", Label: "  for review ", ExpiresAt: expires, UpToSeq: seq(4), Redact: true, Labels: true, Children: true})
	if err != nil {
		t.Fatalf("CreateShare: %v", err)
	}
	want := share.Share{ID: s.ID, SessionID: "s1", Label: "for review", CreatedAt: clk.Now().UnixMilli(), ExpiresAt: expires, UpToSeq: seq(4), Redact: true, Labels: true, Children: true}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("created share (-want +got):\n%s", diff)
	}
	hash, ok := share.ParseToken(tok)
	if !ok {
		t.Fatalf("token %q is malformed", tok)
	}
	live, _, err := st.CreateShare(ctx, share.Spec{SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}

	// Lookup by the token's hash finds it; another hash finds nothing.
	got, err := st.ShareByToken(ctx, hash)
	if err != nil || got.ID != s.ID {
		t.Fatalf("ShareByToken = %+v, %v", got, err)
	}
	_, other := share.NewToken()
	if _, err := st.ShareByToken(ctx, other); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("unknown token: %v, want NOT_FOUND", err)
	}

	// The list has both, oldest first, never a token.
	list, err := st.Shares(ctx, "s1")
	if err != nil || len(list) != 2 || list[0].ID != s.ID || list[1].ID != live.ID || list[1].UpToSeq != nil || list[1].Redact ||
		!list[0].Labels || list[1].Labels || !list[0].Children || list[1].Children {
		t.Fatalf("Shares = %+v, %v", list, err)
	}
	if other, _ := st.Shares(ctx, "nope"); len(other) != 0 {
		t.Errorf("shares of an unknown session: %+v", other)
	}

	// Views count and stamp the store's clock.
	clk.Advance(time.Minute)
	for range 3 {
		if err := st.RecordShareView(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
	}
	got, _ = st.Share(ctx, s.ID)
	if got.Views != 3 || got.LastViewedAt != clk.Now().UnixMilli() {
		t.Errorf("after 3 views: views %d, last viewed %d", got.Views, got.LastViewedAt)
	}

	// Expiry is decided by the injected clock.
	if !got.Active(clk.Now()) {
		t.Error("share inactive before its expiry")
	}
	clk.Advance(time.Hour)
	if got.Active(clk.Now()) {
		t.Error("share still active after its expiry")
	}

	// Revocation stamps the clock once; revoking again changes nothing.
	revokedAt := clk.Now().UnixMilli()
	r, err := st.RevokeShare(ctx, live.ID)
	if err != nil || r.RevokedAt != revokedAt || r.Active(clk.Now()) {
		t.Fatalf("RevokeShare = %+v, %v", r, err)
	}
	clk.Advance(time.Minute)
	if r, err := st.RevokeShare(ctx, live.ID); err != nil || r.RevokedAt != revokedAt {
		t.Errorf("second revoke = %+v, %v; want the first revocation kept", r, err)
	}

	for name, err := range map[string]error{
		"revoke":  func() error { _, err := st.RevokeShare(ctx, "nope"); return err }(),
		"view":    st.RecordShareView(ctx, "nope"),
		"get":     func() error { _, err := st.Share(ctx, "nope"); return err }(),
		"session": func() error { _, _, err := st.CreateShare(ctx, share.Spec{SessionID: "nope"}); return err }(),
	} {
		if core.ErrorCode(err) != core.CodeNotFound {
			t.Errorf("%s of an unknown id: %v, want NOT_FOUND", name, err)
		}
	}

	// Reopened, the link still resolves.
	st.Close()
	st2 := reopen(Options{Now: clk.Now})
	if got, err := st2.ShareByToken(ctx, hash); err != nil || got.Views != 3 {
		t.Errorf("after reopen: %+v, %v", got, err)
	}
}

func testSharesRefuseBadSpecs(t *testing.T, e Engine) {
	ctx := context.Background()
	st, clk, _ := newShareStore(t, e)
	for _, tc := range []struct {
		name string
		spec share.Spec
		msg  string
	}{
		{"seq past the end", share.Spec{SessionID: "s1", UpToSeq: seq(8)}, "upToSeq 8 is past the session's last event (7)"},
		{"negative seq", share.Spec{SessionID: "s1", UpToSeq: seq(-1)}, "upToSeq must be a seq of the session"},
		{"expired already", share.Spec{SessionID: "s1", ExpiresAt: clk.Now().UnixMilli()}, "is not in the future"},
		{"long label", share.Spec{SessionID: "s1", Label: strings.Repeat("é", share.MaxLabel+1)}, "longer than 200 characters"},
		{"control in label", share.Spec{SessionID: "s1", Label: "a\x1b[31mb"}, "without control characters"},
	} {
		_, _, err := st.CreateShare(ctx, tc.spec)
		if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v; want INVALID with %q", tc.name, err, tc.msg)
		}
	}
	if list, _ := st.Shares(ctx, "s1"); len(list) != 0 {
		t.Errorf("refused specs left %d shares", len(list))
	}
	// The boundaries are accepted: the last event, and a label of 200.
	if _, _, err := st.CreateShare(ctx, share.Spec{SessionID: "s1", UpToSeq: seq(7), Label: strings.Repeat("é", share.MaxLabel)}); err != nil {
		t.Errorf("boundary spec refused: %v", err)
	}
}

// TestShares_goWithTheirSession: deleting a session deletes its links.
func testSharesGoWithTheirSession(t *testing.T, e Engine) {
	ctx := context.Background()
	st, _, _ := newShareStore(t, e)
	if _, _, err := st.CreateShare(ctx, share.Spec{SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	e.Exec(t, st, "DELETE FROM sessions WHERE id = 's1'")
	if n := e.Count(t, st, "SELECT count(*) FROM shares"); n != 0 {
		t.Errorf("%d shares left after their session was deleted", n)
	}
}

// TestShares_concurrentViews: every view counts, however many arrive at once.
func testSharesConcurrentViews(t *testing.T, e Engine) {
	ctx := context.Background()
	st, _, _ := newShareStore(t, e)
	s, _, err := st.CreateShare(ctx, share.Spec{SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for range 5 {
				if err := st.RecordShareView(ctx, s.ID); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got, _ := st.Share(ctx, s.ID); got.Views != 100 {
		t.Errorf("views = %d, want 100", got.Views)
	}
}

func seq(n int64) *int64 { return &n }

// newShareStore opens a store on a stopped clock with one session, s1,
// of one turn (seqs 0–7).
func newShareStore(t *testing.T, e Engine) (Store, *Clock, func(Options) Store) {
	t.Helper()
	clk := NewClock(time.UnixMilli(1_800_000_000_000))
	st, reopen := e.Open(t, Options{Now: clk.Now})
	MustCreate(t, st, "s1")
	if err := st.AppendEvents(context.Background(), "s1", TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	return st, clk, reopen
}
