package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"prism/backend"
	"prism/core"
	"prism/core/agent"
	"prism/core/approval"
	"prism/internal/pgcluster"
	"prism/pgstore"
	"prism/web"
)

// TestApprovalDuringOutage: on PostgreSQL, a call waits for approval when
// the database crashes. A decision posted during the outage is refused
// with 503, a Retry-After and prism's JSON error saying the store is
// unreachable (not its address): it is not in the log, so it is not
// acknowledged. The call still waits — the approval is listed — and once
// PostgreSQL is back the same decision is taken (200), committed once,
// and the call runs to its result.
func TestApprovalDuringOutage(t *testing.T) {
	ctx := t.Context()
	pg, err := pgcluster.Start(ctx, pgcluster.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop() })
	url, err := pg.CreateDatabase(ctx, "approval_outage")
	if err != nil {
		t.Fatal(err)
	}
	log := quietLog()
	feed := &backend.Feed{}
	store, err := pgstore.Open(ctx, url, pgstore.Options{Logger: log, Committed: feed.Publish})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	reg, err := backend.Presenters(log)
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	reg.MustRegister(gateTool(gate))
	rules, err := approval.ParseTools("gate")
	if err != nil {
		t.Fatal(err)
	}
	reg.UsePreExecute(rules.Hook())
	runner, err := agent.NewRunner(agent.RunnerConfig{Store: store, Tools: reg, Models: gateModels{}, WorkspaceRoot: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close() })
	svc, err := approval.NewService(approval.Config{Sessions: runner, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	reg.SetApprover(svc)
	srv := web.New(web.Deps{Sessions: backend.Source{Store: store}, Commits: feed, Runner: backend.AgentRunner{Runner: runner},
		Presenter: reg, Approvals: svc, Logger: log})
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	asked := make(chan core.Event, 1)
	results := make(chan core.Event, 4)
	t.Cleanup(feed.OnCommit(func(_ string, events []core.Event) {
		for _, e := range events {
			switch e.Type {
			case core.EventApprovalAsked:
				asked <- e
			case core.EventToolResult:
				results <- e
			}
		}
	}))
	id, err := runner.Start(ctx, agent.StartRequest{Prompt: "Open the north gate."})
	if err != nil {
		t.Fatal(err)
	}
	var a core.ApprovalAsked
	select {
	case e := <-asked:
		if err := json.Unmarshal(e.Data, &a); err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the gate call never asked for approval")
	}
	decide := func() (int, string, string) {
		t.Helper()
		res, err := http.Post(ts.URL+"/api/sessions/"+id+"/approvals/"+a.ID, "application/json", strings.NewReader(`{"decision":"approve"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Retry-After"), string(body)
	}

	// The event reaches the feed once PostgreSQL committed it, which may be
	// before the committing connection has its answer; crashing then would
	// leave that commit's outcome unknown to the session, which fails (and
	// is repaired as interrupted). The approval is listed once its commit
	// was answered: crash only then.
	listed := time.NewTicker(time.Millisecond)
	defer listed.Stop()
	for deadline := time.Now().Add(30 * time.Second); ; <-listed.C {
		if p := svc.Pending(); len(p) == 1 && p[0].ID == a.ID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("approval %s was never listed as waiting", a.ID)
		}
	}
	pg.Crash()
	code, retry, body := decide()
	if code != http.StatusServiceUnavailable || retry == "" || !strings.Contains(body, "unreachable") ||
		!strings.Contains(body, `"code":"`+core.CodeUnavailable+`"`) || strings.Contains(body, "127.0.0.1") {
		t.Fatalf("decision during the outage: %d Retry-After %q %s; want 503 with Retry-After and a JSON error saying the store is unreachable (without its address)",
			code, retry, body)
	}
	if p := svc.Pending(); len(p) != 1 || p[0].ID != a.ID {
		t.Fatalf("after the refused decision the waiting approvals are %+v, want %s still waiting", p, a.ID)
	}

	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	// The pool may hand out a connection the crash broke: the first
	// decision after the restart may still be refused; it is taken within
	// a few tries, never twice.
	deadline := time.Now().Add(30 * time.Second)
	for code, _, body = decide(); code == http.StatusServiceUnavailable && time.Now().Before(deadline); code, _, body = decide() {
		t.Logf("decision right after the restart: %d %s", code, body)
	}
	if code != http.StatusOK {
		t.Fatalf("decision once PostgreSQL is back: %d %s, want 200", code, body)
	}
	release()
	select {
	case e := <-results:
		if !strings.Contains(string(e.Data), "opened north") {
			t.Errorf("the approved call's result: %s", e.Data)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the approved call never completed")
	}
	events, err := store.EventsAfter(ctx, id, -1)
	if err != nil {
		t.Fatal(err)
	}
	decided := 0
	for _, e := range events {
		if e.Type == core.EventApprovalDecided {
			decided++
			if !strings.Contains(string(e.Data), string(core.ApprovalAllowedOnce)) {
				t.Errorf("the decision in the log: %s", e.Data)
			}
		}
	}
	if decided != 1 {
		t.Errorf("%d approval/decided in the log, want 1", decided)
	}
}
