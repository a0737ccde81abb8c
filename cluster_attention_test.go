package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"prism/backend/attend"
	"prism/internal/pgtest"
)

// TestClusterAttentionOnce: two prism nodes on one PostgreSQL database
// with the same pending rule: the session A runs fires once — one signed
// POST from one node — and clears when its call completes.
func TestClusterAttentionOnce(t *testing.T) {
	var mu sync.Mutex
	var posts []string
	got := make(chan struct{}, 16)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.Header.Get("X-Prism-Signature") == attend.Sign("k", b) {
			posts = append(posts, string(b))
		}
		mu.Unlock()
		got <- struct{}{}
	}))
	defer rcv.Close()
	rules := filepath.Join(t.TempDir(), "rules.toml")
	if err := os.WriteFile(rules, []byte("[[rule]]\nname = \"stuck\"\nwhen = \"pending\"\nfor = \"1s\"\nactions = [\"webhook\"]\n[webhook]\nurl = \""+rcv.URL+"\"\nsecret = \"k\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dbURL := pgtest.DB(t)
	a := startNode(t, "A", dbURL, "--no-demo", "--rules", rules, "--demo-call-time", "4s")
	b := startNode(t, "B", dbURL, "--no-demo", "--rules", rules, "--demo-call-time", "4s")
	res, err := http.Post(a.url+"/api/sessions", "application/json", strings.NewReader(`{"prompt":"Show me around.","model":"scripted"}`))
	if err != nil {
		t.Fatal(err)
	}
	var started struct{ ID string }
	json.NewDecoder(res.Body).Decode(&started)
	res.Body.Close()
	if started.ID == "" {
		t.Fatalf("start on A: %d", res.StatusCode)
	}
	select {
	case <-got:
	case <-time.After(60 * time.Second): // a bound on a hung cluster
		t.Fatal("no webhook")
	}
	// Both nodes list the one firing while the call is pending.
	for _, n := range []*node{a, b} {
		var open []struct{ ID, Session, Rule string }
		resp, err := http.Get(n.url + "/api/attention")
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&open)
		resp.Body.Close()
		if len(open) > 1 || (len(open) == 1 && open[0].Session != started.ID) {
			t.Errorf("node %s lists %+v", n.name, open)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(posts) != 1 || !strings.Contains(posts[0], `"session":"`+started.ID+`"`) {
		t.Fatalf("signed POSTs %v, want one for %s", posts, started.ID)
	}
	if strings.Contains(b.logText(), "attention rule fired") {
		t.Errorf("node B raised a firing of a session A runs:\n%s", b.logText())
	}
}
