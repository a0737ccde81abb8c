package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/core/agent"
	"prism/core/agent/agenttest"
	"prism/core/notes"
	"prism/core/tools"
	"prism/db"
	"prism/store"
)

// seedFailing is a real SQLite store whose fork seed write fails while
// failSeed is set: the seed it hands on has a seq gap, which the store
// refuses after it wrote the fork's row in the same transaction.
type seedFailing struct {
	*db.Store
	failSeed bool
}

func (s *seedFailing) CreateFork(ctx context.Context, h core.SessionHeader, seed []core.Event, note notes.Input) error {
	if s.failSeed {
		seed = append([]core.Event(nil), seed...)
		seed[len(seed)-1].Seq += 5
	}
	return s.Store.CreateFork(ctx, h, seed, note)
}

// TestFork_seedFailureLeavesNothing: a fork is all or nothing. When the
// seed write fails after the session row is written, no session, no fork
// note on the source, no registered session and no workspace are left,
// and the error names the seed and the fork; the same fork then succeeds
// whole on the same store.
func TestFork_seedFailureLeavesNothing(t *testing.T) {
	ctx := t.Context()
	st, err := db.Open(ctx, filepath.Join(t.TempDir(), "fork.db"), db.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h, events := agenttest.DemoLog(t, 1767225600000)
	h.ID = "demo"
	if err := st.CreateSession(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "demo", events); err != nil {
		t.Fatal(err)
	}
	builtins, err := tools.Builtins(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(quiet)
	reg.MustRegister(builtins...)
	wrapped := &seedFailing{Store: st, failSeed: true}
	root := t.TempDir()
	r, err := agent.NewRunner(agent.RunnerConfig{Store: wrapped, Tools: reg, Models: demoModels{}, WorkspaceRoot: root, Logger: quiet,
		Load: func(ctx context.Context, id string) (core.SessionHeader, []core.Event, error) {
			l, err := st.LoadSession(ctx, id)
			if err != nil {
				return core.SessionHeader{}, nil, err
			}
			return l.Info.Header, l.Events, nil
		},
		PutNote: func(ctx context.Context, in notes.Input) error {
			_, err := st.PutNote(ctx, in)
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })

	_, err = r.Fork(ctx, agent.ForkRequest{Source: "demo", ID: "f1", Boundary: at(1)})
	if err == nil || !strings.Contains(err.Error(), "fork session demo into f1") || !strings.Contains(err.Error(), "write the seed of fork f1") {
		t.Fatalf("Fork with a failing seed write = %v; want an error naming the fork and its seed", err)
	}
	if _, err := st.Session(ctx, "f1"); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("the failed fork's session: err = %v, want %s (nothing left behind)", err, core.CodeNotFound)
	}
	page, err := st.ListSessions(ctx, store.ListOptions{})
	if err != nil || len(page.Sessions) != 1 {
		t.Errorf("sessions after the failed fork = %+v, %v; want only the source", page.Sessions, err)
	}
	if ns, err := st.Notes(ctx, "demo", notes.Query{Kind: notes.KindFork}); err != nil || len(ns) != 0 {
		t.Errorf("the source's fork notes after the failed fork = %+v, %v; want none", ns, err)
	}
	if _, err := r.Status("f1"); err == nil {
		t.Error("the runner registered the failed fork")
	}
	if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
		t.Errorf("workspaces after the failed fork = %v, %v; want none", entries, err)
	}

	wrapped.failSeed = false
	if _, err := r.Fork(ctx, agent.ForkRequest{Source: "demo", ID: "f1", Boundary: at(1)}); err != nil {
		t.Fatalf("the same fork on a working store = %v", err)
	}
	l, err := st.LoadSession(ctx, "f1")
	if err != nil {
		t.Fatal(err)
	}
	if l.Info.Header.ParentSession != "demo" || l.Info.Header.SeedLength == nil || l.Events[*l.Info.Header.SeedLength].Type != core.EventSessionEndSeed {
		t.Fatalf("the fork's header = %+v; want a fork of demo whose seed ends with %s", l.Info.Header, core.EventSessionEndSeed)
	}
	if want := "fork of “Show me around this workspace: its files, loose ends, a small fix, and failures.” at turn 1"; l.Info.Summary.Title != want {
		t.Errorf("the fork's title = %q, want %q", l.Info.Summary.Title, want)
	}
	if ns, err := st.Notes(ctx, "demo", notes.Query{Kind: notes.KindFork}); err != nil || len(ns) != 1 || !strings.Contains(string(ns[0].Data), `"f1"`) {
		t.Errorf("the source's fork notes = %+v, %v; want one naming f1", ns, err)
	}
}
