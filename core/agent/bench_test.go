package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"prism/core"
	"prism/core/agent"
	"prism/core/model"
	"prism/core/tools"
	"prism/db"
)

// timedStore measures the time spent inside a store.
type timedStore struct {
	inner   core.EventStore
	nanos   atomic.Int64
	batches atomic.Int64
	events  atomic.Int64
}

func (s *timedStore) CreateSession(ctx context.Context, h core.SessionHeader) error {
	start := time.Now()
	defer func() { s.nanos.Add(int64(time.Since(start))) }()
	return s.inner.CreateSession(ctx, h)
}

func (s *timedStore) AppendEvents(ctx context.Context, id string, evs []core.Event) error {
	start := time.Now()
	defer func() { s.nanos.Add(int64(time.Since(start))) }()
	s.batches.Add(1)
	s.events.Add(int64(len(evs)))
	return s.inner.AppendEvents(ctx, id, evs)
}

// AppendChecked forwards to the inner store's, if it has one (a session
// then hands it what it knows of the events), timing it the same way.
func (s *timedStore) AppendChecked(ctx context.Context, id string, evs []core.Event, facts []*core.EventFacts) error {
	cs, ok := s.inner.(core.CheckedStore)
	if !ok {
		return s.AppendEvents(ctx, id, evs)
	}
	start := time.Now()
	defer func() { s.nanos.Add(int64(time.Since(start))) }()
	s.batches.Add(1)
	s.events.Add(int64(len(evs)))
	return cs.AppendChecked(ctx, id, evs, facts)
}

// noteScript is a session of calls note calls, perStep per model step,
// then a closing text.
func noteScript(calls, perStep int) model.Script {
	var steps []model.Step
	for n := 0; n < calls; {
		var st model.Step
		for i := 0; i < perStep && n < calls; i++ {
			st.Calls = append(st.Calls, model.ScriptCall{Name: "note", Arguments: fmt.Sprintf(`{"title":"note %d"}`, n)})
			n++
		}
		steps = append(steps, st)
	}
	return model.Script{Steps: append(steps, model.Step{Text: "All notes taken."})}
}

// benchmarkNoteSession runs one scripted session of 1,000 note calls per
// iteration, end to end: scripted model, loop, scheduler, pipeline and the
// store newStore returns (a fresh one per iteration, created outside the
// timer). It reports calls/s and the share of time spent inside the store.
// It takes the store as a constructor so a SQLite store can be measured
// the same way (see BenchmarkNoteSession). storage-% is the time spent
// inside the store's AppendEvents over the session's time: since appends
// no longer wait for commits, part of it overlaps the loop. events/commit
// is the events per AppendEvents call (one transaction each).
func benchmarkNoteSession(b *testing.B, perStep int, newStore func(testing.TB) core.EventStore) {
	const calls = 1000
	reg := core.NewRegistry(quiet)
	reg.MustRegister(tools.NewNote())
	script := noteScript(calls, perStep)
	var storeNanos, total time.Duration
	var events, batches int64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		store := &timedStore{inner: newStore(b)}
		sess, err := core.NewSession(context.Background(), core.SessionHeader{Cwd: b.TempDir()},
			core.SessionOptions{Store: store, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		a, err := agent.New(agent.Config{
			Session: sess, Tools: reg, Logger: quiet, MaxSteps: calls + 1,
			Model: model.NewScripted(model.ScriptedConfig{Script: script}),
		})
		if err != nil {
			b.Fatal(err)
		}
		store.nanos.Store(0)
		b.StartTimer()
		start := time.Now()
		r, err := a.Turn(context.Background(), core.NewUserMessage(core.NewID(), "take notes"))
		elapsed := time.Since(start)
		b.StopTimer()
		if err != nil || r.Kind != core.TurnCompleted {
			b.Fatalf("turn: %+v %v", r, err)
		}
		total += elapsed
		storeNanos += time.Duration(store.nanos.Load())
		events += store.events.Load()
		batches += store.batches.Load()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(calls*b.N)/total.Seconds(), "calls/s")
	b.ReportMetric(100*storeNanos.Seconds()/total.Seconds(), "storage-%")
	b.ReportMetric(float64(events)/float64(b.N), "events/session")
	b.ReportMetric(float64(events)/float64(batches), "events/commit")
}

// BenchmarkNoteSession: 1,000 note calls per session, with 1, 10 or 1,000
// calls per model step, through the in-memory store and through a real
// SQLite file (synchronous=FULL, group commit; and NORMAL, to tell the
// fsync's share).
func BenchmarkNoteSession(b *testing.B) {
	mem := func(testing.TB) core.EventStore { return newMemStore() }
	open := func(tb testing.TB, o db.Options) core.EventStore {
		o.Logger = quiet
		st, err := db.Open(context.Background(), filepath.Join(tb.TempDir(), "bench.db"), o)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { st.Close() })
		return st
	}
	sqlite := func(tb testing.TB) core.EventStore { return open(tb, db.Options{}) }
	// sqlite-normal is the same store at synchronous=NORMAL (a commit does
	// not wait for its fsync): not what prism promises, but beside FULL it
	// splits a durable commit's time into its fsync and the rest.
	sqliteNormal := func(tb testing.TB) core.EventStore { return open(tb, db.Options{SyncNormal: true}) }
	for _, store := range []struct {
		name string
		new  func(testing.TB) core.EventStore
	}{{"mem", mem}, {"sqlite", sqlite}, {"sqlite-normal", sqliteNormal}} {
		for _, perStep := range []int{1, 10, 1000} {
			b.Run(fmt.Sprintf("store=%s/calls-per-step=%d", store.name, perStep), func(b *testing.B) {
				benchmarkNoteSession(b, perStep, store.new)
			})
		}
	}
}
