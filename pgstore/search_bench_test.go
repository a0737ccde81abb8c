package pgstore

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"prism/core/search"
	"prism/store"
	"prism/store/storetest"
)

// searchCases are the query classes BenchmarkSearch measures (the SQLite
// store's BenchmarkSearch runs the same ones over the same corpus). A
// class with page2 set searches for the page after the first (its
// cursor's values bound to the statement).
var searchCases = []struct {
	name, q, order string
	page2          bool
}{
	{"word", "config", store.OrderRank, false},
	{"word/time", "config", store.OrderTime, false},
	{"rare-word", storetest.NewCorpus(1).Vocab(2000), store.OrderRank, false},
	{"phrase", `"connection refused"`, store.OrderRank, false},
	{"identifier", "fmt.Sprintf", store.OrderRank, false},
	{"tool", "tool:grep", store.OrderRank, false},
	{"error", "error:TOOL_TIMEOUT", store.OrderRank, false},
	{"tool/page2", "tool:grep", store.OrderRank, true},
	{"error/page2", "error:TOOL_TIMEOUT", store.OrderRank, true},
	{"tool+word", "tool:bash refused", store.OrderRank, false},
}

// floorSQL is the bare engine query for the same result set as a search
// (its document ids only: no joins for the page, no card numbers, no
// snippets; rowsFloorSQL is the second floor of a query of operators
// alone, with the rows): for time order the matching documents newest first, LIMIT
// 21; for rank order ts_rank over the same tsquery among the same
// candidates (the most recent store.RankCandidates matches), LIMIT 21.
// After a cursor (a page after the first, time order) it is the bare
// keyset query: (d.time, d.id) < (key, doc).
func floorSQL(q *search.Query, order string, after *store.SearchCursor) (string, []any) {
	s := compile(q)
	if s.match == "" || order == store.OrderTime {
		return "SELECT d.id" + s.docsFrom() + whereSQL(s.keysetConds(after)) + newestFirst + " LIMIT 21", s.args
	}
	newest := s.docsFrom() + whereSQL(s.matchConds()) + newestFirst
	return "SELECT id FROM (SELECT c.id, ts_rank(" + rankWeights + ", c.terms, " + s.matchArg + "::tsquery) AS r FROM (" +
		"SELECT d.id, d.terms" + newest + " LIMIT " + s.arg(store.RankCandidates) + ") c) x ORDER BY r DESC, id DESC LIMIT 21", s.args
}

// rowsFloorSQL is, for a query of operators alone ("" for one with
// words), the second floor beside floorSQL's ids: the bare indexed ORDER
// BY time DESC LIMIT 21 that reads the columns of search_docs a page
// returns, its filed snippet and card number included — the bare engine
// query for the same result set with its rows.
func rowsFloorSQL(q *search.Query, after *store.SearchCursor) (string, []any) {
	s := compile(q)
	if s.match != "" {
		return "", nil
	}
	return "SELECT d.id, d.session_id, d.seq, d.kind, d.call_id, d.card, d.tool, d.result_seq, d.error, d.time, d.snip" +
		s.docsFrom() + whereSQL(s.keysetConds(after)) + newestFirst + " LIMIT 21", s.args
}

// keysetConds are a floor's conditions: the query's, and after a cursor
// the bare keyset condition (d.time, d.id) < (key, doc).
func (s *searchSQL) keysetConds(after *store.SearchCursor) []string {
	conds := s.matchConds()
	if after != nil {
		conds = append(conds, "(d.time, d.id) < ("+s.arg(int64(after.Key))+", "+s.arg(after.Doc)+")")
	}
	return conds
}

// preparedPlans returns how many times the idle connections of st's pool
// planned query, a statement they prepared, generically and for its
// values (pg_prepared_statements, PostgreSQL 14 and later).
func preparedPlans(ctx context.Context, st *Store, query string) (generic, custom int64, err error) {
	for _, c := range st.pool.AcquireAllIdle(ctx) {
		var g, cu int64
		err = c.QueryRow(ctx, "SELECT coalesce(sum(generic_plans), 0)::bigint, coalesce(sum(custom_plans), 0)::bigint FROM pg_prepared_statements WHERE statement = $1",
			pgx.QueryExecModeExec, query).Scan(&g, &cu)
		c.Release()
		if err != nil {
			return 0, 0, fmt.Errorf("pg_prepared_statements: %w", err)
		}
		generic, custom = generic+g, custom+cu
	}
	return generic, custom, nil
}

// explainPrepared prepares query on one connection, executes it n times,
// and returns EXPLAIN (ANALYZE, BUFFERS) of its next execution and how it
// was planned then (generic or custom): what a statement prepared once per
// connection costs once PostgreSQL has chosen between its plans (after
// the 5th execution). The arguments are written as literals (strings and
// integers only).
func explainPrepared(ctx context.Context, st *Store, query string, args []any, n int) (string, error) {
	c, err := st.pool.Acquire(ctx)
	if err != nil {
		return "", fmt.Errorf("acquire: %w", err)
	}
	defer c.Release()
	lits := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			lits[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		case int64, int:
			lits[i] = fmt.Sprint(v)
		default:
			return "", fmt.Errorf("argument %d: %T not written as a literal", i+1, a)
		}
	}
	const name = "bench_explained"
	exec := "EXECUTE " + name
	if len(lits) > 0 {
		exec += "(" + strings.Join(lits, ", ") + ")"
	}
	if _, err := c.Exec(ctx, "PREPARE "+name+" AS "+query, pgx.QueryExecModeSimpleProtocol); err != nil {
		return "", fmt.Errorf("prepare: %w", err)
	}
	defer c.Exec(ctx, "DEALLOCATE "+name, pgx.QueryExecModeSimpleProtocol) //nolint:errcheck // the connection goes back to the pool either way
	for i := 0; i < n; i++ {
		if _, err := c.Exec(ctx, exec, pgx.QueryExecModeSimpleProtocol); err != nil {
			return "", fmt.Errorf("execute %d: %w", i+1, err)
		}
	}
	rows, err := c.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+exec, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return "", fmt.Errorf("explain: %w", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", fmt.Errorf("explain: %w", err)
	}
	var g, cu int64
	if err := c.QueryRow(ctx, "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = '"+name+"'", pgx.QueryExecModeSimpleProtocol).Scan(&g, &cu); err != nil {
		return "", fmt.Errorf("pg_prepared_statements: %w", err)
	}
	return fmt.Sprintf("execution %d: generic plans %d, custom plans %d\n%s", n+1, g, cu, strings.Join(lines, "\n")), nil
}

// explain returns EXPLAIN (ANALYZE, BUFFERS)'s plan of a query.
func explain(ctx context.Context, st *Store, query string, args []any) (string, error) {
	rows, err := st.pool.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+query, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// BenchmarkSearch measures queries over about 100,000 events in 300
// sessions on PostgreSQL — the SQLite store's corpus (storetest.Corpus) —
// each beside its floor in the same run: the bare engine query for the
// same result set (floorSQL), timed in turn with the search, so each
// figure is a ratio under the same load. A search is 20 hits with their
// snippets. Beside the wall-clock figures it reports this process's CPU
// per search and per floor (cpu-us, floor-cpu-us: the client's work,
// which a loaded machine does not stretch). It logs EXPLAIN (ANALYZE,
// BUFFERS) of each class's query (its whole page) and its floor (-v).
// The tables are VACUUMed and ANALYZEd after the fill, as autovacuum would
// (a GIN index's pending list merged: left to chance, it made a rare
// word's index scan read 4 or 164 buffers from one run to the next). The size
// reported is the database's (pg_database_size) per event.
//
// PRISM_SEARCH_PG names a database of the same corpus to search instead
// of filling one (e.g. BenchmarkGrowth's SQLite database of 3,000
// sessions, a million events, copied by `prism migrate` into a cluster of
// your own): it is opened with this package's migrations (its index
// refiled when searchVersion moved) and only read.
func BenchmarkSearch(b *testing.B) {
	const sessions, perSession = 300, 334
	ctx := context.Background()
	var st *Store
	var fill time.Duration
	if url := os.Getenv("PRISM_SEARCH_PG"); url != "" {
		st = openAt(b, url, Options{})
	} else {
		st, _ = newTestStore(b, Options{})
		c := storetest.NewCorpus(1)
		start := time.Now()
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
		fill = time.Since(start)
	}
	if _, err := st.pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}
	var docs, events, size int64
	if err := st.pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM search_docs), (SELECT count(*) FROM events), pg_database_size(current_database())").Scan(&docs, &events, &size); err != nil {
		b.Fatal(err)
	}
	b.Run("size", func(b *testing.B) {
		b.ReportMetric(float64(events), "events")
		b.ReportMetric(float64(docs), "docs")
		b.ReportMetric(float64(size)/1e6, "MB")
		b.ReportMetric(float64(size)/float64(max(events, 1)), "B/event")
		b.ReportMetric(fill.Seconds(), "fill-s")
		b.ReportMetric(0, "ns/op")
	})
	explained := map[string]bool{}
	for _, tc := range searchCases {
		q, err := search.Parse(tc.q, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		o := store.SearchOptions{Order: tc.order, Limit: 20}
		if tc.page2 {
			first, err := st.Search(ctx, q, o)
			if err != nil {
				b.Fatal(err)
			}
			if first.NextCursor == "" {
				b.Fatalf("%s: %q has one page only", tc.name, tc.q)
			}
			o.Cursor = first.NextCursor
		}
		b.Run(tc.name, func(b *testing.B) {
			query, args, plan, words, err := querySQL(q, o)
			if err != nil {
				b.Fatal(err)
			}
			mode := searchMode(words)
			floor, fargs := floorSQL(q, plan.Order, plan.After)
			rowsFloor, rargs := rowsFloorSQL(q, plan.After)
			for _, x := range []struct {
				what, sql string
				args      []any
			}{{"search", query, args}, {"floor", floor, fargs}, {"rows floor", rowsFloor, rargs}} {
				if x.sql == "" || explained[tc.name+x.what] {
					continue
				}
				explained[tc.name+x.what] = true
				plan, err := explain(ctx, st, x.sql, x.args)
				if err != nil {
					b.Fatalf("EXPLAIN %s: %v", x.what, err)
				}
				b.Logf("%s %q, %s:\n%s\n%s", tc.name, tc.q, x.what, x.sql, plan)
			}
			if !words && !explained[tc.name+"prepared"] {
				// Prepared once per connection: its 6th execution, after
				// PostgreSQL chose between the generic plan and its
				// values'.
				explained[tc.name+"prepared"] = true
				plan, err := explainPrepared(ctx, st, query, args, 5)
				if err != nil {
					b.Fatalf("EXPLAIN prepared: %v", err)
				}
				b.Logf("%s %q, prepared:\n%s", tc.name, tc.q, plan)
			}
			var lat, bare, rowsBare []time.Duration
			var cpu, floorCPU, rowsFloorCPU time.Duration
			hits, among := 0, 0
			for i := 0; i < b.N; i++ {
				c0, t0 := processCPU(b), time.Now()
				page, err := st.Search(ctx, q, o)
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				c1 := processCPU(b)
				cpu += c1 - c0
				hits, among = len(page.Hits), page.RankedAmong
				// Run as Search's query is: planned for its values, or
				// prepared once (operators alone).
				bare = append(bare, runFloor(ctx, b, st, mode, floor, fargs))
				c2 := processCPU(b)
				floorCPU += c2 - c1
				if rowsFloor != "" {
					rowsBare = append(rowsBare, runFloor(ctx, b, st, mode, rowsFloor, rargs))
					rowsFloorCPU += processCPU(b) - c2
				}
			}
			b.StopTimer() // allocs/op: the loop's alone
			reportVsFloor(b, lat, bare)
			// This process's CPU (the client's: decoding, snippets, its
			// garbage collection), which the machine's load does not
			// stretch as it does a wall-clock time.
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us")
			b.ReportMetric(float64(floorCPU.Microseconds())/float64(b.N), "floor-cpu-us")
			// The heap allocations of one search and of one floor
			// (allocs/op is the sum of the three).
			reportAllocs(b, "search", func() error { _, err := st.Search(ctx, q, o); return err })
			reportAllocs(b, "floor", func() error { runFloor(ctx, b, st, mode, floor, fargs); return nil })
			if rowsFloor != "" {
				reportVsRowsFloor(b, lat, rowsBare)
				b.ReportMetric(float64(rowsFloorCPU.Microseconds())/float64(b.N), "rows-floor-cpu-us")
				reportAllocs(b, "rows-floor", func() error { runFloor(ctx, b, st, mode, rowsFloor, rargs); return nil })
			}
			b.ReportMetric(float64(hits), "hits")
			b.ReportMetric(float64(among), "ranked-among")
			if !words {
				// How the pool's connections planned the prepared
				// statement over the run.
				generic, custom, err := preparedPlans(ctx, st, query)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(generic), "generic-plans")
				b.ReportMetric(float64(custom), "custom-plans")
			}
		})
	}
}

// runFloor runs a floor's query, reads its rows, and returns how long it
// took.
func runFloor(ctx context.Context, b *testing.B, st *Store, mode pgx.QueryExecMode, query string, args []any) time.Duration {
	t0 := time.Now()
	rows, err := st.pool.Query(ctx, query, append([]any{mode}, args...)...)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

// reportVsRowsFloor reports a search's ratios to rowsFloorSQL's floor,
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
