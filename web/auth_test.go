package web_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"prism/backend"
	"prism/core"
	"prism/web"
	"prism/web/ownerauth"
)

const ownerToken = "owner-token-0123456789"

// TestOwnerAuth: with an owner token, every route but the public ones
// answers 401 to a request without the owner's bearer token or cookie; a
// browser is shown the login page, which exchanges the token for a cookie.
func TestOwnerAuth(t *testing.T) {
	// Every route gets one wrong token here: more than the limit per
	// address, which TestOwnerTokensLimited holds.
	guard, err := ownerauth.New(ownerToken, ownerauth.Options{MaxFailures: 1000})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := shareEnv(t, func(d *web.Deps) { d.Owner = guard })
	e.session(t, "s1", twoCallSession())
	// Every route Echo knows, with its parameters filled in.
	fill := strings.NewReplacer(":id", "s1", ":callId", "call-a", ":shareId", "x", ":token", "AAAAAAAAAAAAAAAAAAAAAA", "*", "app.css")
	checked := 0
	for _, r := range e.srv.Routes() {
		p := fill.Replace(r.Path)
		public := strings.HasPrefix(p, "/s/") || strings.HasPrefix(p, "/static/") || p == "/login" || p == "/logout" || p == "/healthz"
		if public {
			continue
		}
		checked++
		for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong-token-0123456789"}, {"Cookie", ownerauth.CookieName + "=forged"}} {
			req, _ := http.NewRequest(r.Method, e.base()+p, nil)
			if hdr != nil {
				req.Header.Set(hdr[0], hdr[1])
			}
			res, err := e.client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized || r.Method != http.MethodHead && !strings.Contains(string(body), "UNAUTHORIZED") {
				t.Errorf("%s %s %v: %d %s; want 401 UNAUTHORIZED", r.Method, p, hdr, res.StatusCode, body)
			}
		}
	}
	if checked < 15 {
		t.Fatalf("only %d owner routes checked", checked)
	}
	// The bearer token opens them.
	if res := e.apiJSON(t, http.MethodGet, "/api/sessions", "", nil, "Authorization", "Bearer "+ownerToken); res.StatusCode != 200 {
		t.Errorf("bearer: %d", res.StatusCode)
	}
	// A browser gets the login page; the right token sets the cookie and
	// goes back where it was going.
	status, page := e.raw(t, "GET", "/sessions/s1")
	if status != 401 || !strings.Contains(page, `data-testid="login-page"`) {
		t.Fatalf("browser without a cookie: %d", status)
	}
	noRedirect := *e.client()
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	form := url.Values{"token": {"wrong-token-0123456789"}, "next": {"/sessions/s1"}}
	res, err := noRedirect.PostForm(e.base()+"/login", form)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 || len(res.Cookies()) != 0 {
		t.Errorf("wrong token: %d, cookies %v", res.StatusCode, res.Cookies())
	}
	form.Set("token", ownerToken)
	res, err = noRedirect.PostForm(e.base()+"/login", form)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/sessions/s1" || len(res.Cookies()) != 1 {
		t.Fatalf("login: %d to %q, cookies %v", res.StatusCode, res.Header.Get("Location"), res.Cookies())
	}
	ck := res.Cookies()[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie %+v", ck)
	}
	req, _ := http.NewRequest("GET", e.base()+"/sessions/s1", nil)
	req.AddCookie(ck)
	res, err = e.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("with the cookie: %d", res.StatusCode)
	}
	// Public routes need nothing.
	_, path := e.share(t, "s1", "{}", "Authorization", "Bearer "+ownerToken)
	for _, p := range []string{path, "/static/app.css", "/healthz", "/login"} {
		if status, _ := e.raw(t, "GET", p); status != 200 {
			t.Errorf("public %s: %d", p, status)
		}
	}
}

// TestOwnerTokensLimited: wrong bearer tokens and wrong sign-ins count
// together against the address — 10 a minute, then 429 with Retry-After —
// while the right token still passes on both paths; and signing out
// revokes the login cookie in the store: presented again it is refused,
// also by a server restarted over the same database.
func TestOwnerTokensLimited(t *testing.T) {
	clk := &testClock{t: time.UnixMilli(1_800_000_000_000)}
	var logins ownerauth.Logins
	e := newEnv(t, func(d *web.Deps) {
		logins = d.Sessions.(backend.Source).Store.(ownerauth.Logins)
		g, err := ownerauth.New(ownerToken, ownerauth.Options{Now: clk.Now, Logins: logins})
		if err != nil {
			t.Fatal(err)
		}
		d.Owner = g
	})
	noRedirect := *e.client()
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	signIn := func(tok string) *http.Response {
		t.Helper()
		res, err := noRedirect.PostForm(e.base()+"/login", url.Values{"token": {tok}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	const wrong = "wrong-token-0123456789"
	for i := range 10 {
		if i%2 == 0 {
			if res := e.apiJSON(t, http.MethodGet, "/api/sessions", "", nil, "Authorization", "Bearer "+wrong); res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("wrong bearer %d: %d, want 401", i+1, res.StatusCode)
			}
		} else if res := signIn(wrong); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong sign-in %d: %d, want 401", i+1, res.StatusCode)
		}
	}
	clk.advance(15 * time.Second)
	res, body := e.do(t, http.MethodGet, "/api/sessions", nil, "Authorization", "Bearer "+wrong)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "45" || !strings.Contains(body, `"code":"`+core.CodeTooManyRequests+`"`) ||
		!strings.Contains(body, "too many wrong tokens from this address") {
		t.Errorf("wrong bearer 11: %d %s, Retry-After %q; want 429 TOO_MANY_REQUESTS, 45", res.StatusCode, body, res.Header.Get("Retry-After"))
	}
	if res := signIn(wrong); res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "45" {
		t.Errorf("wrong sign-in 12: %d, Retry-After %q; want 429, 45", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if res := e.apiJSON(t, http.MethodGet, "/api/sessions", "", nil, "Authorization", "Bearer "+ownerToken); res.StatusCode != http.StatusOK {
		t.Errorf("the right bearer token from the limited address: %d", res.StatusCode)
	}
	in := signIn(ownerToken)
	if in.StatusCode != http.StatusSeeOther || len(in.Cookies()) != 1 {
		t.Fatalf("the right sign-in from the limited address: %d, cookies %v", in.StatusCode, in.Cookies())
	}
	ck := in.Cookies()[0]
	withCookie := func(c *http.Cookie) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, e.base()+"/api/sessions", nil)
		req.AddCookie(c)
		res, err := e.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := withCookie(ck); code != http.StatusOK {
		t.Fatalf("with the login cookie: %d", code)
	}
	req, _ := http.NewRequest(http.MethodPost, e.base()+"/logout", nil)
	req.AddCookie(ck)
	out, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	if out.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", out.StatusCode)
	}
	if code := withCookie(ck); code != http.StatusUnauthorized {
		t.Errorf("the signed-out cookie presented again: %d, want 401", code)
	}
	// A server restarted over the same database refuses it too.
	restarted, err := ownerauth.New(ownerToken, ownerauth.Options{Now: clk.Now, Logins: logins})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/api/sessions", nil)
	r.AddCookie(ck)
	if err := restarted.Authenticate(r); !errors.Is(err, ownerauth.ErrNotOwner) {
		t.Errorf("a restarted guard over the same store: %v, want ErrNotOwner", err)
	}
}
