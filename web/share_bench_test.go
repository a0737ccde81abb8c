package web_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"prism/core"
	"prism/core/coretest"
	"prism/web"
)

// BenchmarkShareFirstPaint10k measures GET /s/{token} of the 10,000-event
// session of BenchmarkFirstPaint10k, scoped at its middle event, with
// redaction on and off, beside the inspector's own first paint of the whole
// session: the handler alone (gzip on), and the page's bytes. The
// share page loads the scoped log, redacts it (on), folds and renders the
// window; each view is also counted (one durable write). Each request has a
// query of its own, so each renders; share-redacted-kept asks for the same
// page every time, as a crowd does, and is served what the server kept.
func BenchmarkShareFirstPaint10k(b *testing.B) {
	e, _ := shareEnv(b, nil)
	e.session(b, "big", bigSession(10000))
	h := e.srv.Handler()
	settled(b, h)
	serve := func(path string) (int, int) {
		gz := benchGet(b, h, path, true)
		return benchGet(b, h, path, false), gz
	}
	serve("/sessions/big") // warm the highlight cache, as a running server has it
	for _, tc := range []struct{ name, body string }{
		{"inspector", ""},
		{"share-redacted", `{"upToSeq":4999}`},
		{"share-plain", `{"upToSeq":4999,"redact":false}`},
	} {
		path := "/sessions/big"
		if tc.body != "" {
			_, path = e.share(b, "big", tc.body)
		}
		b.Run(tc.name, func(b *testing.B) {
			plain, gz := serve(path)
			start := time.Now()
			i := 0
			for b.Loop() {
				// A query of its own each time: the server keeps a
				// link's rendered page by its validator, which names
				// the query, so this renders the page every time.
				i++
				p := path
				if tc.body != "" {
					p += "?bench=" + strconv.Itoa(i)
				}
				benchGet(b, h, p, true)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/page")
			b.ReportMetric(float64(plain), "bytes")
			b.ReportMetric(float64(gz), "gzip-bytes")
		})
	}
	// The same link's page as a crowd opens it: rendered once, then
	// served from what the server keeps (the view still counted).
	_, path := e.share(b, "big", `{"upToSeq":4999}`)
	b.Run("share-redacted-kept", func(b *testing.B) {
		serve(path)
		start := time.Now()
		for b.Loop() {
			benchGet(b, h, path, true)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/page")
	})
}

// viewersFanout opens n readers of one session — its owner's stream, or a
// live share link's (redacted) — appends tool calls and results at rate
// events/s for d, and returns every commit-to-patch-received latency and
// the growth of the process's RSS and heap with the readers connected
// (clients included: they run in this process, the same for both).
func viewersFanout(tb testing.TB, n, rate int, d time.Duration, share bool) (lat []time.Duration, rssKiB, heapKiB, bytesPer float64, stats web.LiveStats) {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart()
	total := rate * int(d/time.Second)
	commit := make([]atomic.Int64, len(b.Events)+total+1)
	lastSeq := int64(len(b.Events) + total - 1)
	e, _ := shareEnv(tb, func(d *web.Deps) {
		d.Commits.OnCommit(func(_ string, evs []core.Event) {
			for _, ev := range evs {
				commit[ev.Seq].Store(time.Now().UnixNano())
			}
		})
	})
	defer func() {
		e.ts.CloseClientConnections()
		e.ts.Close()
		e.srv.Close()
	}()
	e.session(tb, "f", b.Events)
	path := "/sessions/f/stream?after=1"
	if share {
		_, p := e.share(tb, "f", "{}")
		path = p + "/stream?after=1"
	}
	runtime.GC()
	rss0, heap0 := procRSS(), heapInuse()

	tr := &http.Transport{MaxIdleConnsPerHost: n, DisableCompression: true}
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var received atomic.Int64
	var ready, done sync.WaitGroup
	ready.Add(n)
	done.Add(n)
	for range n {
		go func() {
			defer done.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.ts.URL+path, nil)
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
			prev := int64(1)
			got := 0
			defer func() { received.Add(int64(got)) }()
			for sc.Scan() {
				line := sc.Bytes()
				got += len(line) + 1
				if len(line) > 4 && string(line[:4]) == "id: " {
					seq, _ := strconv.ParseInt(string(line[4:]), 10, 64)
					now := time.Now().UnixNano()
					for s := prev + 1; s <= seq && s < int64(len(commit)); s++ {
						if c := commit[s].Load(); c > 0 {
							mine = append(mine, time.Duration(now-c))
						}
					}
					prev = max(prev, seq)
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
	var rssPeak, heapPeak int64
	for i := range total {
		<-tick.C
		id := "c" + strconv.Itoa(i/2)
		if i%2 == 0 {
			b.Call(id, "bash", `{"command":"make test","description":"run the tests"}`)
		} else {
			b.Result(id, strings.Repeat("ok  \tprism/pkg\t0.01s\n", 10), false, nil, nil)
		}
		e.append(tb, "f", b.Events[len(b.Events)-1])
		if i%rate == 0 {
			rssPeak, heapPeak = max(rssPeak, procRSS()), max(heapPeak, heapInuse())
		}
	}
	tick.Stop()
	rssPeak, heapPeak = max(rssPeak, procRSS()), max(heapPeak, heapInuse())
	waitc := make(chan struct{})
	go func() { done.Wait(); close(waitc) }()
	select {
	case <-waitc:
	case <-time.After(10 * time.Second):
		cancel()
		<-waitc
	}
	slices.Sort(lat)
	if len(lat) < n*total {
		tb.Logf("delivered %d of %d patches", len(lat), n*total)
	}
	return lat, float64(rssPeak-rss0) / float64(n), float64(heapPeak-heap0) / 1024 / float64(n), float64(received.Load()) / float64(n), e.srv.LiveStats()
}

// procRSS is this process's resident set size in KiB.
func procRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

func heapInuse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// BenchmarkShareViewers: N readers of one live, redacted share link beside
// N readers of the owner's page of the same session, 30 events/s for 3 s:
// commit → patch received p50/p99 (ms), the RSS and heap each reader adds
// (KiB; the clients run in this process), and the hub's work (events
// redacted and folded, frames rendered: once per event and per update,
// whatever N). PRISM_BENCH_VIEWERS sets N (default 1000).
func BenchmarkShareViewers(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("PRISM_BENCH_VIEWERS")); err == nil && v > 0 {
		n = v
	}
	for _, share := range shareOrder() {
		name := "owner"
		if share {
			name = "share"
		}
		b.Run(fmt.Sprintf("%s/viewers=%d/rate=30", name, n), func(b *testing.B) {
			var lat []time.Duration
			var rss, heap, bytes float64
			var st web.LiveStats
			for b.Loop() {
				lat, rss, heap, bytes, st = viewersFanout(b, n, 30, 3*time.Second, share)
			}
			b.ReportMetric(bytes, "bytes/viewer")
			b.ReportMetric(pct(lat, 0.50), "p50-ms")
			b.ReportMetric(pct(lat, 0.99), "p99-ms")
			b.ReportMetric(rss, "rss-KiB/viewer")
			b.ReportMetric(heap, "heap-KiB/viewer")
			b.ReportMetric(float64(len(lat)), "patches")
			b.ReportMetric(float64(st.Redacted), "redacted")
			b.ReportMetric(float64(st.Folded), "folded")
			b.ReportMetric(float64(st.Frames), "frames")
		})
	}
}

// shareOrder is the order BenchmarkShareViewers runs its modes in: the
// owner's first, unless PRISM_BENCH_SHARE_FIRST is set (the second run
// pays for the first's teardown; swap them to see how much).
func shareOrder() []bool {
	if os.Getenv("PRISM_BENCH_SHARE_FIRST") != "" {
		return []bool{true, false}
	}
	return []bool{false, true}
}
