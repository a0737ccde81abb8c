package attend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"prism/backend"
	"prism/backend/attend"
	"prism/core"
	"prism/core/attention"
	"prism/core/coretest"
	"prism/core/notes"
	"prism/db"
	"prism/store/storetest"
)

// receiver is an httptest webhook receiver that records each POST.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	posts  []post
	got    chan post
	status int
}

type post struct {
	body    []byte
	sig, id string
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{got: make(chan post, 100), status: status}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		p := post{body: b, sig: req.Header.Get("X-Prism-Signature"), id: req.Header.Get("X-Prism-Delivery")}
		r.mu.Lock()
		r.posts = append(r.posts, p)
		r.mu.Unlock()
		w.WriteHeader(r.status)
		r.got <- p
	}))
	t.Cleanup(r.srv.Close)
	return r
}

type fixture struct {
	st   *db.Store
	feed *backend.Feed
	svc  *attend.Service
	now  time.Time
	mu   sync.Mutex
	stop func()
	seen chan int64 // the last seq of each commit the service was fed
}

// append appends events to session id and waits until the service has
// evaluated them.
func (f *fixture) append(t *testing.T, id string, events []core.Event) {
	t.Helper()
	if err := f.st.AppendEvents(context.Background(), id, events); err != nil {
		t.Fatal(err)
	}
	f.waitSeq(t, events[len(events)-1].Seq)
}

// waitSeq waits until the feed gave the service a commit up to seq, then
// until the service evaluated it.
func (f *fixture) waitSeq(t *testing.T, seq int64) {
	t.Helper()
	for s := range f.seen {
		if s >= seq {
			break
		}
	}
	if err := f.svc.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// tick advances the fake clock by d and waits until the service has
// evaluated the tick.
func (f *fixture) tick(t *testing.T, d time.Duration) {
	t.Helper()
	f.mu.Lock()
	f.now = f.now.Add(d)
	now := f.now
	f.mu.Unlock()
	f.svc.Tick(now)
	if err := f.svc.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func parse(t *testing.T, text string) *attention.Rules {
	t.Helper()
	rs, err := attention.Parse("rules.toml", []byte(text), attention.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// start runs a service over st (a fresh one when nil) with rules.
func start(t *testing.T, st *db.Store, feed *backend.Feed, rules *attention.Rules, cancel attend.Canceller) *fixture {
	t.Helper()
	if st == nil {
		feed = &backend.Feed{}
		var err error
		st, err = db.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), db.Options{Committed: feed.Publish, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
	}
	f := &fixture{st: st, feed: feed, now: time.Unix(1_800_000_000, 0)}
	f.svc = attend.New(attend.Options{Log: slog.New(slog.NewTextHandler(testWriter{t}, nil)), Store: st, Rules: rules, Cancel: cancel, Now: f.clock, Every: -1,
		SessionURL: func(id string) string { return "http://prism.test/sessions/" + id },
		Hooks:      attend.HookOptions{Backoff: time.Millisecond}})
	f.seen = make(chan int64, 1000)
	rm1 := feed.OnCommit(func(id string, events []core.Event) {
		f.svc.Observe(id, events)
		if len(events) > 0 {
			f.seen <- events[len(events)-1].Seq
		}
	})
	rm2 := feed.OnReplace(f.svc.Replaced)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.svc.Run(ctx); close(done) }()
	f.stop = func() { rm1(); rm2(); stop(); <-done }
	t.Cleanup(f.stop)
	// Run's start (its reconcile of the stored sessions) is over before
	// the test appends: what it appends is timed from its commit.
	if err := f.svc.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPendingRuleFiresOnceWithASignedWebhook(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	rules := parse(t, `[[rule]]
name = "stuck"
when = "pending"
for = "2m"
tools = ["bash"]
actions = ["badge", "webhook"]
[webhook]
url = "`+rcv.srv.URL+`/hook"
secret = "s3cret"
`)
	f := start(t, nil, nil, rules, nil)
	ctx := context.Background()
	storetest.MustCreate(t, f.st, "s1")
	b := coretest.NewBuilder(0).TurnStart().StepStart().Call("c1", "bash", `{"command":"sleep 600"}`)
	f.append(t, "s1", b.Events)
	f.tick(t, time.Minute)
	if open, _ := f.svc.Open(ctx); len(open) != 0 {
		t.Fatalf("fired before its time: %+v", open)
	}
	f.tick(t, time.Minute)
	open, err := f.svc.Open(ctx)
	if err != nil || len(open) != 1 {
		t.Fatalf("Open = %+v, %v; want one firing", open, err)
	}
	n := open[0]
	if n.Session != "s1" || n.CallID != "c1" || n.AtSeq != 2 || n.Kind != notes.KindAttention || !strings.Contains(string(n.Data), `"bash pending for 2m0s"`) {
		t.Fatalf("firing = %+v (%s)", n, n.Data)
	}
	p := <-rcv.got
	if p.sig != attend.Sign("s3cret", p.body) || !strings.HasPrefix(p.sig, "sha256=") || len(p.sig) != len("sha256=")+64 {
		t.Errorf("signature %q does not sign the body", p.sig)
	}
	var body attend.Payload
	if err := json.Unmarshal(p.body, &body); err != nil {
		t.Fatal(err)
	}
	want := attend.Payload{ID: n.ID, Rule: "stuck", Reason: "bash pending for 2m0s", Session: "s1", CallID: "c1", Seq: 2, URL: "http://prism.test/sessions/s1"}
	if body != want || p.id != n.ID {
		t.Errorf("payload %+v delivery %q, want %+v", body, p.id, want)
	}
	// More time, a replay of the same events (a reconnect's catch-up),
	// and a restarted service over the same database: nothing fires again.
	f.tick(t, time.Hour)
	f.svc.Observe("s1", b.Events)
	f.tick(t, time.Hour)
	f.stop()
	g := start(t, f.st, f.feed, rules, nil)
	g.svc.Observe("s1", b.Events)
	if err := g.svc.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	g.tick(t, 3*time.Hour)
	all, err := f.st.Notes(ctx, "s1", notes.Query{Kind: notes.KindAttention, Removed: true})
	if err != nil || len(all) != 1 {
		t.Fatalf("notes after replay and restart = %+v, %v; want the one firing", all, err)
	}
	// The call completes: the firing clears by itself, at the result's seq.
	n2 := len(b.Events)
	b.Result("c1", "done", false, nil, nil)
	g.append(t, "s1", b.Events[n2:])
	if open, _ := g.svc.Open(ctx); len(open) != 0 {
		t.Fatalf("still open after the call completed: %+v", open)
	}
	all, _ = f.st.Notes(ctx, "s1", notes.Query{Kind: notes.KindAttention, Removed: true})
	if len(all) != 1 || all[0].RemovedAtSeq == nil || *all[0].RemovedAtSeq != 3 {
		t.Fatalf("cleared note = %+v, want removedAtSeq 3", all)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.posts) != 1 {
		t.Fatalf("%d POSTs, want exactly one", len(rcv.posts))
	}
}

func TestAckRecordsWhoAndWhen(t *testing.T) {
	f := start(t, nil, nil, parse(t, "[[rule]]\nname = \"repeat\"\nwhen = \"loop\"\ncount = 2\n"), nil)
	ctx := context.Background()
	storetest.MustCreate(t, f.st, "s")
	b := coretest.NewBuilder(0).TurnStart().StepStart().Call("c1", "read", `{"path":"a"}`).Result("c1", "x", false, nil, nil).Call("c2", "read", `{"path":"a"}`)
	f.append(t, "s", b.Events)
	open, _ := f.svc.Open(ctx)
	if len(open) != 1 || open[0].CallID != "c2" {
		t.Fatalf("open = %+v", open)
	}
	n, err := f.svc.Ack(ctx, open[0].ID, "owner")
	if err != nil {
		t.Fatal(err)
	}
	var d notes.AttentionData
	if err := json.Unmarshal(n.Data, &d); err != nil || d.ClearedBy != "owner" || d.ClearedAt != f.clock().UnixMilli() || n.RemovedAtSeq == nil {
		t.Fatalf("acked note = %+v (%s), %v", n, n.Data, err)
	}
	if _, err := f.svc.Ack(ctx, open[0].ID, "owner"); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("a second ack: %v, want not found", err)
	}
}

// TestRuleOnAnImportedSessionKeepsItsLog: a rule watches an imported
// session through the commit feed; its firing is a note and the log is
// byte for byte what was imported.
func TestRuleOnAnImportedSessionKeepsItsLog(t *testing.T) {
	f := start(t, nil, nil, parse(t, "[[rule]]\nname = \"any-bash\"\nwhen = \"query\"\nquery = 'tool:bash'\n"), nil)
	ctx := context.Background()
	res, err := f.st.ImportFile(ctx, filepath.Join("..", "..", "testdata", "dsh", "basic", "session.jsonl"))
	if err != nil || len(res) != 1 {
		t.Fatalf("import: %v %v", res, err)
	}
	id := res[0].SessionID
	var before bytes.Buffer
	if err := f.st.Export(ctx, id, &before); err != nil {
		t.Fatal(err)
	}
	f.waitSeq(t, int64(res[0].Events-1))
	open, err := f.svc.Open(ctx)
	if err != nil || len(open) == 0 || open[0].Session != id {
		t.Fatalf("open = %+v, %v; want a firing on the imported session", open, err)
	}
	var after bytes.Buffer
	if err := f.st.Export(ctx, id, &after); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before.Bytes(), after.Bytes()) {
		t.Fatal("the imported log changed")
	}
}

type cancels struct {
	mu    sync.Mutex
	calls []core.CancelCause
	ids   []string
}

func (c *cancels) CancelWith(id string, cause core.CancelCause) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids, c.calls = append(c.ids, id), append(c.calls, cause)
	return nil
}

func TestBudgetCancelNamesTheRule(t *testing.T) {
	c := &cancels{}
	f := start(t, nil, nil, parse(t, "[[rule]]\nname = \"spend\"\nwhen = \"budget\"\ntokens = 2000\nactions = [\"cancel\"]\n"), c)
	storetest.MustCreate(t, f.st, "s")
	b := coretest.NewBuilder(0).TurnStart().StepStart().Assistant("a").Assistant("b")
	f.append(t, "s", b.Events)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.calls) != 1 || c.ids[0] != "s" || c.calls[0] != (core.CancelCause{Kind: "hook", Reason: "rule spend: 2570 tokens this session, over 2000"}) {
		t.Fatalf("cancels = %v %+v", c.ids, c.calls)
	}
}

func TestReloadKeepsOldRulesOnError(t *testing.T) {
	f := start(t, nil, nil, parse(t, "[[rule]]\nname = \"repeat\"\nwhen = \"loop\"\ncount = 2\n"), nil)
	_, err := attention.Parse("rules.toml", []byte("[[rule]]\nname = \"x\"\nwhen = \"nope\"\n"), attention.Options{})
	f.svc.Reload(nil, err)
	p := f.svc.Page()
	if len(p.Rules) != 1 || p.Rules[0].Name != "repeat" || !strings.Contains(p.LoadError, `rules.toml:3: rule x: unknown kind "nope"`) {
		t.Fatalf("page after a failed reload = %+v", p)
	}
	f.svc.Reload(parse(t, "[[rule]]\nname = \"fails\"\nwhen = \"error-streak\"\ncount = 2\n"), nil)
	if err := f.svc.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	p = f.svc.Page()
	if len(p.Rules) != 1 || p.Rules[0].Name != "fails" || p.LoadError != "" {
		t.Fatalf("page after a reload = %+v", p)
	}
}

// testWriter sends the service's log to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestRestartClearsWhatEndedMeanwhile: a firing whose call completed
// while no service watched (a shutdown, a crash repair) is cleared when
// the next service starts.
func TestRestartClearsWhatEndedMeanwhile(t *testing.T) {
	rules := parse(t, "[[rule]]\nname = \"stuck\"\nwhen = \"pending\"\nfor = \"1m\"\n")
	f := start(t, nil, nil, rules, nil)
	ctx := context.Background()
	storetest.MustCreate(t, f.st, "s")
	b := coretest.NewBuilder(0).TurnStart().StepStart().Call("c1", "bash", `{}`)
	f.append(t, "s", b.Events)
	f.tick(t, time.Minute)
	if open, _ := f.svc.Open(ctx); len(open) != 1 {
		t.Fatalf("open = %+v", open)
	}
	f.stop()
	n := len(b.Events)
	b.Result("c1", "done", false, nil, nil)
	if err := f.st.AppendEvents(ctx, "s", b.Events[n:]); err != nil {
		t.Fatal(err)
	}
	g := start(t, f.st, f.feed, rules, nil)
	if err := g.svc.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if open, _ := g.svc.Open(ctx); len(open) != 0 {
		t.Fatalf("still open after a restart: %+v", open)
	}
}

// TestTwoWatchersRaiseOnce: two services watching the same sessions (two
// nodes on one database, an imported session each node evaluates) write
// a firing once, and only its writer posts the webhook.
func TestTwoWatchersRaiseOnce(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	rules := parse(t, "[[rule]]\nname = \"repeat\"\nwhen = \"loop\"\ncount = 2\nactions = [\"webhook\"]\n[webhook]\nurl = \""+rcv.srv.URL+"\"\nsecret = \"k\"\n")
	f := start(t, nil, nil, rules, nil)
	g := start(t, f.st, f.feed, rules, nil)
	ctx := context.Background()
	storetest.MustCreate(t, f.st, "s")
	b := coretest.NewBuilder(0).TurnStart().StepStart().Call("c1", "read", `{"path":"a"}`).Result("c1", "x", false, nil, nil).Call("c2", "read", `{"path":"a"}`)
	f.append(t, "s", b.Events)
	g.waitSeq(t, b.Events[len(b.Events)-1].Seq)
	all, err := f.st.Notes(ctx, "s", notes.Query{Kind: notes.KindAttention, Removed: true})
	if err != nil || len(all) != 1 {
		t.Fatalf("notes = %+v, %v; want one firing", all, err)
	}
	p := <-rcv.got
	if p.id != all[0].ID {
		t.Errorf("delivery %q, want %q", p.id, all[0].ID)
	}
	// Only the writer ran the rule's actions: one of the two counts the
	// firing (and enqueued its webhook), the other met the conflict.
	if n := f.svc.Page().Rules[0].Fired + g.svc.Page().Rules[0].Fired; n != 1 {
		t.Fatalf("the two services count %d firings, want 1", n)
	}
}

// TestRestartTimesRunningSessionsFromTheirLogs: a server that starts over
// a store whose running sessions have a call pending and an idle spell
// for ten minutes fires the duration rules at its first tick — the timers
// are seeded from the stored logs at start (their events' own times), not
// at each session's next commit, nor counted from the restart.
func TestRestartTimesRunningSessionsFromTheirLogs(t *testing.T) {
	rules := parse(t, `[[rule]]
name = "stuck"
when = "pending"
for = "2m"
tools = ["bash"]
actions = ["badge"]

[[rule]]
name = "quiet"
when = "idle"
for = "5m"
actions = ["badge"]
`)
	feed := &backend.Feed{}
	st, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), db.Options{Committed: feed.Publish, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// The fixture's clock starts at 1,800,000,000 s: the sessions last
	// moved ten minutes before.
	tenAgo := time.Unix(1_800_000_000, 0).Add(-10 * time.Minute).UnixMilli()
	storetest.MustCreate(t, st, "s1")
	b1 := coretest.NewBuilder(tenAgo).TurnStart().StepStart().Call("c1", "bash", `{"command":"sleep 600"}`)
	if err := st.AppendEvents(context.Background(), "s1", b1.Events); err != nil {
		t.Fatal(err)
	}
	storetest.MustCreate(t, st, "s2")
	b2 := coretest.NewBuilder(tenAgo).TurnStart().StepStart().User("hello?")
	if err := st.AppendEvents(context.Background(), "s2", b2.Events); err != nil {
		t.Fatal(err)
	}

	f := start(t, st, feed, rules, nil)
	f.tick(t, time.Second)
	open, err := f.svc.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range open {
		var d notes.AttentionData
		if err := json.Unmarshal(n.Data, &d); err != nil {
			t.Fatal(err)
		}
		got[n.Session+" "+d.Rule] = d.Reason
	}
	if r := got["s1 stuck"]; !strings.HasPrefix(r, "bash pending for 10m") {
		t.Errorf("s1's pending call after the restart: %q, want fired as pending for 10m (its call's own time)", r)
	}
	if r := got["s2 quiet"]; !strings.HasPrefix(r, "no event for 10m") {
		t.Errorf("s2's idle spell after the restart: %q, want fired as idle for 10m (its last event's time)", r)
	}
}
