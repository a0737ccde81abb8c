package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"prism/backend"
	"prism/backend/attend"
	"prism/core"
	"prism/core/attention"
	"prism/core/coretest"
	"prism/core/redact"
	"prism/core/share"
	"prism/web"
)

// TestBrowser_AttentionPendingRule: a scripted session whose call outlasts
// a short pending rule is marked in a real browser — the list's badge and
// attention filter, the session page's outlined card with the reason —
// /api/attention lists it, an httptest receiver gets exactly one correctly
// signed POST, a reload (a reconnect) and a replay of the events fire
// nothing again, and a share link shows no attention.
func TestBrowser_AttentionPendingRule(t *testing.T) {
	var mu sync.Mutex
	var posts [][2]string // body, signature
	got := make(chan struct{}, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, [2]string{string(b), r.Header.Get("X-Prism-Signature")})
		mu.Unlock()
		got <- struct{}{}
	}))
	defer rcv.Close()
	rules, err := attention.Parse("rules.toml", []byte(`[[rule]]
name = "stuck"
when = "pending"
for = "2m"
actions = ["webhook"]
[webhook]
url = "`+rcv.URL+`"
secret = "shh"
`), attention.Options{})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(1_800_000_000, 0)
	var svc *attend.Service
	seen := make(chan int64, 100)
	e := newEnv(t, func(d *web.Deps) {
		withNotes(d)
		d.Shares = d.Sessions.(backend.Source).Store.(web.ShareStore)
		r, err := redact.New()
		if err != nil {
			t.Fatal(err)
		}
		d.Redactor = r
		st := d.Sessions.(backend.Source).Store.(attend.Store)
		svc = attend.New(attend.Options{Store: st, Rules: rules, Every: -1, Now: func() time.Time { return clock }})
		d.Attention = svc
		feed := d.Commits.(*backend.Feed)
		feed.OnCommit(func(id string, events []core.Event) {
			svc.Observe(id, events)
			if len(events) > 0 {
				seen <- events[len(events)-1].Seq
			}
		})
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	// Run's start (its reconcile of the stored sessions) is over before
	// the session is made: the call is timed from its commit.
	if err := svc.Sync(ctx); err != nil {
		t.Fatal(err)
	}

	// The events are stamped with the service's clock: the service may
	// first hear of the session by its create (no events) and read the
	// call from the store — timed from its event then, not its commit —
	// when its append landed before that read.
	b := coretest.NewBuilder(clock.UnixMilli())
	b.TurnStart().StepStart().User("hi").Call("c1", "note", `{"title":"x"}`)
	e.session(t, "s", b.Events)
	for s := range seen {
		if s == b.Events[len(b.Events)-1].Seq {
			break
		}
	}
	svc.Tick(clock.Add(2 * time.Minute))
	if err := svc.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	<-got

	// /api/attention lists it.
	resp, err := http.Get(e.ts.URL + "/api/attention")
	if err != nil {
		t.Fatal(err)
	}
	var open []struct{ ID, Session, CallID, Rule, Reason string }
	if err := json.NewDecoder(resp.Body).Decode(&open); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(open) != 1 || open[0].Session != "s" || open[0].CallID != "c1" || open[0].Rule != "stuck" || open[0].Reason != "note pending for 2m0s" {
		t.Fatalf("/api/attention = %+v", open)
	}

	br := newBrowser(t, 1280, 900)
	br.do(t, chromedp.Navigate(e.ts.URL+"/"), chromedp.WaitReady(chromedp.CSS(`[data-testid="attention-badge"]`)))
	if s := evalIn[string](t, br, `document.querySelector('[data-testid="attention-badge"]').textContent`); !strings.Contains(s, "stuck: note pending for 2m0s") {
		t.Errorf("badge = %q", s)
	}
	if n := evalIn[string](t, br, `document.querySelector('[data-testid="attention-count"]').textContent`); n != "1" {
		t.Errorf("attention filter count = %q", n)
	}
	br.do(t, chromedp.Navigate(e.ts.URL+"/?attention=1"), chromedp.WaitReady(chromedp.CSS(`[data-testid="session-row"]`)))
	if n := evalIn[int](t, br, `document.querySelectorAll('[data-testid="session-row"]').length`); n != 1 {
		t.Errorf("the attention filter shows %d rows, want 1", n)
	}
	br.do(t, chromedp.Navigate(e.ts.URL+"/sessions/s"), chromedp.WaitReady(chromedp.CSS(`article.attn[data-call-id="c1"] [data-testid="attention-reason"]`)))
	if s := evalIn[string](t, br, `getComputedStyle(document.querySelector('article.attn')).outlineStyle`); s != "solid" {
		t.Errorf("the card's outline is %q, want solid", s)
	}
	// A reconnect (a reload) and a replay of the events fire nothing.
	br.do(t, chromedp.Reload(), chromedp.WaitReady(chromedp.CSS(`article.attn`)))
	svc.Observe("s", b.Events)
	svc.Tick(clock.Add(time.Hour))
	if err := svc.Sync(ctx); err != nil {
		t.Fatal(err)
	}

	// A share link of the session shows no attention.
	_, token, err := e.store.CreateShare(ctx, share.Spec{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(e.ts.URL + "/s/" + token)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(string(page), "attention") || strings.Contains(string(page), "stuck") {
		t.Errorf("the share page (status %d) shows the attention", resp.StatusCode)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(posts) != 1 {
		t.Fatalf("%d webhook POSTs, want exactly 1", len(posts))
	}
	if posts[0][1] != attend.Sign("shh", []byte(posts[0][0])) || !strings.Contains(posts[0][0], `"callId":"c1"`) {
		t.Errorf("POST %s signed %s", posts[0][0], posts[0][1])
	}
}
