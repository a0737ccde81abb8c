package web_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"prism/web"
	"prism/web/ownerauth"
)

const ownerToken = "owner-token-0123456789"

// TestOwnerAuth: with an owner token, every route but the public ones
// answers 401 to a request without the owner's bearer token or cookie; a
// browser is shown the login page, which exchanges the token for a cookie.
func TestOwnerAuth(t *testing.T) {
	guard, err := ownerauth.New(ownerToken, ownerauth.Options{})
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
