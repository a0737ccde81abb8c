// Package ownerauth authenticates the owner of a prism server: the one
// person who may see every session and start, follow up and cancel them.
//
// The owner holds a token (PRISM_OWNER_TOKEN, at least MinTokenLen
// characters). A request is the owner's when it carries the token as
// "Authorization: Bearer TOKEN" (scripts, the JSON API), or the session
// cookie that the login page hands out in exchange for the token (browsers):
// HttpOnly, SameSite=Strict, Secure over TLS, valid for Options.MaxAge. The
// cookie holds no token: it is a random login id and an expiry time, with
// an HMAC of both under a key derived from the token (so changing the token
// ends every cookie, and a forged cookie is refused without a look-up).
// The login id is also kept, as its SHA-256 hash, in Options.Logins — the
// session store, in prism serve — and signing out deletes it there: a
// signed-out cookie is refused from then on, after a restart too, and on
// every node that shares the store.
//
// Wrong tokens are limited per client address, on both paths alike (a
// bearer header and the login form): past Options.MaxFailures in
// Options.FailureWindow, a wrong token is answered *ErrTooMany. The right
// token is always let through, so a flood of wrong tokens from an address
// never locks the owner out.
//
// prism refuses to listen off loopback without an owner token (IsLoopback
// tells); with a token set, every route but the public ones (share links,
// static files, the login page, liveness) requires the owner.
package ownerauth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
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

// Logins keeps the owner's signed-in browsers: the SHA-256 hash of each
// login cookie's id, with its expiry (epoch milliseconds). Both session
// stores implement it.
type Logins interface {
	// AddOwnerLogin stores a login (and may drop expired ones).
	AddOwnerLogin(ctx context.Context, idHash [sha256.Size]byte, expiresAt int64) error
	// OwnerLoginValid reports whether a login is stored and expires after
	// now.
	OwnerLoginValid(ctx context.Context, idHash [sha256.Size]byte, now int64) (bool, error)
	// RevokeOwnerLogin deletes a login; an unknown one is no error.
	RevokeOwnerLogin(ctx context.Context, idHash [sha256.Size]byte) error
}

// memoryLogins is the Logins of a guard given none: revocation lasts as
// long as the process.
type memoryLogins struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]int64
}

func (l *memoryLogins) AddOwnerLogin(_ context.Context, h [sha256.Size]byte, exp int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[h] = exp
	return nil
}

func (l *memoryLogins) OwnerLoginValid(_ context.Context, h [sha256.Size]byte, now int64) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	exp, ok := l.m[h]
	return ok && exp > now, nil
}

func (l *memoryLogins) RevokeOwnerLogin(_ context.Context, h [sha256.Size]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, h)
	return nil
}

// Options tune a Guard. The zero value is the default.
type Options struct {
	// Logins keeps the login cookies' ids (default: in memory, so a
	// sign-out holds only until the process ends; prism serve passes its
	// session store).
	Logins Logins
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxAge is how long a login lasts (default 30 days).
	MaxAge time.Duration
	// MaxFailures is how many wrong tokens one client address may present
	// per FailureWindow, as bearer tokens and at the login form together,
	// before its wrong tokens are answered *ErrTooMany (default 10 per
	// minute). The right token is never refused.
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

// ErrWrongToken is a token (bearer or login) that is not the owner's.
var ErrWrongToken = errors.New("that is not this server's owner token")

// ErrTooMany is a wrong token (bearer or login) from an address past its
// limit; RetryAfter says when its window ends.
type ErrTooMany struct{ RetryAfter time.Duration }

// Error says to wait.
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
	if o.Logins == nil {
		o.Logins = &memoryLogins{m: map[[sha256.Size]byte]int64{}}
	}
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("prism owner session cookie v2"))
	return &Guard{tokenSum: sha256.Sum256([]byte(token)), key: mac.Sum(nil), opts: o, failures: map[string]*window{}}, nil
}

// ErrNotOwner is a request without the owner's token or a valid login
// cookie.
var ErrNotOwner = errors.New("owner authentication required")

// Check reports whether r is the owner's: a bearer token equal to the
// owner token, or a valid login cookie. It counts nothing; requests the
// guard admits or refuses go through Authenticate.
func (g *Guard) Check(r *http.Request) bool {
	if tok, ok := bearer(r); ok {
		return g.matches(tok)
	}
	return g.cookieValid(r)
}

// Authenticate admits the owner's requests: nil for the owner's bearer
// token (even from an address past its limit) or a valid login cookie.
// Otherwise ErrNotOwner (no token, or a cookie that is forged, expired or
// signed out), ErrWrongToken (a wrong bearer token, counted against the
// address) or *ErrTooMany (a wrong bearer token from an address past
// Options.MaxFailures in the window). A failed look-up of the cookie's
// login is returned as it is.
func (g *Guard) Authenticate(r *http.Request) error {
	if tok, ok := bearer(r); ok {
		return g.attempt(r, tok)
	}
	c, err := r.Cookie(CookieName)
	if err != nil {
		return ErrNotOwner
	}
	ok, err := g.validCookie(r.Context(), c.Value)
	switch {
	case err != nil:
		return fmt.Errorf("look up the owner's login: %w", err)
	case !ok:
		return ErrNotOwner
	}
	return nil
}

// attempt checks a presented token, bearer or login form: the right one
// passes, a wrong one is counted against the address — ErrWrongToken, or
// *ErrTooMany once the address is past its limit.
func (g *Guard) attempt(r *http.Request, tok string) error {
	if g.matches(tok) {
		return nil
	}
	addr := clientAddr(r)
	now := g.opts.Now()
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
	if f != nil && now.Sub(f.start) >= g.opts.FailureWindow {
		f = nil
	}
	if f == nil {
		f = &window{start: now}
		g.failures[addr] = f
	}
	if f.n >= g.opts.MaxFailures {
		return &ErrTooMany{RetryAfter: g.opts.FailureWindow - now.Sub(f.start)}
	}
	f.n++
	return ErrWrongToken
}

// cookieValid reports whether r carries a valid login cookie (a failed
// look-up counts as not).
func (g *Guard) cookieValid(r *http.Request) bool {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return false
	}
	ok, err := g.validCookie(r.Context(), c.Value)
	return err == nil && ok
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

// Login checks a token presented on the login page, with the limit of
// Authenticate's bearer tokens: the right token sets a login cookie on w
// (and stores its login); a wrong one is ErrWrongToken, or *ErrTooMany
// from an address past its limit. Storing the login may fail (an error
// that is neither).
func (g *Guard) Login(w http.ResponseWriter, r *http.Request, tok string) error {
	if err := g.attempt(r, strings.TrimSpace(tok)); err != nil {
		return err
	}
	var id [loginIDLen]byte
	if _, err := rand.Read(id[:]); err != nil {
		return fmt.Errorf("make a login id: %w", err)
	}
	exp := g.opts.Now().Add(g.opts.MaxAge)
	if err := g.opts.Logins.AddOwnerLogin(r.Context(), sha256.Sum256(id[:]), exp.UnixMilli()); err != nil {
		return fmt.Errorf("store the owner's login: %w", err)
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: g.cookie(id, exp), Path: "/",
		MaxAge: int(g.opts.MaxAge / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r),
	})
	return nil
}

// Logout ends the request's login: its id is deleted from Options.Logins,
// so the cookie is refused from now on wherever it is presented, and the
// browser is told to drop it. A request without a valid cookie only gets
// the cookie cleared.
func (g *Guard) Logout(w http.ResponseWriter, r *http.Request) error {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r)})
	c, err := r.Cookie(CookieName)
	if err != nil {
		return nil
	}
	id, _, ok := g.parseCookie(c.Value)
	if !ok {
		return nil
	}
	if err := g.opts.Logins.RevokeOwnerLogin(r.Context(), sha256.Sum256(id[:])); err != nil {
		return fmt.Errorf("revoke the owner's login: %w", err)
	}
	return nil
}

// loginIDLen is the length of a login id: 128 random bits.
const loginIDLen = 16

// cookie returns a login cookie value: the login id, its expiry, and an
// HMAC of both.
func (g *Guard) cookie(id [loginIDLen]byte, exp time.Time) string {
	var b [loginIDLen + 8 + sha256.Size]byte
	copy(b[:loginIDLen], id[:])
	binary.BigEndian.PutUint64(b[loginIDLen:loginIDLen+8], uint64(exp.UnixMilli()))
	mac := hmac.New(sha256.New, g.key)
	mac.Write(b[:loginIDLen+8])
	copy(b[loginIDLen+8:], mac.Sum(nil))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// parseCookie returns a cookie's login id and expiry when its HMAC is
// right.
func (g *Guard) parseCookie(v string) (id [loginIDLen]byte, exp int64, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) != loginIDLen+8+sha256.Size {
		return id, 0, false
	}
	mac := hmac.New(sha256.New, g.key)
	mac.Write(b[:loginIDLen+8])
	if !hmac.Equal(mac.Sum(nil), b[loginIDLen+8:]) {
		return id, 0, false
	}
	copy(id[:], b[:loginIDLen])
	return id, int64(binary.BigEndian.Uint64(b[loginIDLen : loginIDLen+8])), true
}

// validCookie reports whether a cookie is the guard's, unexpired, and its
// login still stored (not signed out).
func (g *Guard) validCookie(ctx context.Context, v string) (bool, error) {
	id, exp, ok := g.parseCookie(v)
	now := g.opts.Now().UnixMilli()
	if !ok || now >= exp {
		return false, nil
	}
	return g.opts.Logins.OwnerLoginValid(ctx, sha256.Sum256(id[:]), now)
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
