package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"prism/backend"
	"prism/core"
	"prism/web"
)

// hostStatus sends GET path to base with the given Host header.
func hostStatus(t *testing.T, base, host, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Host = host
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestHost_LoopbackServerRefusesOtherHosts: a server on a loopback address
// answers only loopback Host names (any port) and the allowed hosts; a
// DNS-rebound name gets 403 with the reason.
func TestHost_LoopbackServerRefusesOtherHosts(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) { d.AllowedHosts = []string{"Prism.Example", "proxy.example:8443"} })
	e.session(t, "s1", nil)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.ts.URL, "http://"))
	for host, want := range map[string]int{
		"evil.example":            403,
		"evil.example:" + port:    403,
		"localhost.evil.example":  403,
		"127.0.0.1.evil.example":  403,
		"proxy.example":           403,
		"proxy.example:80":        403,
		"localhost:" + port:       200,
		"LOCALHOST":               200,
		"127.0.0.1:" + port:       200,
		"[::1]:" + port:           200,
		"prism.example":           200,
		"prism.example:" + port:   200,
		"proxy.example:8443":      200,
		"127.0.0.1:" + port + "0": 200, // the port does not matter
		"[::1]":                   200,
	} {
		for _, path := range []string{"/", "/sessions/s1", "/api/sessions", "/healthz"} {
			got, body := hostStatus(t, e.ts.URL, host, path)
			if got != want {
				t.Errorf("Host %q, GET %s = %d, want %d", host, path, got, want)
			}
			if want == 403 && !strings.Contains(body, "DNS rebinding") {
				t.Errorf("Host %q: refusal does not say why: %s", host, body)
			}
		}
	}
}

// TestHost_ServeAdaptsToItsListener: Serve on loopback refuses a foreign
// Host; on an unspecified address it answers any Host unless AllowedHosts
// restricts it.
func TestHost_ServeAdaptsToItsListener(t *testing.T) {
	for _, tc := range []struct {
		name, listen string
		allowed      []string
		evil         int
	}{
		{"loopback", "127.0.0.1:0", nil, 403},
		{"unspecified", "0.0.0.0:0", nil, 200},
		{"unspecified, allowed hosts", "0.0.0.0:0", []string{"prism.example"}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := openStore(t)
			if err := st.CreateSession(context.Background(), core.SessionHeader{ID: "s1", CreatedAt: t0}); err != nil {
				t.Fatal(err)
			}
			srv := web.New(web.Deps{Sessions: backend.Source{Store: st}, Presenter: presenters(t), AllowedHosts: tc.allowed})
			defer srv.Close()
			ln, err := net.Listen("tcp", tc.listen)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ctx, ln) }()
			defer func() {
				cancel()
				select {
				case <-served:
				case <-time.After(10 * time.Second):
					t.Error("Serve did not return")
				}
			}()
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			base := "http://127.0.0.1:" + port
			if got, _ := hostStatus(t, base, "evil.example", "/sessions/s1"); got != tc.evil {
				t.Errorf("Host evil.example = %d, want %d", got, tc.evil)
			}
			if got, _ := hostStatus(t, base, "localhost:"+port, "/sessions/s1"); got != 200 {
				t.Errorf("Host localhost = %d, want 200", got)
			}
			if tc.allowed != nil {
				if got, _ := hostStatus(t, base, "prism.example", "/sessions/s1"); got != 200 {
					t.Errorf("allowed Host = %d, want 200", got)
				}
			}
		})
	}
}

// TestCrossOrigin_SecFetchSite: net/http's CrossOriginProtection decides
// on a state-changing request by Sec-Fetch-Site when the browser sends it
// (same-origin and none pass whatever the Origin; any other value is
// refused, an unknown one too) and else by Origin against Host; a request
// with neither is a non-browser client and passes. A refusal is prism's
// JSON error: 403 FORBIDDEN with the reason.
func TestCrossOrigin_SecFetchSite(t *testing.T) {
	e, _ := shareEnv(t, nil)
	e.session(t, "s1", twoCallSession())
	host := strings.TrimPrefix(e.base(), "http://")
	// The page's form answers 303 to the session page (post/redirect/get).
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		hdr  []string
		want int
		msg  string
	}{
		{nil, http.StatusSeeOther, ""},
		{[]string{"Sec-Fetch-Site", "same-origin", "Origin", "https://evil.example"}, http.StatusSeeOther, ""},
		{[]string{"Sec-Fetch-Site", "none", "Origin", "https://evil.example"}, http.StatusSeeOther, ""}, // the user acted, not a page
		{[]string{"Origin", "http://" + host}, http.StatusSeeOther, ""},
		{[]string{"Sec-Fetch-Site", "cross-site", "Origin", "http://" + host}, http.StatusForbidden, "cross-site request refused"},
		{[]string{"Sec-Fetch-Site", "same-site"}, http.StatusForbidden, "cross-site request refused"},
		{[]string{"Sec-Fetch-Site", "bogus"}, http.StatusForbidden, "cross-site request refused"},
		{[]string{"Origin", "https://evil.example"}, http.StatusForbidden, "cross-origin request refused"},
		{[]string{"Origin", "http://" + host + ".evil.example"}, http.StatusForbidden, "cross-origin request refused"},
	} {
		req, _ := http.NewRequest(http.MethodPost, e.base()+"/sessions/s1/shares", strings.NewReader("scope=live&redact=1"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(tc.hdr); i += 2 {
			req.Header.Set(tc.hdr[i], tc.hdr[i+1])
		}
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var answer struct{ Error, Code string }
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("POST with %v: %d %s, want %d", tc.hdr, res.StatusCode, body, tc.want)
			continue
		}
		if tc.want != http.StatusForbidden {
			continue
		}
		if err := json.Unmarshal(body, &answer); err != nil || answer.Code != core.CodeForbidden || answer.Error != tc.msg {
			t.Errorf("POST with %v: refusal %s (%v), want {%q, %q}", tc.hdr, body, err, tc.msg, core.CodeForbidden)
		}
	}
}
