package agent_test

import (
	"context"
	"database/sql"
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
		b.StartTimer()
		elapsed := runNoteSession(b, reg, script, calls, store)
		b.StopTimer()
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

// runNoteSession runs one scripted session through store and returns the
// turn's time (the session's creation is not counted).
func runNoteSession(b *testing.B, reg *core.Registry, script model.Script, calls int, store *timedStore) time.Duration {
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
	start := time.Now()
	r, err := a.Turn(context.Background(), core.NewUserMessage(core.NewID(), "take notes"))
	elapsed := time.Since(start)
	if err != nil || r.Kind != core.TurnCompleted {
		b.Fatalf("turn: %+v %v", r, err)
	}
	return elapsed
}

// BenchmarkDurableStep measures the loop through SQLite (synchronous=FULL)
// beside its bound, in the same run, alternating: the in-memory store's
// step plus one bare FULL commit of the step's rows — the same session's
// events, split into one transaction per model step, committed with plain
// prepared INSERTs through a connection of its own to a migrated file (no
// store: no summary, no index). 1,000 note calls a session, at 1 and 10
// calls per step. x-bound is the loop's calls/s over the bound's.
func BenchmarkDurableStep(b *testing.B) {
	const calls = 1000
	reg := core.NewRegistry(quiet)
	reg.MustRegister(tools.NewNote())
	for _, perStep := range []int{1, 10} {
		b.Run(fmt.Sprintf("calls-per-step=%d", perStep), func(b *testing.B) {
			script := noteScript(calls, perStep)
			steps := len(script.Steps)
			var memT, sqlT, rawT time.Duration
			var rows int
			for range b.N {
				mem := newMemStore()
				memT += runNoteSession(b, reg, script, calls, &timedStore{inner: mem})
				dir := b.TempDir()
				st, err := db.Open(context.Background(), filepath.Join(dir, "loop.db"), db.Options{Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				sqlT += runNoteSession(b, reg, script, calls, &timedStore{inner: st})
				st.Close()
				var log []core.Event
				for _, evs := range mem.events {
					log = evs
				}
				rows = len(log)
				rawT += bareCommits(b, filepath.Join(dir, "raw.db"), log, steps)
			}
			n := float64(b.N)
			memStep := memT.Seconds() / n / float64(steps)
			commit := rawT.Seconds() / n / float64(steps)
			bound := float64(calls) / (float64(steps) * (memStep + commit))
			loop := float64(calls) * n / sqlT.Seconds()
			b.ReportMetric(loop, "calls/s")
			b.ReportMetric(bound, "bound-calls/s")
			b.ReportMetric(loop/bound, "x-bound")
			b.ReportMetric(float64(calls)*n/memT.Seconds(), "mem-calls/s")
			b.ReportMetric(memStep*1000, "mem-step-ms")
			b.ReportMetric(commit*1000, "bare-commit-ms")
			b.ReportMetric(float64(rows)/float64(steps), "rows/step")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// bareCommits commits log's events in steps transactions of consecutive
// rows (synchronous=FULL, plain prepared INSERTs) into a fresh migrated
// file, and returns the time of the commits.
func bareCommits(b *testing.B, path string, log []core.Event, steps int) time.Duration {
	ctx := context.Background()
	st, err := db.Open(ctx, path, db.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	if err := st.CreateSession(ctx, core.SessionHeader{ID: "raw", Cwd: "/work"}); err != nil {
		b.Fatal(err)
	}
	st.Close()
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	ins, err := raw.Prepare(`INSERT INTO events (session_id, seq, type, time, data, ignorable) VALUES (?, ?, ?, ?, ?, 0)`)
	if err != nil {
		b.Fatal(err)
	}
	defer ins.Close()
	start := time.Now()
	for k := 0; k < steps; k++ {
		tx, err := raw.Begin()
		if err != nil {
			b.Fatal(err)
		}
		s := tx.Stmt(ins)
		for _, e := range log[k*len(log)/steps : (k+1)*len(log)/steps] {
			if _, err := s.Exec("raw", e.Seq, e.Type, e.Time, string(e.Data)); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
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
