// Package ownerauth authenticates the owner of a prism server: the one
// person who may see every session and start, follow up and cancel them.
//
// The owner holds a token (PRISM_OWNER_TOKEN, at least MinTokenLen
// characters). A request is the owner's when it carries the token as
// "Authorization: Bearer TOKEN" (scripts, the JSON API), or the session
// cookie that the login page hands out in exchange for the token (browsers):
// HttpOnly, SameSite=Strict, Secure over TLS, valid for Options.MaxAge. The
// cookie holds no token: it is an expiry time and an HMAC of it under a key
// derived from the token, so it survives restarts, and changing the token
// ends every cookie. Failed logins are limited per client address.
//
// prism refuses to listen off loopback without an owner token (IsLoopback
// tells); with a token set, every route but the public ones (share links,
// static files, the login page, liveness) requires the owner.
package ownerauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
)

// CookieName is the owner's session cookie.
const CookieName = "prism_owner"

// MinTokenLen is the shortest owner token accepted.
const MinTokenLen = 16

// Options tune a Guard. The zero value is the default.
type Options struct {
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxAge is how long a login lasts (default 30 days).
	MaxAge time.Duration
	// MaxFailures is how many wrong tokens one client address may present
	// per FailureWindow before logins from it are refused (default 10 per
	// minute).
	MaxFailures   int
	FailureWindow time.Duration
}

// Guard checks requests for the owner's token or cookie. It is safe for
// concurrent use.
type Guard struct {
	tokenSum [sha256.Size]byte
	key      []byte // the cookie's HMAC key, derived from the token
	opts     Options

	mu       sync.Mutex
	failures map[string]*window
}

type window struct {
	start time.Time
	n     int
}

// ErrWrongToken is a login with a token that is not the owner's.
var ErrWrongToken = errors.New("that is not this server's owner token")

// ErrTooMany is a login refused after too many wrong tokens.
type ErrTooMany struct{ RetryAfter time.Duration }

func (e *ErrTooMany) Error() string {
	return "too many wrong tokens from this address; try again in " + e.RetryAfter.Round(time.Second).String()
}

// New returns a guard for token. A token shorter than MinTokenLen, or
// with spaces or control characters, is refused with a message saying how
// to make one.
func New(token string, o Options) (*Guard, error) {
	switch {
	case len(token) < MinTokenLen:
		return nil, errors.New("PRISM_OWNER_TOKEN must be at least 16 characters (make one with: openssl rand -hex 16)")
	case strings.ContainsFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return nil, errors.New("PRISM_OWNER_TOKEN must not contain spaces or control characters")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 30 * 24 * time.Hour
	}
	if o.MaxFailures <= 0 {
		o.MaxFailures = 10
	}
	if o.FailureWindow <= 0 {
		o.FailureWindow = time.Minute
	}
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("prism owner session cookie v1"))
	return &Guard{tokenSum: sha256.Sum256([]byte(token)), key: mac.Sum(nil), opts: o, failures: map[string]*window{}}, nil
}

// Check reports whether r is the owner's: a bearer token equal to the
// owner token, or a valid session cookie.
func (g *Guard) Check(r *http.Request) bool {
	if tok, ok := bearer(r); ok {
		return g.matches(tok)
	}
	c, err := r.Cookie(CookieName)
	return err == nil && g.validCookie(c.Value)
}

// bearer returns the token of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// matches compares a presented token with the owner's in constant time
// (over their hashes, so the length does not leak either).
func (g *Guard) matches(tok string) bool {
	sum := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(sum[:], g.tokenSum[:]) == 1
}

// Login checks a token presented on the login page. On success it sets the
// session cookie on w. A wrong token is ErrWrongToken; too many of them
// from r's address, *ErrTooMany (the token is then not even compared).
func (g *Guard) Login(w http.ResponseWriter, r *http.Request, tok string) error {
	addr := clientAddr(r)
	now := g.opts.Now()
	g.mu.Lock()
	f := g.failures[addr]
	if f != nil && now.Sub(f.start) >= g.opts.FailureWindow {
		delete(g.failures, addr)
		f = nil
	}
	if f != nil && f.n >= g.opts.MaxFailures {
		retry := g.opts.FailureWindow - now.Sub(f.start)
		g.mu.Unlock()
		return &ErrTooMany{RetryAfter: retry}
	}
	g.mu.Unlock()
	if !g.matches(strings.TrimSpace(tok)) {
		g.fail(addr, now)
		return ErrWrongToken
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: g.cookie(now.Add(g.opts.MaxAge)), Path: "/",
		MaxAge: int(g.opts.MaxAge / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r),
	})
	return nil
}

func (g *Guard) fail(addr string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.failures) > 10000 { // bound the table: drop windows that are over
		for a, f := range g.failures {
			if now.Sub(f.start) >= g.opts.FailureWindow {
				delete(g.failures, a)
			}
		}
	}
	f := g.failures[addr]
	if f == nil {
		f = &window{start: now}
		g.failures[addr] = f
	}
	f.n++
}

// Logout clears the session cookie.
func (g *Guard) Logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r)})
}

// cookie returns a session cookie value that expires at exp.
func (g *Guard) cookie(exp time.Time) string {
	var b [8 + sha256.Size]byte
	binary.BigEndian.PutUint64(b[:8], uint64(exp.UnixMilli()))
	mac := hmac.New(sha256.New, g.key)
	mac.Write(b[:8])
	copy(b[8:], mac.Sum(nil))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (g *Guard) validCookie(v string) bool {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) != 8+sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, g.key)
	mac.Write(b[:8])
	if !hmac.Equal(mac.Sum(nil), b[8:]) {
		return false
	}
	return g.opts.Now().UnixMilli() < int64(binary.BigEndian.Uint64(b[:8]))
}

// secure reports whether the request reached prism, or the proxy in front
// of it, over TLS: the cookie is then marked Secure.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// SafeNext returns where to go after logging in: next when it is a path on
// this server ("/sessions/x?y"), else "/". It refuses absolute and
// scheme-relative URLs ("//evil", "/\evil"), so the login page cannot be
// used to send the owner elsewhere.
func SafeNext(next string) string {
	if next == "" || next[0] != '/' || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") ||
		strings.ContainsFunc(next, unicode.IsControl) {
		return "/"
	}
	return next
}

// IsLoopback reports whether a listener's address is on loopback only
// (127.0.0.0/8, ::1). An unspecified address (0.0.0.0, ::) or any other is
// not: it is reachable from elsewhere.
func IsLoopback(addr net.Addr) bool {
	t, ok := addr.(*net.TCPAddr)
	return ok && t.IP != nil && t.IP.IsLoopback()
}
