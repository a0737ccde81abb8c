package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"prism/core"
	"prism/core/agent"
	"prism/core/coretest"
	"prism/core/model"
	"prism/db"
)

// oneTextModel serves a scripted model that answers with one text.
type oneTextModel struct{}

func (oneTextModel) New(string) (model.Model, error) {
	return model.NewScripted(model.ScriptedConfig{Script: model.Script{Steps: []model.Step{{Text: "done"}}}}), nil
}

func (oneTextModel) Default() string { return "one-text" }

// BenchmarkFork10k: forking a stored 10,000-event session at its last turn
// with a prompt (agent.Runner.Fork: read the source, validate and write the
// seed, open the fork, commit its first new events — the prompt's turn/start,
// step/start and user/message) against reading and decoding the source's
// events from the same SQLite file (LoadSession), in the same run.
func BenchmarkFork10k(b *testing.B) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	st, err := db.Open(ctx, filepath.Join(b.TempDir(), "prism.db"), db.Options{Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	bl := coretest.NewBuilder(1_767_225_600_000)
	turns := 0
	for len(bl.Events) < 10_000-12 {
		id := "c" + string(rune('a'+turns%26)) + string(rune('a'+turns/26%26)) + string(rune('a'+turns/676%26))
		bl.TurnStart().StepStart().User("go on").Assistant("reading", [3]string{id, "read", `{"file_path":"a.go"}`}).
			Call(id, "read", `{"file_path":"a.go"}`).Result(id, "package a", false, nil, nil).StepEnd()
		bl.StepStart().Assistant("done").StepEnd().TurnEnd(core.TurnCompleted)
		turns++
	}
	if err := st.CreateSession(ctx, core.SessionHeader{ID: "src", CreatedAt: 1_767_225_600_000}); err != nil {
		b.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "src", bl.Events); err != nil {
		b.Fatal(err)
	}
	b.Logf("source: %d events, %d turns", len(bl.Events), turns)
	load, put := forkSources(st)

	b.Run("read-source", func(b *testing.B) {
		for b.Loop() {
			l, err := st.LoadSession(ctx, "src")
			if err != nil || len(l.Events) != len(bl.Events) {
				b.Fatal(len(l.Events), err)
			}
		}
	})
	b.Run("fork-to-first-new-event", func(b *testing.B) {
		var mu sync.Mutex
		ended := map[string]chan struct{}{}
		r, err := agent.NewRunner(agent.RunnerConfig{Store: st, Tools: core.NewRegistry(log), Models: oneTextModel{},
			WorkspaceRoot: b.TempDir(), Logger: log, Load: load, PutNote: put,
			OnEvent: func(id string, e core.Event) {
				if e.Type == core.EventTurnEnd {
					mu.Lock()
					close(ended[id])
					mu.Unlock()
				}
			}})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		at := turns
		for b.Loop() {
			id := core.NewID()
			done := make(chan struct{})
			mu.Lock()
			ended[id] = done
			mu.Unlock()
			if _, err := r.Fork(ctx, agent.ForkRequest{Source: "src", ID: id, Boundary: core.ForkBoundary{AtTurn: &at}, Prompt: "and now?"}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			<-done // the rest of the turn is not what is measured
			b.StartTimer()
		}
	})
}
