package db

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"prism/core"
	"prism/core/search"
	"prism/store"
	"prism/store/storetest"
)

// fillCorpus stores sessions×perSession events (each session in one
// append) and returns the file's size once checkpointed.
func fillCorpus(b *testing.B, st *Store, sessions, perSession int) int64 {
	ctx := context.Background()
	c := storetest.NewCorpus(1)
	for i := 0; i < sessions; i++ {
		id := fmt.Sprintf("s%04d", i)
		h := storetest.Header(id)
		h.Cwd = "/work/" + c.Word()
		if err := st.CreateSession(ctx, h); err != nil {
			b.Fatal(err)
		}
		if err := st.AppendEvents(ctx, id, c.Log(perSession, 1764500000000+int64(i)*3_600_000)); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.catchUpIndex(ctx); err != nil { // the index lags the log
		b.Fatal(err)
	}
	if _, err := st.wdb.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(st.path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// BenchmarkSearch measures queries over 100,000 events in 300 sessions (a
// word, a phrase, tool:, error:, in rank and time order, 20 hits with
// their snippets), and reports the database's size with and without the
// index (the same events stored twice, the second time without it).
//
// PRISM_SEARCH_DB names a database of the same corpus to search instead
// (copied first; e.g. BenchmarkGrowth's cached one of 3,000 sessions, a
// million events): the size is then that file's alone.
func BenchmarkSearch(b *testing.B) {
	const sessions, perSession = 300, 334
	dir := b.TempDir()
	path := filepath.Join(dir, "search.db")
	var with, without int64
	var fill time.Duration
	if src := os.Getenv("PRISM_SEARCH_DB"); src != "" {
		data, err := os.ReadFile(src)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
		with = int64(len(data))
	}
	st, err := Open(context.Background(), path, Options{Logger: quietLogger(), SyncNormal: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if with == 0 {
		start := time.Now()
		with = fillCorpus(b, st, sessions, perSession)
		fill = time.Since(start)
		plain, err := Open(context.Background(), filepath.Join(dir, "plain.db"), Options{Logger: quietLogger(), SyncNormal: true})
		if err != nil {
			b.Fatal(err)
		}
		plain.w.noIndex = true
		without = fillCorpus(b, plain, sessions, perSession)
		plain.Close()
	}
	var docs, events int64
	st.rdb.QueryRow("SELECT count(*) FROM search_docs").Scan(&docs)
	st.rdb.QueryRow("SELECT count(*) FROM events").Scan(&events)
	b.Run("size", func(b *testing.B) {
		b.ReportMetric(float64(events), "events")
		b.ReportMetric(float64(docs), "docs")
		b.ReportMetric(float64(with)/1e6, "MB-indexed")
		b.ReportMetric(float64(without)/1e6, "MB-unindexed")
		b.ReportMetric(fill.Seconds(), "fill-s")
		b.ReportMetric(0, "ns/op")
	})

	ctx := context.Background()
	for _, tc := range []struct {
		name, q, order string
		page2          bool // the page after the first (its cursor's)
	}{
		{"word", "config", OrderRank, false},
		{"word/time", "config", OrderTime, false},
		{"rare-word", storetest.NewCorpus(1).Vocab(2000), OrderRank, false},
		{"phrase", `"connection refused"`, OrderRank, false},
		{"identifier", "fmt.Sprintf", OrderRank, false},
		{"tool", "tool:grep", OrderRank, false},
		{"error", "error:TOOL_TIMEOUT", OrderRank, false},
		{"tool/page2", "tool:grep", OrderRank, true},
		{"error/page2", "error:TOOL_TIMEOUT", OrderRank, true},
		{"tool+word", "tool:bash refused", OrderRank, false},
	} {
		q, err := search.Parse(tc.q, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		o := SearchOptions{Order: tc.order, Limit: 20}
		var after *store.SearchCursor
		if tc.page2 {
			first, err := st.Search(ctx, q, o)
			if err != nil {
				b.Fatal(err)
			}
			if first.NextCursor == "" {
				b.Fatalf("%s: %q has one page only", tc.name, tc.q)
			}
			o.Cursor = first.NextCursor
			plan, err := store.PlanSearch(o, compile(q).match != "")
			if err != nil {
				b.Fatal(err)
			}
			after = plan.After
		}
		b.Run(tc.name, func(b *testing.B) {
			floor := searchFloor(q, tc.order, after)
			rowsFloor := searchRowsFloor(q, after)
			search := func() (SearchPage, error) { return st.Search(ctx, q, o) }
			var lat, bare, rowsBare []time.Duration
			// Whether each sample overlapped a garbage collection
			// (gcClock), the search's and the rows floor's.
			var inGC, rowsInGC []gcOverlap
			var cpu, floorCPU, rowsFloorCPU time.Duration
			hits, among := 0, 0
			handoffs := st.w.indexRequests.Load()
			waits := st.rdb.Stats().WaitCount + st.wdb.Stats().WaitCount
			gc := newGCClock()
			cycles0, _ := gc.read()
			for i := 0; i < b.N; i++ {
				g0 := gc.at()
				c0, t0 := processCPU(b), time.Now()
				page, err := search()
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				c1 := processCPU(b)
				inGC = append(inGC, gc.overlapped(g0))
				cpu += c1 - c0
				hits, among = len(page.Hits), page.RankedAmong
				t0 = time.Now()
				if err := floor(ctx, st.rdb); err != nil {
					b.Fatal(err)
				}
				bare = append(bare, time.Since(t0))
				c2 := processCPU(b)
				floorCPU += c2 - c1
				if rowsFloor != nil {
					g0 := gc.at()
					c2 = processCPU(b)
					t0 = time.Now()
					if err := rowsFloor(ctx, st.rdb); err != nil {
						b.Fatal(err)
					}
					rowsBare = append(rowsBare, time.Since(t0))
					rowsFloorCPU += processCPU(b) - c2
					rowsInGC = append(rowsInGC, gc.overlapped(g0))
				}
			}
			b.StopTimer() // allocs/op: the loop's alone
			cycles1, _ := gc.read()
			// Garbage collections during the loop (the search's, the
			// floors' and the loop's own garbage), and the waits for a
			// connection of either pool (a search or a floor that found
			// its pool's connections busy: none should).
			b.ReportMetric(float64(cycles1-cycles0)/float64(b.N), "gc/op")
			b.ReportMetric(float64(st.rdb.Stats().WaitCount+st.wdb.Stats().WaitCount-waits)/float64(b.N), "conn-waits/op")
			if rowsFloor != nil {
				reportGCTail(b, lat, inGC, rowsBare, rowsInGC)
			}
			reportVsFloor(b, lat, bare)
			// This process's CPU (the search's work and SQLite's, less
			// sensitive than latency to the machine's other load) per
			// search and per floor.
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us")
			b.ReportMetric(float64(floorCPU.Microseconds())/float64(b.N), "floor-cpu-us")
			// The heap allocations of one search and of one floor
			// (allocs/op is the sum of the three).
			reportAllocs(b, "search", func() error { _, err := search(); return err })
			reportAllocs(b, "floor", func() error { return floor(ctx, st.rdb) })
			if rowsFloor != nil {
				reportVsRowsFloor(b, lat, rowsBare)
				b.ReportMetric(float64(rowsFloorCPU.Microseconds())/float64(b.N), "rows-floor-cpu-us")
				reportAllocs(b, "rows-floor", func() error { return rowsFloor(ctx, st.rdb) })
			}
			// Searches that handed off to the writer (nothing lags here:
			// none should).
			b.ReportMetric(float64(st.w.indexRequests.Load()-handoffs)/float64(b.N), "handoffs/op")
			b.ReportMetric(float64(hits), "hits")
			b.ReportMetric(float64(among), "ranked-among")
		})
	}
}

// searchFloor returns the bare engine query for the same result set as a
// search of q (document ids only: no page joins, card numbers or
// snippets; searchRowsFloor is the second floor of a query of operators
// alone, with the rows): for rank order FTS4's MATCH and matchinfo over the same
// candidates (the most recent store.RankCandidates matches), scored by
// bm25 and the top 21 kept; for time order the matching documents newest
// first, LIMIT 21 (the matches computed once, as the search does).
func searchFloor(q *search.Query, order string, after *store.SearchCursor) func(context.Context, *sql.DB) error {
	s := compile(q)
	if after != nil && s.match == "" {
		// The bare keyset condition (d.time, d.id) < (key, doc).
		s.where = append(s.where[:len(s.where):len(s.where)], "(d.time, d.id) < (?, ?)")
		s.args = append(s.args[:len(s.args):len(s.args)], int64(after.Key), after.Doc)
	}
	drain := func(rows *sql.Rows, err error, each func(*sql.Rows) error) error {
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := each(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	join := s.sessionsJoin()
	if s.match == "" || order == OrderTime {
		query, args := "SELECT d.id FROM search_docs d"+join+where(s.where)+" ORDER BY d.time DESC, d.id DESC LIMIT 21", s.args
		if s.match != "" {
			// The matches' newest 21, by the search's own plan.
			q, qargs := newestMatches(s, nil, nil, 21)
			query = matchCTE + "SELECT id FROM (" + q + ")"
			args = append([]any{s.match}, qargs...)
		}
		return func(ctx context.Context, rdb *sql.DB) error {
			var id int64
			rows, err := rdb.QueryContext(ctx, query, args...)
			return drain(rows, err, func(r *sql.Rows) error { return r.Scan(&id) })
		}
	}
	c, cargs := newestMatches(s, nil, nil, store.RankCandidates)
	query := fmt.Sprintf(candidatesSQL, c)
	args := append(append([]any{s.match}, cargs...), s.match)
	return func(ctx context.Context, rdb *sql.DB) error {
		type scored struct {
			doc  int64
			rank float64
		}
		var all []scored
		var mi []byte
		rows, err := rdb.QueryContext(ctx, query, args...)
		if err := drain(rows, err, func(r *sql.Rows) error {
			var sc scored
			err := r.Scan(&sc.doc, &mi)
			sc.rank = bm25(mi)
			all = append(all, sc)
			return err
		}); err != nil {
			return err
		}
		sort.Slice(all, func(i, j int) bool {
			return all[i].rank > all[j].rank || all[i].rank == all[j].rank && all[i].doc > all[j].doc
		})
		return nil
	}
}

// searchRowsFloor returns, for a query of operators alone (nil for one
// with words), a second floor beside searchFloor's ids: the bare indexed
// ORDER BY time DESC LIMIT 21 that reads the columns of search_docs a page
// returns, its filed snippet and card number included, each row scanned
// (the snippet not decoded) — the bare engine query for the same result
// set with its rows.
func searchRowsFloor(q *search.Query, after *store.SearchCursor) func(context.Context, *sql.DB) error {
	s := compile(q)
	if s.match != "" {
		return nil
	}
	if after != nil {
		s.where = append(s.where, "(d.time, d.id) < (?, ?)")
		s.args = append(s.args, int64(after.Key), after.Doc)
	}
	query := "SELECT d.id, d.session_id, d.seq, d.kind, d.call_id, d.card, d.tool, d.result_seq, d.error, d.time, d.snip FROM search_docs d" +
		s.sessionsJoin() + where(s.where) + " ORDER BY d.time DESC, d.id DESC LIMIT 21"
	return func(ctx context.Context, rdb *sql.DB) error {
		rows, err := rdb.QueryContext(ctx, query, s.args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var id, seq, card, result, at sql.NullInt64
		var session, kind, call, tool, errCol, snip sql.RawBytes
		for rows.Next() {
			if err := rows.Scan(&id, &session, &seq, &kind, &call, &card, &tool, &result, &errCol, &at, &snip); err != nil {
				return err
			}
		}
		return rows.Err()
	}
}

// gcClock reads this process's garbage collections (runtime/metrics):
// the cycles completed and the stop-the-world pauses they made, two a
// cycle — one starting its mark phase, one ending it.
type gcClock struct{ s []metrics.Sample }

func newGCClock() *gcClock {
	return &gcClock{s: []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/sched/pauses/total/gc:seconds"}}}
}

// read returns the cycles completed and the pauses made so far.
func (c *gcClock) read() (cycles, pauses uint64) {
	metrics.Read(c.s)
	cycles = c.s[0].Value.Uint64()
	for _, n := range c.s[1].Value.Float64Histogram().Counts {
		pauses += n
	}
	return cycles, pauses
}

// gcMoment is a gcClock reading: the pauses so far, and whether a mark
// phase was running (a cycle's first pause made, not its second).
type gcMoment struct {
	pauses  uint64
	marking bool
}

func (c *gcClock) at() gcMoment {
	cycles, pauses := c.read()
	return gcMoment{pauses: pauses, marking: pauses > 2*cycles}
}

// gcOverlap is how a sample overlapped garbage collection: it held a
// stop-the-world pause, or a mark phase ran at its start or its end (the
// collector's assists, write barriers and worker then share the CPU).
type gcOverlap struct{ paused, marking bool }

func (o gcOverlap) any() bool { return o.paused || o.marking }

// overlapped returns how the time since m overlapped a collection.
func (c *gcClock) overlapped(m gcMoment) gcOverlap {
	now := c.at()
	return gcOverlap{paused: now.pauses != m.pauses, marking: m.marking || now.marking}
}

// reportGCTail attributes the tails of a search (lat) and its rows floor
// (floor) to garbage collection (inGC, floorInGC: gcClock.overlapped):
// the share of each one's slowest 1 % (at least one sample) that
// overlapped a collection and that held a stop-the-world pause, the share
// of all its samples that held one, and the search / rows floor ratio at
// p50 and p99 over the samples that overlapped none — each side's own.
func reportGCTail(b *testing.B, lat []time.Duration, inGC []gcOverlap, floor []time.Duration, floorInGC []gcOverlap) {
	type sample struct {
		d  time.Duration
		gc gcOverlap
	}
	type tail struct {
		slowestInGC, slowestPaused, paused float64
		clear                              []time.Duration
	}
	split := func(l []time.Duration, gc []gcOverlap) (t tail) {
		all := make([]sample, len(l))
		for i := range l {
			all[i] = sample{l[i], gc[i]}
			if !gc[i].any() {
				t.clear = append(t.clear, l[i])
			}
			if gc[i].paused {
				t.paused++
			}
		}
		t.paused /= float64(len(all))
		slices.SortFunc(all, func(a, b sample) int { return cmp.Compare(b.d, a.d) })
		top := all[:max(1, len(all)/100)]
		for _, s := range top {
			if s.gc.any() {
				t.slowestInGC++
			}
			if s.gc.paused {
				t.slowestPaused++
			}
		}
		t.slowestInGC /= float64(len(top))
		t.slowestPaused /= float64(len(top))
		slices.Sort(t.clear)
		return t
	}
	pct := func(l []time.Duration, p int) float64 {
		if len(l) == 0 {
			return 0
		}
		return float64(l[min(len(l)-1, len(l)*p/100)].Microseconds()) / 1000
	}
	st, ft := split(lat, inGC), split(floor, floorInGC)
	b.ReportMetric(st.slowestInGC, "slowest-in-gc")
	b.ReportMetric(ft.slowestInGC, "rows-floor-slowest-in-gc")
	b.ReportMetric(st.slowestPaused, "slowest-paused")
	b.ReportMetric(ft.slowestPaused, "rows-floor-slowest-paused")
	b.ReportMetric(st.paused, "paused")
	b.ReportMetric(ft.paused, "rows-floor-paused")
	b.ReportMetric(pct(st.clear, 50)/max(pct(ft.clear, 50), 0.001), "x-rows-floor-p50-nogc")
	b.ReportMetric(pct(st.clear, 99)/max(pct(ft.clear, 99), 0.001), "x-rows-floor-p99-nogc")
}

// allocRuns is how many times reportAllocs runs a function.
const allocRuns = 200

// reportAllocs reports the heap allocations (objects and bytes) of one
// run of f, averaged over allocRuns runs after the timed loop (the
// counters read once before and once after them: reading them around
// each timed run would stop the world there).
func reportAllocs(b *testing.B, name string, f func() error) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range allocRuns {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/allocRuns, name+"-allocs")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/allocRuns, name+"-B")
}

// processCPU returns the CPU time this process has used (user and
// system, all its threads).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportVsRowsFloor reports a search's ratios to searchRowsFloor's floor,
// beside that floor's p50 and p99.
func reportVsRowsFloor(b *testing.B, lat, floor []time.Duration) {
	slices.Sort(lat)
	slices.Sort(floor)
	pct := func(l []time.Duration, p int) float64 {
		return float64(l[min(len(l)-1, len(l)*p/100)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(floor, 50), "rows-floor-p50-ms")
	b.ReportMetric(pct(floor, 99), "rows-floor-p99-ms")
	b.ReportMetric(pct(lat, 50)/max(pct(floor, 50), 0.001), "x-rows-floor-p50")
	b.ReportMetric(pct(lat, 99)/max(pct(floor, 99), 0.001), "x-rows-floor-p99")
}

// reportVsFloor reports a search's p50 and p99 beside its floor's, and
// their ratios.
func reportVsFloor(b *testing.B, lat, floor []time.Duration) {
	slices.Sort(lat)
	slices.Sort(floor)
	pct := func(l []time.Duration, p int) float64 {
		return float64(l[min(len(l)-1, len(l)*p/100)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(lat, 50), "p50-ms")
	b.ReportMetric(pct(lat, 99), "p99-ms")
	b.ReportMetric(pct(floor, 50), "floor-p50-ms")
	b.ReportMetric(pct(floor, 99), "floor-p99-ms")
	b.ReportMetric(pct(lat, 50)/max(pct(floor, 50), 0.001), "x-floor-p50")
	b.ReportMetric(pct(lat, 99)/max(pct(floor, 99), 0.001), "x-floor-p99")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAppendSearchIndex measures durable appends (synchronous=FULL)
// of realistic events (messages, calls and results; the corpus's turns)
// with and without the search index, in the same run on the same file:
// one appender, and eight through the group commit. The index lags the
// log (searchlag.go): its transactions run beside the appends, and the
// lag left at the end is filed inside the timed run.
func BenchmarkAppendSearchIndex(b *testing.B) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(b.TempDir(), "append.db"), Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	run := 0
	for _, appenders := range []int{1, 8} {
		for _, index := range []bool{true, false} {
			b.Run(fmt.Sprintf("appenders=%d/index=%v", appenders, index), func(b *testing.B) {
				st.w.noIndex = !index
				defer func() { st.w.noIndex = false }()
				run++
				per := max(1, b.N/appenders)
				logs := make([][]core.Event, appenders)
				ids := make([]string, appenders)
				for g := range logs {
					ids[g] = fmt.Sprintf("a%d-%d", run, g)
					storetest.MustCreate(b, st, ids[g])
					logs[g] = storetest.NewCorpus(int64(g)).Log(per, 1764500000000)[:per]
				}
				lat := make([][]time.Duration, appenders)
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for g := 0; g < appenders; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range logs[g] {
							t0 := time.Now()
							if err := st.AppendEvents(ctx, ids[g], logs[g][i:i+1]); err != nil {
								b.Error(err)
								return
							}
							lat[g] = append(lat[g], time.Since(t0))
						}
					}()
				}
				wg.Wait()
				// The index lags the log: what it has not filed yet is
				// filed (and counted) here.
				if err := st.catchUpIndex(ctx); err != nil {
					b.Fatal(err)
				}
				elapsed := time.Since(start)
				var all []time.Duration
				for _, l := range lat {
					all = append(all, l...)
				}
				reportLatencies(b, all, per*appenders, elapsed)
			})
		}
	}
}
