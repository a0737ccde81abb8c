package agent_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"prism/core"
	"prism/core/agent"
	"prism/core/model"
	"prism/core/tools"
	"prism/db"
	"prism/store"
)

// timedStore measures the time spent inside a store.
type timedStore struct {
	inner   core.EventStore
	nanos   atomic.Int64
	batches atomic.Int64
	events  atomic.Int64
	// paired, if set, commits the same rows bare right after each commit
	// the loop waits for (BenchmarkDurableStep).
	paired *pairedBare
	// bareFirst commits the paired rows bare right before the loop's
	// commit instead of after it (BenchmarkDurableStep's bare=before).
	bareFirst bool
}

func (s *timedStore) CreateSession(ctx context.Context, h core.SessionHeader) error {
	start := time.Now()
	defer func() { s.nanos.Add(int64(time.Since(start))) }()
	return s.inner.CreateSession(ctx, h)
}

func (s *timedStore) AppendEvents(ctx context.Context, id string, evs []core.Event) error {
	if s.paired != nil && s.bareFirst {
		s.paired.add(id, evs, nil)
	}
	start := time.Now()
	s.batches.Add(1)
	s.events.Add(int64(len(evs)))
	err := s.inner.AppendEvents(ctx, id, evs)
	s.nanos.Add(int64(time.Since(start)))
	if err == nil && s.paired != nil && !s.bareFirst {
		s.paired.add(id, evs, nil)
	}
	return err
}

// AppendChecked forwards to the inner store's, if it has one (a session
// then hands it what it knows of the events), timing it the same way.
func (s *timedStore) AppendChecked(ctx context.Context, id string, evs []core.Event, facts []*core.EventFacts) error {
	cs, ok := s.inner.(core.CheckedStore)
	if !ok {
		return s.AppendEvents(ctx, id, evs)
	}
	if s.paired != nil && s.bareFirst {
		s.paired.add(id, evs, facts)
	}
	start := time.Now()
	s.batches.Add(1)
	s.events.Add(int64(len(evs)))
	err := cs.AppendChecked(ctx, id, evs, facts)
	s.nanos.Add(int64(time.Since(start)))
	if err == nil && s.paired != nil && !s.bareFirst {
		s.paired.add(id, evs, facts)
	}
	return err
}

// pairedBare is the bound's commit, interleaved with the loop's: the rows
// a session commits are inserted again — every column as the store writes
// it, the session's own id and the call ids included — with plain prepared
// single-row INSERTs through a connection of its own to another migrated
// file (synchronous=FULL; no store: no summary, no index), in one
// transaction per model step — committed right after the loop's commit of
// the step's tool calls (or of its turn end) returns, while the loop waits
// for it. So the bound's fsyncs and the loop's meet the same disk at the
// same moments, and the time of the bare commits is taken out of the
// loop's, as is the harness's own bookkeeping (harness).
type pairedBare struct {
	tb      testing.TB
	db      *sql.DB
	ins     *sql.Stmt
	mu      sync.Mutex
	session string // the session whose row the file holds
	rows    [][]any
	nanos   time.Duration
	harness time.Duration
	commits int
}

// newPairedBare opens the bare commits' file at path.
func newPairedBare(tb testing.TB, path string) *pairedBare {
	ctx := context.Background()
	st, err := db.Open(ctx, path, db.Options{Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	st.Close()
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate")
	if err != nil {
		tb.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	ins, err := raw.Prepare(`INSERT INTO events (session_id, seq, type, time, data, ignorable, surface_op, source_event_seqs, call_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ins.Close()
		raw.Close()
	})
	return &pairedBare{tb: tb, db: raw, ins: ins}
}

// add takes the rows of one of the loop's commits to session id and, when
// the loop waits for that commit (its step's tool calls, its turn end),
// commits every row taken since the last bare commit.
func (p *pairedBare) add(id string, evs []core.Event, facts []*core.EventFacts) {
	enter := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if id != p.session {
		// The session's row, as the store has it before its first
		// append (the events' foreign key is off here: it is only tidy).
		if _, err := p.db.Exec(`INSERT INTO sessions (id, header, created_at, updated_at) VALUES (?, '{}', 0, 0)`, id); err != nil {
			p.tb.Fatal(err)
		}
		p.session = id
	}
	wait := false
	for i, e := range evs {
		var surface, sources, callID any
		if e.SurfaceOp != nil {
			b, _ := e.SurfaceOp.MarshalJSON()
			surface = string(b)
		}
		if e.SourceEventSeqs != nil {
			sources = store.EncodeSeqs(e.SourceEventSeqs)
		}
		if i < len(facts) && facts[i] != nil && facts[i].CallID() != "" {
			callID = facts[i].CallID()
		}
		ign := 0
		if e.Ignorable {
			ign = 1
		}
		p.rows = append(p.rows, []any{id, e.Seq, e.Type, e.Time, string(e.Data), ign, surface, sources, callID})
		wait = wait || e.Type == core.EventToolCall || e.Type == core.EventTurnEnd
	}
	if !wait {
		p.harness += time.Since(enter)
		return
	}
	defer trace.StartRegion(context.Background(), "bare-commit").End()
	start := time.Now()
	tx, err := p.db.Begin()
	if err != nil {
		p.tb.Fatal(err)
	}
	s := tx.Stmt(p.ins)
	for _, r := range p.rows {
		if _, err := s.Exec(r...); err != nil {
			p.tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		p.tb.Fatal(err)
	}
	end := time.Now()
	p.nanos += end.Sub(start)
	p.harness += start.Sub(enter)
	p.commits++
	p.rows = p.rows[:0]
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
// is the events per AppendEvents call (one transaction each). A store that
// is an io.Closer is closed after its session, outside the timer (db files
// the search index's lag then: close-allocs/call counts its allocations).
func benchmarkNoteSession(b *testing.B, perStep int, newStore func(testing.TB) core.EventStore) {
	const calls = 1000
	reg := core.NewRegistry(quiet)
	reg.MustRegister(tools.NewNote())
	script := noteScript(calls, perStep)
	var storeNanos, total time.Duration
	var events, batches int64
	var closeAllocs uint64
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
		// Close what is left (the search index's lag) outside the timer,
		// counting its allocations apart, so no store works on during the
		// next iteration.
		if c, ok := store.inner.(io.Closer); ok {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if err := c.Close(); err != nil {
				b.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			closeAllocs += after.Mallocs - before.Mallocs
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(closeAllocs)/float64(calls*b.N), "close-allocs/call")
	b.ReportMetric(float64(calls*b.N)/total.Seconds(), "calls/s")
	b.ReportMetric(100*storeNanos.Seconds()/total.Seconds(), "storage-%")
	b.ReportMetric(float64(events)/float64(b.N), "events/session")
	b.ReportMetric(float64(events)/float64(batches), "events/commit")
}

// runNoteSession runs one scripted session through store and returns the
// turn's time (the session's creation is not counted).
func runNoteSession(b testing.TB, reg *core.Registry, script model.Script, calls int, store *timedStore) time.Duration {
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
// beside its bound, in the same run, interleaved. The bound is the
// in-memory store's step plus one bare FULL commit of the step's rows.
// The bare commits are paired with the loop's step by step (pairedBare:
// the same rows, every column as the store writes it — the session's id
// and the call ids included — committed right after the loop's commit of
// the step's calls returns; their time is taken out of the loop's), so
// the fsync latency of a shared disk, which drifts from second to second,
// falls on both alike; the in-memory session runs in the same round,
// before or after the SQLite one by turns. 1,000 note calls a session, at
// 1 and 10 calls per step; each iteration is one round. The bare=before
// variants commit each bare transaction right before the loop's instead
// (the bare commit then follows the loop's work, not another commit).
//
// x-bound is the loop's calls/s over the bound's; x-bound-min,
// x-bound-median and x-bound-max the lowest, median (the upper one for an
// even count) and highest of the rounds' own ratios. store-commit-ms is the
// loop's wall time inside the store per commit (hand-off, writer, fsync,
// acknowledgement) beside bare-commit-ms, the bound's per step;
// commits/step the loop's commits per model step; outside-ms the loop's
// time per step outside its store, beside mem-step-ms; close-ms what the store
// still did after the turn, at Close (it files the search index's lag,
// which the writer keeps off a session's back-to-back commits); load1 the
// one-minute load average at the end (Linux; 0 where unknown). Run it with
// -benchtime 4x -count 5 and report every ratio with the load.
func BenchmarkDurableStep(b *testing.B) {
	const calls = 1000
	reg := core.NewRegistry(quiet)
	reg.MustRegister(tools.NewNote())
	for _, c := range []struct {
		perStep   int
		bareFirst bool
	}{{1, false}, {10, false}, {1, true}, {10, true}} {
		perStep := c.perStep
		name := fmt.Sprintf("calls-per-step=%d", perStep)
		if c.bareFirst {
			name = "bare=before/" + name
		}
		b.Run(name, func(b *testing.B) {
			script := noteScript(calls, perStep)
			steps := len(script.Steps)
			var memT, loopT, bareT, storeT, closeT time.Duration
			var rows int
			var commits, bareCommits int64
			var ratios []float64
			for round := range b.N {
				dir := b.TempDir()
				var memR, loopR, bareR time.Duration
				mem := func() {
					m := newMemStore()
					pprof.Do(context.Background(), pprof.Labels("session", "mem"), func(ctx context.Context) {
						defer trace.StartRegion(ctx, "mem-session").End()
						memR = runNoteSession(b, reg, script, calls, &timedStore{inner: m})
					})
				}
				loop := func() {
					st, err := db.Open(context.Background(), filepath.Join(dir, "loop.db"), db.Options{Logger: quiet})
					if err != nil {
						b.Fatal(err)
					}
					ts := &timedStore{inner: st, paired: newPairedBare(b, filepath.Join(dir, "bare.db")), bareFirst: c.bareFirst}
					var elapsed time.Duration
					pprof.Do(context.Background(), pprof.Labels("session", "sqlite"), func(ctx context.Context) {
						defer trace.StartRegion(ctx, "sqlite-session").End()
						elapsed = runNoteSession(b, reg, script, calls, ts)
					})
					bareR = ts.paired.nanos
					loopR = elapsed - bareR - ts.paired.harness
					storeT += time.Duration(ts.nanos.Load())
					commits += ts.batches.Load()
					bareCommits += int64(ts.paired.commits)
					rows = int(ts.events.Load())
					start := time.Now()
					if err := st.Close(); err != nil {
						b.Fatal(err)
					}
					closeT += time.Since(start)
				}
				if round%2 == 0 {
					mem()
					loop()
				} else {
					loop()
					mem()
				}
				memT += memR
				loopT += loopR
				bareT += bareR
				ratios = append(ratios, (memR+bareR).Seconds()/loopR.Seconds())
			}
			slices.Sort(ratios)
			n := float64(b.N)
			memStep := memT.Seconds() / n / float64(steps)
			commit := bareT.Seconds() / n / float64(steps)
			bound := float64(calls) / (float64(steps) * (memStep + commit))
			loop := float64(calls) * n / loopT.Seconds()
			b.ReportMetric(loop, "calls/s")
			b.ReportMetric(bound, "bound-calls/s")
			b.ReportMetric(loop/bound, "x-bound")
			b.ReportMetric(ratios[0], "x-bound-min")
			b.ReportMetric(ratios[len(ratios)/2], "x-bound-median")
			b.ReportMetric(ratios[len(ratios)-1], "x-bound-max")
			b.ReportMetric(float64(calls)*n/memT.Seconds(), "mem-calls/s")
			b.ReportMetric(memStep*1000, "mem-step-ms")
			b.ReportMetric(commit*1000, "bare-commit-ms")
			b.ReportMetric(float64(bareCommits)/n/float64(steps), "bare-commits/step")
			b.ReportMetric(storeT.Seconds()*1000/float64(commits), "store-commit-ms")
			// The loop's own time per step outside its store (the in-memory
			// step's counterpart: BenchmarkStepAfterBlock splits it).
			b.ReportMetric((loopT-storeT).Seconds()*1000/n/float64(steps), "outside-ms")
			b.ReportMetric(float64(commits)/n/float64(steps), "commits/step")
			b.ReportMetric(closeT.Seconds()*1000/n, "close-ms")
			b.ReportMetric(float64(rows)/float64(steps), "rows/step")
			b.ReportMetric(loadAverage(), "load1")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// loadAverage is the one-minute load average (Linux's /proc/loadavg), or
// 0 where it cannot be read.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(b), " ")
	v, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return 0
	}
	return v
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
