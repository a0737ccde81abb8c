package ownerauth_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"prism/web/ownerauth"
)

const token = "0123456789abcdef-owner"

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newGuard(t *testing.T, tok string, c *clock) *ownerauth.Guard {
	t.Helper()
	g, err := ownerauth.New(tok, ownerauth.Options{Now: c.now, MaxAge: time.Hour, MaxFailures: 3, FailureWindow: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestNewRefusesWeakTokens(t *testing.T) {
	for _, tok := range []string{"", "short", "fifteen chars!!", "sixteen chars with spaces", "0123456789abcdef\n"} {
		if _, err := ownerauth.New(tok, ownerauth.Options{}); err == nil || !strings.Contains(err.Error(), "PRISM_OWNER_TOKEN") {
			t.Errorf("New(%q) = %v; want an error naming PRISM_OWNER_TOKEN", tok, err)
		}
	}
}

// login exchanges tok for a cookie and returns the response.
func login(g *ownerauth.Guard, tok, remote string, tlsOn bool) (*http.Response, error) {
	r := httptest.NewRequest(http.MethodPost, "/login", nil)
	r.RemoteAddr = remote
	if tlsOn {
		r.TLS = &tls.ConnectionState{}
	}
	w := httptest.NewRecorder()
	err := g.Login(w, r, tok)
	return w.Result(), err
}

func request(header, value string, cookies ...*http.Cookie) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if header != "" {
		r.Header.Set(header, value)
	}
	for _, c := range cookies {
		r.AddCookie(c)
	}
	return r
}

func TestBearerAndCookie(t *testing.T) {
	c := &clock{t: time.UnixMilli(1_800_000_000_000)}
	g := newGuard(t, token, c)

	for _, tc := range []struct {
		name   string
		header string
		want   bool
	}{
		{"bearer", "Bearer " + token, true},
		{"bearer, any case", "bearer " + token, true},
		{"wrong bearer", "Bearer " + token + "x", false},
		{"prefix of the token", "Bearer " + token[:16], false},
		{"basic", "Basic " + token, false},
		{"bare token", token, false},
	} {
		if got := g.Check(request("Authorization", tc.header)); got != tc.want {
			t.Errorf("%s: Check = %v, want %v", tc.name, got, tc.want)
		}
	}
	if g.Check(request("", "")) {
		t.Error("a request with no credential passed")
	}

	res, err := login(g, token, "192.0.2.1:5000", false)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	cookies := res.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login set %d cookies", len(cookies))
	}
	ck := cookies[0]
	if ck.Name != ownerauth.CookieName || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.MaxAge != 3600 || ck.Secure {
		t.Errorf("cookie attributes: %+v", ck)
	}
	if strings.Contains(ck.Value, token) {
		t.Error("the cookie holds the token")
	}
	if !g.Check(request("", "", ck)) {
		t.Error("the login cookie is not accepted")
	}
	// A cookie made under another token, a tampered one, an expired one.
	other := newGuard(t, token+"-rotated", c)
	if other.Check(request("", "", ck)) {
		t.Error("a cookie survived a change of owner token")
	}
	for _, i := range []int{0, 5, 20} { // the expiry, its last byte, the MAC
		tampered := *ck
		b := []byte(ck.Value)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		tampered.Value = string(b)
		if g.Check(request("", "", &tampered)) {
			t.Errorf("a cookie tampered at %d was accepted", i)
		}
	}
	c.t = c.t.Add(time.Hour)
	if g.Check(request("", "", ck)) {
		t.Error("an expired cookie was accepted")
	}

	// Over TLS the cookie is Secure.
	res, err = login(g, token, "192.0.2.1:5000", true)
	if err != nil || !res.Cookies()[0].Secure {
		t.Errorf("login over TLS: %v, secure %v", err, res.Cookies()[0].Secure)
	}
	// Logout without a cookie clears it.
	w := httptest.NewRecorder()
	g.Logout(w, request("", ""))
	if got := w.Result().Cookies(); len(got) != 1 || got[0].MaxAge >= 0 || got[0].Value != "" {
		t.Errorf("logout cookie: %+v", got)
	}
}

// TestWrongTokensLimitedOnBothPaths: wrong tokens count against their
// address whether they come as a bearer header or through the login form;
// past the limit a wrong token is *ErrTooMany until the window ends; the
// right token always passes, on both paths, and other addresses are not
// affected.
func TestWrongTokensLimitedOnBothPaths(t *testing.T) {
	c := &clock{t: time.UnixMilli(1_800_000_000_000)}
	g := newGuard(t, token, c) // 3 a minute
	bearer := func(tok, remote string) error {
		r := request("Authorization", "Bearer "+tok)
		r.RemoteAddr = remote
		return g.Authenticate(r)
	}
	const wrong = "wrong-token-wrong-token"
	if err := bearer(wrong, "192.0.2.7:1"); !errors.Is(err, ownerauth.ErrWrongToken) {
		t.Fatalf("wrong bearer 1: %v", err)
	}
	c.t = c.t.Add(10 * time.Second)
	if res, err := login(g, wrong, "192.0.2.7:2", false); !errors.Is(err, ownerauth.ErrWrongToken) || len(res.Cookies()) != 0 {
		t.Fatalf("wrong login 2: %v, cookies %v", err, res.Cookies())
	}
	if err := bearer(wrong, "192.0.2.7:3"); !errors.Is(err, ownerauth.ErrWrongToken) {
		t.Fatalf("wrong bearer 3: %v", err)
	}
	// Past the limit, on either path:
	var many *ownerauth.ErrTooMany
	if err := bearer(wrong, "192.0.2.7:4"); !errors.As(err, &many) || many.RetryAfter != 50*time.Second {
		t.Fatalf("wrong bearer 4: %v, want ErrTooMany with 50s left", err)
	}
	if res, err := login(g, wrong, "192.0.2.7:5", false); !errors.As(err, &many) || len(res.Cookies()) != 0 {
		t.Fatalf("wrong login 5: %v, cookies %v", err, res.Cookies())
	}
	// ...yet the right token passes, on both.
	if err := bearer(token, "192.0.2.7:6"); err != nil {
		t.Errorf("the right bearer token from the limited address: %v", err)
	}
	if res, err := login(g, token, "192.0.2.7:7", false); err != nil || len(res.Cookies()) != 1 {
		t.Errorf("the right token at the login form from the limited address: %v, cookies %v", err, res.Cookies())
	}
	// Another address is not limited,
	if err := bearer(wrong, "192.0.2.8:1"); !errors.Is(err, ownerauth.ErrWrongToken) {
		t.Errorf("another address: %v", err)
	}
	// and the window ends.
	c.t = c.t.Add(50 * time.Second)
	if err := bearer(wrong, "192.0.2.7:8"); !errors.Is(err, ownerauth.ErrWrongToken) {
		t.Errorf("after the window: %v", err)
	}
}

// TestLogoutRevokesTheCookie: signing out ends that login's cookie for
// good — presenting it again is refused, also by a guard over the same
// logins (a restarted server, another node) — while another login of the
// owner stays valid.
func TestLogoutRevokesTheCookie(t *testing.T) {
	c := &clock{t: time.UnixMilli(1_800_000_000_000)}
	logins := &recordingLogins{m: map[[32]byte]int64{}}
	newG := func() *ownerauth.Guard {
		g, err := ownerauth.New(token, ownerauth.Options{Now: c.now, MaxAge: time.Hour, Logins: logins})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := newG()
	res1, err := login(g, token, "192.0.2.1:1", false)
	if err != nil {
		t.Fatal(err)
	}
	res2, err := login(g, token, "192.0.2.1:2", false)
	if err != nil {
		t.Fatal(err)
	}
	one, two := res1.Cookies()[0], res2.Cookies()[0]
	if one.Value == two.Value {
		t.Fatal("two logins got the same cookie")
	}
	if err := g.Authenticate(request("", "", one)); err != nil {
		t.Fatalf("the login cookie: %v", err)
	}
	w := httptest.NewRecorder()
	if err := g.Logout(w, request("", "", one)); err != nil {
		t.Fatal(err)
	}
	if got := w.Result().Cookies(); len(got) != 1 || got[0].MaxAge >= 0 || got[0].Value != "" {
		t.Errorf("logout cookie: %+v", got)
	}
	for name, guard := range map[string]*ownerauth.Guard{"this guard": g, "a new guard over the same logins": newG()} {
		if err := guard.Authenticate(request("", "", one)); !errors.Is(err, ownerauth.ErrNotOwner) {
			t.Errorf("%s: the signed-out cookie: %v, want ErrNotOwner", name, err)
		}
		if guard.Check(request("", "", one)) {
			t.Errorf("%s: Check passes the signed-out cookie", name)
		}
		if err := guard.Authenticate(request("", "", two)); err != nil {
			t.Errorf("%s: the other login's cookie: %v", name, err)
		}
	}
	if len(logins.m) != 1 {
		t.Errorf("%d logins stored after one of two signed out, want 1", len(logins.m))
	}
	// A store that fails: the look-up's error, not a pass.
	logins.fail = errors.New("store down")
	if err := g.Authenticate(request("", "", two)); err == nil || errors.Is(err, ownerauth.ErrNotOwner) || !strings.Contains(err.Error(), "store down") {
		t.Errorf("with the store down: %v, want its error", err)
	}
}

// recordingLogins is an ownerauth.Logins in a map, which can fail.
type recordingLogins struct {
	m    map[[32]byte]int64
	fail error
}

func (l *recordingLogins) AddOwnerLogin(_ context.Context, h [32]byte, exp int64) error {
	l.m[h] = exp
	return l.fail
}

func (l *recordingLogins) OwnerLoginValid(_ context.Context, h [32]byte, now int64) (bool, error) {
	exp, ok := l.m[h]
	return ok && exp > now, l.fail
}

func (l *recordingLogins) RevokeOwnerLogin(_ context.Context, h [32]byte) error {
	delete(l.m, h)
	return l.fail
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "/",
		"/":                    "/",
		"/sessions/abc?at=3#c": "/sessions/abc?at=3#c",
		"//evil.example/x":     "/",
		"/\\evil.example":      "/",
		"https://evil.example": "/",
		"javascript:alert(1)":  "/",
		"/a\r\nSet-Cookie: x":  "/",
		"sessions":             "/",
	} {
		if got := ownerauth.SafeNext(in); got != want {
			t.Errorf("SafeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.9.9.9:1": true, "[::1]:8080": true,
		"0.0.0.0:8080": false, "[::]:8080": false, "192.0.2.1:80": false, "[2001:db8::1]:80": false,
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := ownerauth.IsLoopback(a); got != want {
			t.Errorf("IsLoopback(%s) = %v, want %v", addr, got, want)
		}
	}
	if ownerauth.IsLoopback(&net.UnixAddr{Name: "/tmp/x", Net: "unix"}) {
		t.Error("a unix socket counted as loopback")
	}
}
