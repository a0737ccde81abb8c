package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"prism/backend"
	"prism/backend/attend"
	"prism/core"
	"prism/core/attention"
	"prism/web"
)

// TestAttentionBudgetCancelEndsTheTurn: on the real stack (SQLite, the
// agent runner on a scripted model, the commit feed), a budget rule with
// cancel ends the running turn, its turn/end naming the rule as dsh's
// hook cause, and leaves its firing as a note.
func TestAttentionBudgetCancelEndsTheTurn(t *testing.T) {
	rules, err := attention.Parse("rules.toml", []byte("[[rule]]\nname = \"spend\"\nwhen = \"budget\"\ntokens = 1\nactions = [\"cancel\"]\n"), attention.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan core.TurnEnd, 1)
	var svc *attend.Service
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	g := startGateSession(t, func(d *web.Deps) {
		st := d.Sessions.(backend.Source).Store.(attend.Store)
		svc = attend.New(attend.Options{Store: st, Rules: rules, Cancel: d.Runner.(attend.Canceller), Every: -1})
		feed := d.Commits.(*backend.Feed)
		feed.OnCommit(svc.Observe)
		feed.OnCommit(func(_ string, events []core.Event) {
			for _, e := range events {
				var end core.TurnEnd
				if e.Type == core.EventTurnEnd && json.Unmarshal(e.Data, &end) == nil {
					ended <- end
				}
			}
		})
		go func() { svc.Run(ctx); close(done) }()
	})
	var end core.TurnEnd
	select {
	case end = <-ended:
	case <-time.After(30 * time.Second): // a bound on a hung stack, not a wait for an effect
		t.Fatal("the turn never ended")
	}
	if end.Reason.Kind != core.TurnAborted || end.Reason.Reason == nil || end.Reason.Reason.Kind != "hook" ||
		len(end.Reason.Reason.Reason) < len("rule spend: ") || end.Reason.Reason.Reason[:len("rule spend: ")] != "rule spend: " {
		t.Fatalf("turn/end reason = %+v %+v, want aborted {kind: hook, reason: \"rule spend: …\"}", end.Reason, end.Reason.Reason)
	}
	if err := svc.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	open, err := svc.Open(ctx)
	if err != nil || len(open) != 1 || open[0].Session != g.id {
		t.Fatalf("open firings = %+v, %v", open, err)
	}
}
