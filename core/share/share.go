// Package share is the domain of shared links: what a link grants (one
// session, optionally only up to an event, optionally until a time, redacted
// or not), whether it still grants it, and its bearer token.
//
// A token is 128 bits from crypto/rand, written as 22 characters of
// unpadded URL-safe base64. It is shown once, when the link is made; only
// its SHA-256 hash is stored and looked up, so a copy of the database does
// not hand out working links.
package share

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"prism/core"
)

// TokenBytes is the entropy of a token: 128 bits.
const TokenBytes = 16

// TokenLen is the length of a token's text form: 22 characters.
const TokenLen = (TokenBytes*8 + 5) / 6

// Hash is the SHA-256 hash of a token, the only form of it that is stored.
type Hash [sha256.Size]byte

// NewToken returns a fresh token and its hash.
func NewToken() (string, Hash) {
	var b [TokenBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	return tok, sha256.Sum256([]byte(tok))
}

// ParseToken checks that s has a token's form (22 URL-safe base64
// characters encoding 16 bytes, canonically) and returns its hash. A
// malformed token is refused without a lookup.
func ParseToken(s string) (Hash, bool) {
	if len(s) != TokenLen {
		return Hash{}, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != TokenBytes {
		return Hash{}, false
	}
	return sha256.Sum256([]byte(s)), true
}

// MaxLabel is the longest label a link may carry, in runes.
const MaxLabel = 200

// Spec is what a new link grants.
type Spec struct {
	SessionID string
	// Label names the link for its owner ("" = none).
	Label string
	// ExpiresAt ends the link (epoch ms; 0 = never).
	ExpiresAt int64
	// UpToSeq scopes the link to the session as it was right after this
	// event (nil = the whole session, live while it runs).
	UpToSeq *int64
	// Redact renders the session through the redaction pass.
	Redact bool
	// Labels shows the session's labels (notes of kind label, redacted as
	// the rest when Redact is set); off, the link carries no trace of
	// one.
	Labels bool
	// Children nests the session's subagents in their spawning calls'
	// cards (redacted as the rest, scoped as the link); off, the link
	// carries no trace of a child.
	Children bool
}

// Check validates a spec at time now (epoch ms) as every store does before
// it makes a link, and returns its label trimmed: a label is at most
// MaxLabel characters without control characters, an UpToSeq is 0 or more,
// an ExpiresAt lies in the future (each core.CodeInvalid otherwise).
func (s Spec) Check(now int64) (label string, err error) {
	label = strings.TrimSpace(s.Label)
	switch {
	case !utf8.ValidString(label) || strings.ContainsFunc(label, unicode.IsControl):
		return "", core.Errorf(core.CodeInvalid, "share label must be text without control characters")
	case utf8.RuneCountInString(label) > MaxLabel:
		return "", core.Errorf(core.CodeInvalid, "share label is longer than %d characters", MaxLabel)
	case s.UpToSeq != nil && *s.UpToSeq < 0:
		return "", core.Errorf(core.CodeInvalid, "upToSeq must be a seq of the session (0 or more), got %d", *s.UpToSeq)
	case s.ExpiresAt != 0 && s.ExpiresAt <= now:
		return "", core.Errorf(core.CodeInvalid, "expiresAt %d is not in the future (now %d)", s.ExpiresAt, now)
	}
	return label, nil
}

// CheckSeq validates UpToSeq against the session's last seq
// (core.CodeInvalid when it lies past it).
func (s Spec) CheckSeq(lastSeq int64) error {
	if s.UpToSeq != nil && *s.UpToSeq > lastSeq {
		return core.Errorf(core.CodeInvalid, "upToSeq %d is past the session's last event (%d)", *s.UpToSeq, lastSeq)
	}
	return nil
}

// Share is a stored link, as its owner sees it (never with its token).
// Times are epoch milliseconds; 0 means "not set".
type Share struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionId"`
	Label     string `json:"label"`
	CreatedAt int64  `json:"createdAt"`
	ExpiresAt int64  `json:"expiresAt,omitempty"`
	// UpToSeq is the last event the link shows (nil: the whole session, live).
	UpToSeq *int64 `json:"upToSeq"`
	Redact  bool   `json:"redact"`
	// Labels says the link shows the session's labels (Spec.Labels).
	Labels bool `json:"labels"`
	// Children says the link nests the session's subagents (Spec.Children).
	Children     bool  `json:"children"`
	RevokedAt    int64 `json:"revokedAt,omitempty"`
	Views        int64 `json:"views"`
	LastViewedAt int64 `json:"lastViewedAt,omitempty"`
}

// Active reports whether the link still grants access at now: it is not
// revoked and has not expired (a link expires at ExpiresAt exactly).
func (s Share) Active(now time.Time) bool {
	if s.RevokedAt != 0 {
		return false
	}
	return s.ExpiresAt == 0 || now.UnixMilli() < s.ExpiresAt
}

// Scoped reports whether the link is limited to a prefix of the session.
func (s Share) Scoped() bool { return s.UpToSeq != nil }

// Covers reports whether the event seq is within the link's scope.
func (s Share) Covers(seq int64) bool { return s.UpToSeq == nil || seq <= *s.UpToSeq }
