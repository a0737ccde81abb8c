package web_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
	"prism/web"
)

// bigSession builds a realistic session of exactly n events: turns of three
// steps, each streaming ~20 chunks and running bash, read and edit calls.
func bigSession(n int) []core.Event {
	b := coretest.NewBuilder(t0)
	call := 0
	for len(b.Events) < n {
		b.TurnStart()
		for s := range 3 {
			b.StepStart()
			if s == 0 {
				b.User("please look at the build and fix what is broken")
			}
			parts := make([]string, 20)
			for i := range parts {
				parts[i] = "word" + itoa(int64(i)) + " "
			}
			b.Chunks(parts...)
			b.Assistant(strings.Join(parts, ""))
			for k := range 3 {
				call++
				id := "call-" + itoa(int64(call))
				switch k {
				case 0:
					b.Call(id, "bash", `{"command":"go build ./...","description":"build"}`).Result(id, strings.Repeat("building package ...\n", 20)+"[exit code: 0]", false, nil, nil)
				case 1:
					// The read tool's envelope and meta, as it logs them.
					lines := make([]map[string]any, 30)
					var text strings.Builder
					text.WriteString("<path>/work/main.go</path>\n<type>file</type>\n<content>\n")
					for i := range lines {
						line := "\tfmt.Println(\"line\", " + itoa(int64(i)) + ")"
						lines[i] = map[string]any{"number": i + 1, "text": line}
						text.WriteString(itoa(int64(i+1)) + ": " + line + "\n")
					}
					text.WriteString("\n(Showing lines 1-30 of 300. Use offset=31 to continue.)\n</content>")
					b.Call(id, "read", `{"file_path":"main.go","limit":30}`).Result(id, text.String(), false, map[string]any{"path": "/work/main.go", "offset": 1, "totalLines": 300, "lang": "go", "lines": lines}, nil)
				case 2:
					b.Call(id, "edit", `{"file_path":"main.go","old_string":"a","new_string":"b"}`).Result(id, "The file /work/main.go has been updated successfully.", false,
						map[string]any{"diffs": []map[string]any{{"path": "main.go", "oldText": "x\ny\na\nz\n", "newText": "x\ny\nb\nz\n"}}}, nil)
				}
			}
			b.StepEnd()
		}
		b.TurnEnd(core.TurnCompleted)
	}
	return b.Events[:n]
}

// benchGet serves GET path through h (with gzip when gz, as browsers ask)
// and returns the body's length, failing unless the status is 200.
func benchGet(b *testing.B, h http.Handler, path string, gz bool) int {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "127.0.0.1" // a loopback server answers loopback names only
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		b.Fatalf("%s: status %d", path, rec.Code)
	}
	return rec.Body.Len()
}

// settled waits until the store has filed the search index of what the
// benchmark appended: the index lags the log and is filed beside it, and a
// search catches it up first. A page measured while 10,000 events are
// still being indexed would time the indexing with it.
func settled(b *testing.B, h http.Handler) {
	b.Helper()
	benchGet(b, h, "/search?q=settle", false)
}

// BenchmarkFirstPaint10k measures GET /sessions/{id} of a 10,000-event
// session: "server" is the handler alone (ServeHTTP into a recorder, the
// gzip middleware on), "loopback" a real HTTP request over 127.0.0.1 read
// to the end. Both report the bytes of the page, plain and gzip.
func BenchmarkFirstPaint10k(b *testing.B) {
	e := newEnv(b, nil)
	e.session(b, "big", bigSession(10000))
	h := e.srv.Handler()
	settled(b, h)
	serve := func(gz bool) int { return benchGet(b, h, "/sessions/big", gz) }
	start := time.Now()
	plain := serve(false) // the first render of this process: cold highlight cache
	cold := time.Since(start)
	gzBytes := serve(true)
	b.Run("server", func(b *testing.B) {
		cpu0, n := coretest.CPUTime(b), 0
		for b.Loop() {
			n++
			serve(true)
		}
		b.ReportMetric(float64((coretest.CPUTime(b)-cpu0).Microseconds())/1000/float64(n), "cpu-ms/op")
		b.ReportMetric(float64(cold.Microseconds())/1000, "cold-ms")
		b.ReportMetric(float64(plain), "bytes")
		b.ReportMetric(float64(gzBytes), "gzip-bytes")
	})
	// The page beside its floor in the same run, alternating: reading the
	// session's events from the store and decoding them as the fold does
	// (its input), nothing rendered.
	b.Run("vs-read-decode", func(b *testing.B) {
		ctx := context.Background()
		var page, floor []time.Duration
		for b.Loop() {
			t0 := time.Now()
			serve(true)
			page = append(page, time.Since(t0))
			t0 = time.Now()
			log, err := e.store.LoadSession(ctx, "big")
			if err != nil {
				b.Fatal(err)
			}
			if bad := views.Decode(log.Events); bad != 0 {
				b.Fatalf("%d events did not decode", bad)
			}
			floor = append(floor, time.Since(t0))
		}
		slices.Sort(page)
		slices.Sort(floor)
		p50 := func(l []time.Duration) float64 { return float64(l[len(l)/2].Microseconds()) / 1000 }
		b.ReportMetric(p50(page), "page-p50-ms")
		b.ReportMetric(p50(floor), "read-decode-p50-ms")
		b.ReportMetric(p50(page)/max(p50(floor), 0.001), "x-read-decode")
		b.ReportMetric(0, "ns/op")
	})
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	b.Run("loopback", func(b *testing.B) {
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/sessions/big", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			res, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if int(n) != gzBytes {
				b.Fatalf("read %d bytes, want %d", n, gzBytes)
			}
		}
		b.ReportMetric(float64(gzBytes), "gzip-bytes")
	})
}

// BenchmarkCallPage20k measures GET /sessions/{id}/calls/{callId} — one
// call's projections side by side — for calls with 20,000 lines of output:
// a bash run (the terminal card) and a read of a 20,000-line file (the
// file card, its lines also in the meta). Server time: the handler alone
// into a recorder, gzip on.
func BenchmarkCallPage20k(b *testing.B) {
	e := newEnv(b, nil)
	var out, file strings.Builder
	lines := make([]map[string]any, 20000)
	file.WriteString("<path>/work/big.go</path>\n<type>file</type>\n<content>\n")
	for i := range lines {
		line := "\tfmt.Println(\"line " + itoa(int64(i+1)) + " <of> & output\")"
		out.WriteString("building package " + itoa(int64(i+1)) + " of 20000: ok <" + strings.Repeat("x", i%40) + ">\n")
		lines[i] = map[string]any{"number": i + 1, "text": line}
		file.WriteString(itoa(int64(i+1)) + ": " + line + "\n")
	}
	out.WriteString("[exit code: 0]")
	file.WriteString("\n(End of file - total 20000 lines)\n</content>")
	bld := coretest.NewBuilder(t0)
	bld.TurnStart().StepStart()
	bld.Call("bash-1", "bash", `{"command":"make all","description":"build everything"}`).Result("bash-1", out.String(), false, nil, nil)
	bld.Call("read-1", "read", `{"file_path":"big.go"}`).Result("read-1", file.String(), false,
		map[string]any{"path": "/work/big.go", "offset": 1, "totalLines": 20000, "lang": "go", "lines": lines}, nil)
	bld.StepEnd().TurnEnd(core.TurnCompleted)
	e.session(b, "heavy", bld.Events)
	h := e.srv.Handler()
	settled(b, h)
	for _, callID := range []string{"bash-1", "read-1"} {
		b.Run(callID[:len(callID)-2], func(b *testing.B) {
			var size int
			cpu0, n := coretest.CPUTime(b), 0
			for b.Loop() {
				n++
				size = benchGet(b, h, "/sessions/heavy/calls/"+callID, true)
			}
			b.ReportMetric(float64((coretest.CPUTime(b)-cpu0).Microseconds())/1000/float64(n), "cpu-ms/op")
			b.ReportMetric(float64(size), "gzip-bytes")
		})
	}
}

// fanout runs one publisher appending tool calls and results at rate
// events/s for d, with n SSE subscribers on loopback, and returns the
// commit-to-patch-received latencies of every subscriber and event.
func fanout(tb testing.TB, n, rate int, d time.Duration) []time.Duration {
	t := tb
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart()
	total := rate * int(d/time.Second)
	commit := make([]atomic.Int64, len(b.Events)+total+1)
	lastSeq := int64(len(b.Events) + total - 1)
	e := newEnv(t, func(d *web.Deps) {
		// Stamped when the store reports the commit, before the server's
		// own commit hook (registered later) hands it to the broker.
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
	e.session(t, "f", b.Events)

	tr := &http.Transport{MaxIdleConnsPerHost: n, DisableCompression: true}
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	var ready, done sync.WaitGroup
	ready.Add(n)
	done.Add(n)
	for range n {
		go func() {
			defer done.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.ts.URL+"/sessions/f/stream?after=1", nil)
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
			prev := int64(1) // the stream starts after seq 1
			for sc.Scan() {
				line := sc.Bytes()
				if len(line) > 4 && string(line[:4]) == "id: " {
					var seq int64
					fmt.Sscan(string(line[4:]), &seq)
					// A frame delivers every event up to its id: a hub
					// merges a burst into one frame.
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
	// Every subscriber has its response headers: the hub exists. Publish.
	tick := time.NewTicker(time.Second / time.Duration(rate))
	for i := range total {
		<-tick.C
		id := "c" + itoa(int64(i/2))
		if i%2 == 0 {
			b.Call(id, "bash", `{"command":"make test","description":"run the tests"}`)
		} else {
			b.Result(id, strings.Repeat("ok  \tprism/pkg\t0.01s\n", 10), false, nil, nil)
		}
		e.append(t, "f", b.Events[len(b.Events)-1])
	}
	tick.Stop()
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
	return lat
}

func pct(l []time.Duration, p float64) float64 {
	if len(l) == 0 {
		return -1
	}
	return float64(l[min(len(l)-1, int(float64(len(l))*p))].Microseconds()) / 1000
}

// BenchmarkFanout: one publisher, N subscribers on loopback, 30 events/s
// for 3 s; reports commit-to-patch-received p50/p99 in ms.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("subs=%d/rate=30", n), func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				lat = fanout(b, n, 30, 3*time.Second)
			}
			b.ReportMetric(pct(lat, 0.50), "p50-ms")
			b.ReportMetric(pct(lat, 0.99), "p99-ms")
			b.ReportMetric(float64(len(lat)), "patches")
		})
	}
}

// BenchmarkFanoutRate sweeps the event rate with 1,000 subscribers (2 s
// each): commit → patch received, each event counted when the frame that
// carries it (a burst merges into one frame) arrives.
func BenchmarkFanoutRate(b *testing.B) {
	for _, rate := range []int{100, 300, 500} {
		b.Run(fmt.Sprintf("subs=1000/rate=%d", rate), func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				lat = fanout(b, 1000, rate, 2*time.Second)
			}
			b.ReportMetric(pct(lat, 0.50), "p50-ms")
			b.ReportMetric(pct(lat, 0.99), "p99-ms")
			b.ReportMetric(float64(len(lat)), "patches")
		})
	}
}
