package web_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"regexp"
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

// fanResult is what one phase of a fan-out benchmark measured: the
// commit-to-patch-received latencies of every viewer and event, the frames
// the viewers read, and the allocations of the whole process (server and
// the viewers' readers) while it published.
type fanResult struct {
	lat              []time.Duration
	frames, want     int
	mallocs, events  uint64
	delivered, short int // viewers that got every event / those that did not
}

// fanViewers opens n SSE streams on base+path(i) and has each read frames,
// handing every frame (its id, its data lines joined, when it arrived) to
// the viewer's own frame func, which returns the latencies of the events
// that frame delivered and whether the viewer has seen the last event.
// Once every stream has its response headers it calls publish; then it
// waits for every viewer to see the last event, 10 s at most after
// publish returns (then the streams are cut and the viewers that fell
// short counted).
func fanViewers(tb testing.TB, base string, n, want int, path func(i int) string,
	viewer func(i int) func(id, data string, now int64) ([]time.Duration, bool), publish func() int) fanResult {
	tb.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: n, DisableCompression: true}
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu        sync.Mutex
		r         fanResult
		ready     sync.WaitGroup
		done      sync.WaitGroup
		frames    atomic.Int64
		delivered atomic.Int64
		failed    atomic.Int64
	)
	r.want = want
	ready.Add(n)
	done.Add(n)
	for i := range n {
		frame := viewer(i)
		go func() {
			defer done.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path(i), nil)
			res, err := client.Do(req)
			if err != nil {
				failed.Add(1)
				ready.Done()
				return
			}
			defer res.Body.Close()
			if res.StatusCode != 200 {
				failed.Add(1)
				ready.Done()
				return
			}
			ready.Done()
			var mine []time.Duration
			defer func() {
				mu.Lock()
				r.lat = append(r.lat, mine...)
				mu.Unlock()
			}()
			sc := bufio.NewScanner(res.Body)
			sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
			var id string
			var data strings.Builder
			for sc.Scan() {
				line := sc.Bytes()
				switch {
				case len(line) == 0:
					if data.Len() == 0 && id == "" {
						continue
					}
					frames.Add(1)
					lat, last := frame(id, data.String(), time.Now().UnixNano())
					mine = append(mine, lat...)
					id = ""
					data.Reset()
					if last {
						delivered.Add(1)
						return
					}
				case len(line) > 4 && string(line[:4]) == "id: ":
					id = string(line[4:])
				case len(line) > 6 && string(line[:6]) == "data: ":
					data.Write(line[6:])
					data.WriteByte('\n')
				}
			}
		}()
	}
	ready.Wait()
	if f := failed.Load(); f > 0 {
		tb.Fatalf("%d of %d streams did not open", f, n)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	events := publish()
	waitc := make(chan struct{})
	go func() { done.Wait(); close(waitc) }()
	select {
	case <-waitc:
	case <-time.After(10 * time.Second):
		cancel()
		<-waitc
	}
	runtime.ReadMemStats(&m1)
	r.mallocs, r.events = m1.Mallocs-m0.Mallocs, uint64(events)
	r.frames = int(frames.Load())
	r.delivered = int(delivered.Load())
	r.short = n - r.delivered
	slices.Sort(r.lat)
	if len(r.lat) < want || r.short > 0 {
		tb.Logf("delivered %d of %d patches; %d of %d viewers short of the last event", len(r.lat), want, r.short, n)
	}
	return r
}

// report writes a phase's figures with the metric names prefixed.
func (r fanResult) report(b *testing.B, prefix string) {
	b.ReportMetric(pct(r.lat, 0.50), prefix+"-p50-ms")
	b.ReportMetric(pct(r.lat, 0.99), prefix+"-p99-ms")
	b.ReportMetric(float64(len(r.lat))/float64(max(r.want, 1)), prefix+"-delivered")
	b.ReportMetric(float64(r.mallocs)/float64(max(r.events, 1)), prefix+"-allocs/event")
}

// pace calls f(i) for i in [0, total) at rate per second and returns
// total.
func pace(rate, total int, f func(i int)) int {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := range total {
		<-tick.C
		f(i)
	}
	return total
}

var (
	boardCall = regexp.MustCompile(`<code>t(\d+)</code>`)
	// listCalls finds a list row's session and its count of calls.
	listCalls = regexp.MustCompile(`data-session-id="b(\d+)"[^\x00]*?data-testid="row-calls">([\d,]+)<`)
)

// BenchmarkBoardFanout: 100 viewers of /board/stream while 1,000 tool
// calls are appended at 500 events/s round-robin across 20 running
// sessions; each call has its own tool name ("t<i>"), so a viewer knows an
// event reached it when a board frame shows that call (or a later one of
// its session) in flight. Reports commit → board patch received p50/p99
// and the board frames each viewer read per event, beside — in the same
// run, as the baseline — the session pages' fan-out of the same events at
// the same rate to the same number of viewers (each on one session's
// /sessions/{id}/stream, spread evenly over the 20 sessions: each event
// reaches 5 of them), and the session list's fan-out to 100 viewers of
// /stream (an event reached a list viewer when its session's row counts
// its call), each phase from a fresh server.
func BenchmarkBoardFanout(b *testing.B) {
	const (
		viewers  = 100
		sessions = 20
		rate     = 500
		total    = 1000 // 2 s at rate; a multiple of sessions
	)
	// env builds a fresh server with the running sessions; commit[i] is
	// stamped when the store reports event i's commit (before the
	// server's own hook hands it to the broker). Event i is call "t<i>"
	// of session i%sessions, at seq base+i/sessions.
	type phase struct {
		e      *env
		commit []atomic.Int64
		events [sessions][]core.Event // the calls to append, per session
		base   int64
	}
	sid := func(s int) string { return fmt.Sprintf("b%02d", s) }
	setup := func(b *testing.B) *phase {
		p := &phase{commit: make([]atomic.Int64, total)}
		var blds [sessions]*coretest.Builder
		for s := range sessions {
			blds[s] = coretest.NewBuilder(t0)
			blds[s].TurnStart().StepStart().User("go")
			p.base = int64(len(blds[s].Events))
		}
		p.e = newEnv(b, func(d *web.Deps) {
			d.Runner = &fakeRunner{}
			d.Commits.OnCommit(func(id string, evs []core.Event) {
				s, err := strconv.Atoi(strings.TrimPrefix(id, "b"))
				if err != nil {
					return
				}
				now := time.Now().UnixNano()
				for _, ev := range evs {
					if i := int(ev.Seq-p.base)*sessions + s; ev.Seq >= p.base && i < total {
						p.commit[i].Store(now)
					}
				}
			})
		})
		for s := range sessions {
			p.e.session(b, sid(s), blds[s].Events)
		}
		for i := range total {
			s := i % sessions
			n := len(blds[s].Events)
			blds[s].Call("c"+itoa(int64(i)), "t"+itoa(int64(i)), `{"command":"make test"}`)
			p.events[s] = append(p.events[s], blds[s].Events[n:]...)
		}
		return p
	}
	publish := func(b *testing.B, p *phase) func() int {
		return func() int {
			return pace(rate, total, func(i int) {
				s := i % sessions
				p.e.append(b, sid(s), p.events[s][i/sessions])
			})
		}
	}
	lastSeq := func(p *phase) int64 { return p.base + total/sessions - 1 }

	var board, pages, list fanResult
	for b.Loop() {
		// The board: every event reaches every viewer.
		p := setup(b)
		board = fanViewers(b, p.e.ts.URL, viewers, viewers*total,
			func(int) string { return "/board/stream" },
			func(int) func(string, string, int64) ([]time.Duration, bool) {
				seen := make([]int, sessions) // the last event index shown, per session
				for s := range seen {
					seen[s] = s - sessions
				}
				left := sessions // sessions whose last call is not yet shown
				return func(_, data string, now int64) ([]time.Duration, bool) {
					var lat []time.Duration
					for _, m := range boardCall.FindAllStringSubmatch(data, -1) {
						k, _ := strconv.Atoi(m[1])
						if k >= total {
							continue
						}
						s := k % sessions
						for j := seen[s] + sessions; j <= k; j += sessions {
							// A render may read an event the store has
							// committed before its commit hook stamped it:
							// received at once (0).
							var d time.Duration
							if c := p.commit[j].Load(); c > 0 && c < now {
								d = time.Duration(now - c)
							}
							lat = append(lat, d)
							if j >= total-sessions {
								left--
							}
						}
						seen[s] = max(seen[s], k)
					}
					return lat, left == 0
				}
			}, publish(b, p))

		// The list: every event reaches every viewer as its row's count.
		p = setup(b)
		list = fanViewers(b, p.e.ts.URL, viewers, viewers*total,
			func(int) string { return "/stream" },
			func(int) func(string, string, int64) ([]time.Duration, bool) {
				seen := make([]int, sessions)
				for s := range seen {
					seen[s] = s - sessions
				}
				left := sessions
				return func(_, data string, now int64) ([]time.Duration, bool) {
					var lat []time.Duration
					for _, m := range listCalls.FindAllStringSubmatch(data, -1) {
						s, _ := strconv.Atoi(m[1])
						calls, _ := strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
						if s >= sessions || calls == 0 {
							continue
						}
						k := min((calls-1)*sessions+s, total-sessions+s)
						for j := seen[s] + sessions; j <= k; j += sessions {
							var d time.Duration
							if c := p.commit[j].Load(); c > 0 && c < now {
								d = time.Duration(now - c)
							}
							lat = append(lat, d)
							if j >= total-sessions {
								left--
							}
						}
						seen[s] = max(seen[s], k)
					}
					return lat, left == 0
				}
			}, publish(b, p))

		// The baseline: session pages, viewer v on session v%sessions.
		p = setup(b)
		pages = fanViewers(b, p.e.ts.URL, viewers, viewers*total/sessions,
			func(v int) string {
				return "/sessions/" + sid(v%sessions) + "/stream?after=" + itoa(p.base-1)
			},
			func(v int) func(string, string, int64) ([]time.Duration, bool) {
				s, prev, last := v%sessions, p.base-1, lastSeq(p)
				return func(id, _ string, now int64) ([]time.Duration, bool) {
					seq, err := strconv.ParseInt(id, 10, 64)
					if err != nil {
						return nil, false
					}
					var lat []time.Duration
					// A frame delivers every event up to its id.
					for q := prev + 1; q <= seq && q <= last; q++ {
						if c := p.commit[int(q-p.base)*sessions+s].Load(); c > 0 {
							lat = append(lat, time.Duration(now-c))
						}
					}
					prev = max(prev, seq)
					return lat, seq >= last
				}
			}, publish(b, p))
	}
	board.report(b, "board")
	pages.report(b, "page")
	list.report(b, "list")
	b.ReportMetric(float64(board.frames)/float64(viewers)/float64(total), "board-frames/event")
	b.ReportMetric(float64(pages.frames)/float64(viewers)/float64(total/sessions), "page-frames/event")
	b.ReportMetric(float64(list.frames)/float64(viewers)/float64(total), "list-frames/event")
	b.ReportMetric(pct(board.lat, 0.50)/max(pct(pages.lat, 0.50), 0.001), "x-page-p50")
	b.ReportMetric(pct(board.lat, 0.50)/max(pct(list.lat, 0.50), 0.001), "x-list-p50")
	b.ReportMetric(0, "ns/op")
}
