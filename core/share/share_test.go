package share_test

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"prism/core/share"
)

func TestNewTokenParses(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		tok, h := share.NewToken()
		if share.TokenLen != 22 || len(tok) != share.TokenLen {
			t.Fatalf("token %q has length %d, want 22", tok, len(tok))
		}
		if seen[tok] {
			t.Fatalf("token %q repeated", tok)
		}
		seen[tok] = true
		got, ok := share.ParseToken(tok)
		if !ok || got != h || got != sha256.Sum256([]byte(tok)) {
			t.Fatalf("ParseToken(%q) = %x, %v; want the token's SHA-256", tok, got, ok)
		}
	}
}

func TestParseTokenRefusesMalformed(t *testing.T) {
	tok, _ := share.NewToken()
	for _, s := range []string{
		"", "short", tok + "A", tok[:21],
		strings.Repeat("+", 22),          // standard, not URL-safe, alphabet
		tok[:21] + "=",                   // padding
		"AAAAAAAAAAAAAAAAAAAAAB",         // non-canonical: trailing bits set
		"../../etc/passwd/aaaaa",         // path characters
		strings.Repeat("A", 21) + "\x00", // NUL
	} {
		if _, ok := share.ParseToken(s); ok {
			t.Errorf("ParseToken(%q) accepted a malformed token", s)
		}
	}
}

func TestActive(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	for _, tc := range []struct {
		name string
		s    share.Share
		want bool
	}{
		{"no expiry", share.Share{}, true},
		{"expires later", share.Share{ExpiresAt: 1_000_001}, true},
		{"expires now", share.Share{ExpiresAt: 1_000_000}, false},
		{"expired", share.Share{ExpiresAt: 999_999}, false},
		{"revoked", share.Share{RevokedAt: 5}, false},
	} {
		if got := tc.s.Active(now); got != tc.want {
			t.Errorf("%s: Active = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCovers(t *testing.T) {
	n := int64(7)
	scoped := share.Share{UpToSeq: &n}
	if !scoped.Covers(7) || scoped.Covers(8) || !scoped.Scoped() {
		t.Errorf("a link scoped at 7 must cover 7 and not 8")
	}
	if live := (share.Share{}); !live.Covers(1<<40) || live.Scoped() {
		t.Errorf("an unscoped link covers every event")
	}
}
