package web_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"prism/views"
)

// BenchmarkTravel10k measures the time-travel pages of a 10,000-event
// session beside its first paint — the page at its middle event, a jump to
// its first call, a scrubber's move to the middle, the whole session as one
// HTML file — the handler alone (ServeHTTP into a recorder, gzip on), with
// the bytes plain and gzip.
func BenchmarkTravel10k(b *testing.B) {
	e := newEnv(b, nil)
	events := bigSession(10000)
	e.session(b, "big", events)
	first := callIDs(b, events)[0]
	h := e.srv.Handler()
	serve := func(path string, gz bool) int {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "127.0.0.1"
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
	for _, bc := range []struct{ name, path string }{
		{"first-paint", "/sessions/big"},
		{"at-middle", views.SessionAtURL("big", 5000)},
		{"jump-first-call", views.SessionCallURL("big", first, "")},
		{"seek-middle", views.SeekURL("big", views.Place{At: 5000, Event: -1})},
		{"export-html", "/sessions/big/export.html"},
	} {
		plain, gz := serve(bc.path, false), serve(bc.path, true)
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				serve(bc.path, true)
			}
			b.ReportMetric(float64(plain), "bytes")
			b.ReportMetric(float64(gz), "gzip-bytes")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPlayback50x plays a 1,000-event session at 50× over loopback
// (its events are 10 ms apart: 0.2 ms each at 50×) and reads the stream to
// its last frame: frames/s and events/s delivered, and the CPU the whole
// process (server and reader) spent per second of playback.
func BenchmarkPlayback50x(b *testing.B) {
	e := newEnv(b, nil)
	events := bigSession(1000)
	e.session(b, "s", events)
	last := "id: " + itoa(events[len(events)-1].Seq)
	var wall, cpu time.Duration
	var nFrames int
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.ts.URL+views.PlayURL("s", -1, 50), nil)
		start, c0 := time.Now(), cpuTime()
		res, err := e.client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
		n := 0
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "id: ") {
				n++
				if line == last {
					break
				}
			}
		}
		wall += time.Since(start)
		cpu += cpuTime() - c0
		nFrames += n
		cancel()
		res.Body.Close()
	}
	secs := wall.Seconds()
	b.ReportMetric(float64(nFrames)/secs, "frames/s")
	b.ReportMetric(float64(b.N*len(events))/secs, "events/s")
	b.ReportMetric(100*cpu.Seconds()/secs, "cpu-%")
	b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "ms/playback")
}
