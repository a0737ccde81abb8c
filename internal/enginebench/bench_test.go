package enginebench_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/db"
	"prism/internal/pgtest"
	"prism/pgstore"
	"prism/store"
	"prism/web"
)

// Benchmarks measure durability: the cluster fsyncs.
func TestMain(m *testing.M) { os.Exit(pgtest.Durable(m)) }

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// benchData is an event payload of about 300 bytes (BENCHMARKS.md's ceilings
// were measured with it).
var benchData = `{"todos":[{"content":"` + strings.Repeat("review <the> & diff ", 13) + `","status":"in_progress"}]}`

// appender is what the append benchmark drives.
type appender interface {
	core.EventStore
	Close() error
}

func openSQLite(b *testing.B, committed func(store.Commit)) appender {
	st, err := db.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), db.Options{Logger: quiet(), Committed: committed})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

func openPG(b *testing.B, url string, committed func(store.Commit)) *pgstore.Store {
	st, err := pgstore.Open(context.Background(), url, pgstore.Options{Logger: quiet(), Committed: committed})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// appendLoad runs n appenders per store (each on its own session, one
// event per append) for b.N events in all and reports events/s and the
// append latency's p50 and p99.
func appendLoad(b *testing.B, stores []appender, n int) {
	ctx := context.Background()
	type worker struct {
		st  appender
		id  string
		lat []time.Duration
	}
	var ws []*worker
	for si, st := range stores {
		for i := range n {
			w := &worker{st: st, id: fmt.Sprintf("bench-%d-%d-%d", b.N, si, i)}
			if err := st.CreateSession(ctx, core.SessionHeader{ID: w.id, CreatedAt: 1, Cwd: "/w"}); err != nil {
				b.Fatal(err)
			}
			ws = append(ws, w)
		}
	}
	per := max(1, b.N/len(ws))
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for _, w := range ws {
		wg.Go(func() {
			w.lat = make([]time.Duration, 0, per)
			for i := range per {
				t0 := time.Now()
				e := core.Event{Type: core.EventTodoWrite, Seq: int64(i), Time: t0.UnixMilli(), Data: []byte(benchData)}
				if err := w.st.AppendEvents(ctx, w.id, []core.Event{e}); err != nil {
					b.Error(err)
					return
				}
				w.lat = append(w.lat, time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	var all []time.Duration
	for _, w := range ws {
		all = append(all, w.lat...)
	}
	slices.Sort(all)
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "events/s")
	b.ReportMetric(pct(all, 0.50), "p50-ms")
	b.ReportMetric(pct(all, 0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

func pct(l []time.Duration, p float64) float64 {
	if len(l) == 0 {
		return -1
	}
	return float64(l[min(len(l)-1, int(float64(len(l))*p))].Microseconds()) / 1000
}

// BenchmarkAppend: durable appends, SQLite (synchronous=FULL) beside
// PostgreSQL (fsync on, synchronous_commit on): 1 and 8 appenders on one
// node, and 2 nodes × 8 appenders on one PostgreSQL database.
func BenchmarkAppend(b *testing.B) {
	b.Run("engine=sqlite/appenders=1", func(b *testing.B) { appendLoad(b, []appender{openSQLite(b, nil)}, 1) })
	b.Run("engine=sqlite/appenders=8", func(b *testing.B) { appendLoad(b, []appender{openSQLite(b, nil)}, 8) })
	b.Run("engine=postgres/appenders=1", func(b *testing.B) { appendLoad(b, []appender{openPG(b, pgtest.DB(b), nil)}, 1) })
	b.Run("engine=postgres/appenders=8", func(b *testing.B) { appendLoad(b, []appender{openPG(b, pgtest.DB(b), nil)}, 8) })
	b.Run("engine=postgres/nodes=2x8", func(b *testing.B) {
		url := pgtest.DB(b)
		appendLoad(b, []appender{openPG(b, url, nil), openPG(b, url, nil)}, 8)
	})
}

// fanout commits tool calls and results at rate events/s for d through
// the committing store, while n SSE subscribers watch the session on the
// serving node's web server; it returns, for every subscriber and event,
// the append → patch received latency (an error when an event did not
// reach a subscriber). Each event is stamped when its append is called,
// so the figure includes the durable commit (another node may send an
// event before the committing node's post-commit hook has run).
func fanout(b *testing.B, commit appender, serving backend.Reader, servingFeed *backend.Feed, n, rate int, d time.Duration) []time.Duration {
	ctx := context.Background()
	bl := coretest.NewBuilder(1767225600000)
	bl.TurnStart().StepStart()
	total := rate * int(d/time.Second)
	stamps := make([]atomic.Int64, len(bl.Events)+total+1)
	lastSeq := int64(len(bl.Events) + total - 1)
	id := fmt.Sprintf("fanout-%d", time.Now().UnixNano())
	reg, err := backend.Presenters(quiet())
	if err != nil {
		b.Fatal(err)
	}
	srv := web.New(web.Deps{Sessions: backend.Source{Store: serving}, Commits: servingFeed, Presenter: reg, Logger: quiet()})
	ts := httptest.NewServer(srv.Handler())
	defer func() { ts.CloseClientConnections(); ts.Close(); srv.Close() }()
	if err := commit.CreateSession(ctx, core.SessionHeader{ID: id, CreatedAt: 1767225600000, Cwd: "/work"}); err != nil {
		b.Fatal(err)
	}
	if err := commit.AppendEvents(ctx, id, bl.Events); err != nil {
		b.Fatal(err)
	}
	// The serving node knows the session before subscribers come.
	for {
		if _, err := serving.Session(ctx, id); err == nil {
			break
		}
	}
	tr := &http.Transport{MaxIdleConnsPerHost: n, DisableCompression: true}
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	var ready, done sync.WaitGroup
	ready.Add(n)
	done.Add(n)
	progress := make([]atomic.Int64, n) // the last seq each subscriber received
	for k := range n {
		go func() {
			defer done.Done()
			req, _ := http.NewRequestWithContext(cctx, http.MethodGet, ts.URL+"/sessions/"+id+"/stream?after=1", nil)
			res, err := client.Do(req)
			if err != nil {
				ready.Done()
				return
			}
			defer res.Body.Close()
			ready.Done()
			mine := make([]time.Duration, 0, total)
			sc := bufio.NewScanner(res.Body)
			sc.Buffer(make([]byte, 0, 4<<10), 16<<20)
			// A frame's id is the last seq it carries: a node that read
			// several new events at once sends them in one frame, and
			// each of them is received then.
			prev := int64(1)
			for sc.Scan() {
				line := sc.Bytes()
				if len(line) > 4 && string(line[:4]) == "id: " {
					var seq int64
					fmt.Sscan(string(line[4:]), &seq)
					now := time.Now().UnixNano()
					for s := prev + 1; s <= seq && s < int64(len(stamps)); s++ {
						if c := stamps[s].Load(); c > 0 {
							mine = append(mine, time.Duration(now-c))
						}
					}
					prev = max(prev, seq)
					progress[k].Store(prev)
					if seq >= lastSeq {
						break
					}
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	ready.Wait()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	for i := range total {
		<-tick.C
		cid := fmt.Sprintf("c%d", i/2)
		if i%2 == 0 {
			bl.Call(cid, "bash", `{"command":"make test","description":"run the tests"}`)
		} else {
			bl.Result(cid, strings.Repeat("ok  \tprism/pkg\t0.01s\n", 10), false, nil, nil)
		}
		e := bl.Events[len(bl.Events)-1:]
		stamps[e[0].Seq].Store(time.Now().UnixNano())
		if err := commit.AppendEvents(ctx, id, e); err != nil {
			b.Fatal(err)
		}
	}
	tick.Stop()
	waitc := make(chan struct{})
	go func() { done.Wait(); close(waitc) }()
	select {
	case <-waitc:
	case <-time.After(10 * time.Second):
		var behind []string
		for k := range progress {
			if p := progress[k].Load(); p < lastSeq {
				behind = append(behind, fmt.Sprintf("#%d at seq %d", k, p))
			}
		}
		b.Errorf("10 s after the last commit %d subscribers still wait for seq %d: %s", len(behind), lastSeq, strings.Join(behind, ", "))
		cancel()
		<-waitc
	}
	slices.Sort(lat)
	if len(lat) != n*total {
		b.Errorf("subscribers received %d events, want %d (%d subscribers × %d)", len(lat), n*total, n, total)
	}
	return lat
}

// BenchmarkFanoutAcrossNodes: 100 subscribers, 30 events/s for 3 s,
// append → patch received p50/p99: on SQLite the subscribers watch the
// committing node; on PostgreSQL they watch another node, which learns of
// the commit through NOTIFY and reads it from the events table.
func BenchmarkFanoutAcrossNodes(b *testing.B) {
	const subs, rate = 100, 30
	report := func(b *testing.B, lat []time.Duration) {
		b.ReportMetric(pct(lat, 0.50), "p50-ms")
		b.ReportMetric(pct(lat, 0.99), "p99-ms")
		b.ReportMetric(float64(len(lat)), "events")
		b.ReportMetric(0, "ns/op")
	}
	b.Run(fmt.Sprintf("engine=sqlite/same-node/subs=%d", subs), func(b *testing.B) {
		feed := &backend.Feed{}
		st := openSQLite(b, feed.Publish)
		var lat []time.Duration
		for b.Loop() {
			lat = fanout(b, st, st.(*db.Store), feed, subs, rate, 3*time.Second)
		}
		report(b, lat)
	})
	b.Run(fmt.Sprintf("engine=postgres/other-node/subs=%d", subs), func(b *testing.B) {
		url := pgtest.DB(b)
		fb := &backend.Feed{}
		a, nb := openPG(b, url, nil), openPG(b, url, fb.Publish)
		var lat []time.Duration
		for b.Loop() {
			lat = fanout(b, a, nb, fb, subs, rate, 3*time.Second)
		}
		report(b, lat)
	})
}
