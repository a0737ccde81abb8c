package pgstore

import (
	"context"
	"fmt"
	"os"
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
// store's BenchmarkSearch runs the same ones over the same corpus).
var searchCases = []struct{ name, q, order string }{
	{"word", "config", store.OrderRank},
	{"word/time", "config", store.OrderTime},
	{"rare-word", storetest.NewCorpus(1).Vocab(2000), store.OrderRank},
	{"phrase", `"connection refused"`, store.OrderRank},
	{"identifier", "fmt.Sprintf", store.OrderRank},
	{"tool", "tool:grep", store.OrderRank},
	{"error", "error:TOOL_TIMEOUT", store.OrderRank},
	{"tool+word", "tool:bash refused", store.OrderRank},
}

// floorSQL is the bare engine query for the same result set as a search
// (its document ids only: no joins for the page, no card numbers, no
// snippets; rowsFloorSQL is the second floor of a query of operators
// alone, with the rows): for time order the matching documents newest first, LIMIT
// 21; for rank order ts_rank over the same tsquery among the same
// candidates (the most recent store.RankCandidates matches), LIMIT 21.
func floorSQL(q *search.Query, order string) (string, []any) {
	s := compile(q)
	conds := s.matchConds()
	newest := s.docsFrom() + whereSQL(conds) + newestFirst
	if s.match == "" || order == store.OrderTime {
		return "SELECT d.id" + newest + " LIMIT 21", s.args
	}
	return "SELECT id FROM (SELECT c.id, ts_rank(" + rankWeights + ", c.terms, " + s.matchArg + "::tsquery) AS r FROM (" +
		"SELECT d.id, d.terms" + newest + " LIMIT " + s.arg(store.RankCandidates) + ") c) x ORDER BY r DESC, id DESC LIMIT 21", s.args
}

// rowsFloorSQL is, for a query of operators alone ("" for one with
// words), the second floor beside floorSQL's ids: the bare indexed ORDER
// BY time DESC LIMIT 21 that reads the columns of search_docs a page
// returns, its filed snippet and card number included — the bare engine
// query for the same result set with its rows.
func rowsFloorSQL(q *search.Query) (string, []any) {
	s := compile(q)
	if s.match != "" {
		return "", nil
	}
	return "SELECT d.id, d.session_id, d.seq, d.kind, d.call_id, d.card, d.tool, d.result_seq, d.error, d.time, d.snip" +
		s.docsFrom() + whereSQL(s.matchConds()) + newestFirst + " LIMIT 21", s.args
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
// BUFFERS) of each class's query, its page and its floor (-v).
// The tables are ANALYZEd after the fill, as autovacuum would. The size
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
	if _, err := st.pool.Exec(ctx, "ANALYZE"); err != nil {
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
		b.Run(tc.name, func(b *testing.B) {
			query, args, _, words, err := querySQL(q, o)
			if err != nil {
				b.Fatal(err)
			}
			mode := pgx.QueryExecModeCacheStatement
			if words {
				mode = pgx.QueryExecModeExec
			}
			floor, fargs := floorSQL(q, tc.order)
			rowsFloor, rargs := rowsFloorSQL(q)
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
			if words && !explained[tc.name+"page"] {
				// The page, read by the ids the first statement chose.
				explained[tc.name+"page"] = true
				ids, keys, _, err := topIDs(ctx, st.pool, query, args, tc.order)
				if err != nil {
					b.Fatal(err)
				}
				plan, err := explain(ctx, st, pageByIDsSQL, []any{ids, keys})
				if err != nil {
					b.Fatalf("EXPLAIN page: %v", err)
				}
				b.Logf("%s %q, page:\n%s", tc.name, tc.q, plan)
			}
			var lat, bare, rowsBare []time.Duration
			var cpu, floorCPU time.Duration
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
				floorCPU += processCPU(b) - c1
				if rowsFloor != "" {
					rowsBare = append(rowsBare, runFloor(ctx, b, st, mode, rowsFloor, rargs))
				}
			}
			reportVsFloor(b, lat, bare)
			// This process's CPU (the client's: decoding, snippets, its
			// garbage collection), which the machine's load does not
			// stretch as it does a wall-clock time.
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us")
			b.ReportMetric(float64(floorCPU.Microseconds())/float64(b.N), "floor-cpu-us")
			if rowsFloor != "" {
				reportVsRowsFloor(b, lat, rowsBare)
			}
			b.ReportMetric(float64(hits), "hits")
			b.ReportMetric(float64(among), "ranked-among")
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

// processCPU returns the CPU time this process has used (user and
// system, all its threads).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
