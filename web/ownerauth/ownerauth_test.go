package ownerauth_test

import (
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
	// Logout clears the cookie.
	w := httptest.NewRecorder()
	g.Logout(w, request("", ""))
	if got := w.Result().Cookies(); len(got) != 1 || got[0].MaxAge >= 0 || got[0].Value != "" {
		t.Errorf("logout cookie: %+v", got)
	}
}

func TestLoginLimitsFailures(t *testing.T) {
	c := &clock{t: time.UnixMilli(1_800_000_000_000)}
	g := newGuard(t, token, c)
	for i := range 3 {
		res, err := login(g, "wrong-token-wrong-token", "192.0.2.7:1", false)
		if !errors.Is(err, ownerauth.ErrWrongToken) || len(res.Cookies()) != 0 {
			t.Fatalf("attempt %d: %v, cookies %v", i, err, res.Cookies())
		}
	}
	// The fourth try is refused even with the right token...
	res, err := login(g, token, "192.0.2.7:2", false)
	var many *ownerauth.ErrTooMany
	if !errors.As(err, &many) || many.RetryAfter != time.Minute || len(res.Cookies()) != 0 {
		t.Fatalf("after 3 failures: %v, cookies %v", err, res.Cookies())
	}
	// ...from that address only,
	if _, err := login(g, token, "192.0.2.8:1", false); err != nil {
		t.Errorf("another address: %v", err)
	}
	// and only until the window is over.
	c.t = c.t.Add(time.Minute)
	if _, err := login(g, token, "192.0.2.7:3", false); err != nil {
		t.Errorf("after the window: %v", err)
	}
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
