package web_test

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"prism/core"
	"prism/core/coretest"
	"prism/core/notes"
	"prism/core/search"
	"prism/db"
	"prism/web"
)

// BenchmarkParentFirstPaint: the first paint of a parent whose 20
// subagent calls each started a child of 200 calls (the children nested,
// collapsed), against the same parent log without children, in the same
// run.
func BenchmarkParentFirstPaint(b *testing.B) {
	const kids, calls = 20, 200
	for _, withKids := range []bool{false, true} {
		name := map[bool]string{false: "without-children", true: "20x200-children"}[withKids]
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, withNotes)
			ctx := context.Background()
			pb := coretest.NewBuilder(t0)
			pb.TurnStart().StepStart().User("delegate")
			seqs := map[string]int64{}
			for i := range kids {
				id := fmt.Sprintf("s%02d", i)
				pb.Call(id, "subagent", fmt.Sprintf(`{"description":"task %d","prompt":"Do it."}`, i))
				seqs[id] = pb.Events[len(pb.Events)-1].Seq
			}
			for i := range kids {
				pb.Result(fmt.Sprintf("s%02d", i), "done", false, nil, nil)
			}
			pb.StepEnd().TurnEnd(core.TurnCompleted)
			e.session(b, "p", pb.Events)
			if withKids {
				one := int64(1)
				for i := range kids {
					kid := fmt.Sprintf("k%02d", i)
					if err := e.store.CreateSession(ctx, core.SessionHeader{ID: kid, CreatedAt: t0, Cwd: "/work", ParentSession: "p",
						Origin: core.OriginSubagent, DelegationDepth: &one}); err != nil {
						b.Fatal(err)
					}
					kb := coretest.NewBuilder(t0)
					kb.TurnStart().StepStart().User("Do it.")
					for c := range calls {
						cid := fmt.Sprintf("c%d", c)
						kb.Call(cid, "note", `{"title":"x"}`).Result(cid, "# x\n- line one", false, nil, nil)
					}
					kb.StepEnd().TurnEnd(core.TurnCompleted)
					e.append(b, kid, kb.Events...)
					in, err := notes.Link("p", fmt.Sprintf("s%02d", i), seqs[fmt.Sprintf("s%02d", i)], notes.LinkData{Child: kid})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := e.store.PutNote(ctx, in); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ResetTimer()
			var size int
			for b.Loop() {
				res, page := e.get(b, "/sessions/p")
				if res.StatusCode != 200 {
					b.Fatal(res.StatusCode)
				}
				size = len(page)
			}
			b.ReportMetric(float64(size)/1024, "KB/page")
		})
	}
}

var nestedCall = regexp.MustCompile(`data-call-id="x(\d+)"`)

// BenchmarkChildFanout: 100 viewers of a parent's page stream while 100
// calls are appended to the child its pending subagent call nests, at 50
// events/s; each call has its own id ("x<i>"), so a parent viewer knows an
// event reached it when a frame's nested cards show that call (or a later
// one). Reports child commit → parent page patch received p50/p99 and the
// allocations of the whole process (server and the viewers' readers) per
// event, beside — in the same run, as the baseline — 100 viewers of the
// child's own page receiving the same events at the same rate, from a
// fresh server.
func BenchmarkChildFanout(b *testing.B) {
	const (
		viewers = 100
		rate    = 50
		total   = 100 // 2 s at rate
	)
	type phase struct {
		e      *env
		commit []atomic.Int64
		events []core.Event
		base   int64
	}
	setup := func(b *testing.B) *phase {
		p := &phase{commit: make([]atomic.Int64, total)}
		kb := coretest.NewBuilder(t0 + 100)
		kb.TurnStart().StepStart().User("Do it.")
		p.base = int64(len(kb.Events))
		for i := range total {
			kb.Call("x"+itoa(int64(i)), "note", `{"title":"x"}`)
		}
		p.events = kb.Events[p.base:]
		p.e = newEnv(b, func(d *web.Deps) {
			withNotes(d)
			d.Commits.OnCommit(func(id string, evs []core.Event) {
				if id != "k" {
					return
				}
				now := time.Now().UnixNano()
				for _, ev := range evs {
					if i := ev.Seq - p.base; i >= 0 && i < total {
						p.commit[i].Store(now)
					}
				}
			})
		})
		ctx := context.Background()
		pb := coretest.NewBuilder(t0)
		pb.TurnStart().StepStart().User("delegate").Call("s1", "subagent", `{"description":"task","prompt":"Do it."}`)
		p.e.session(b, "p", pb.Events)
		one := int64(1)
		if err := p.e.store.CreateSession(ctx, core.SessionHeader{ID: "k", CreatedAt: t0 + 100, Cwd: "/work", ParentSession: "p",
			Origin: core.OriginSubagent, DelegationDepth: &one}); err != nil {
			b.Fatal(err)
		}
		p.e.append(b, "k", kb.Events[:p.base]...)
		in, err := notes.Link("p", "s1", pb.Events[len(pb.Events)-1].Seq, notes.LinkData{Child: "k"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.e.store.PutNote(ctx, in); err != nil {
			b.Fatal(err)
		}
		return p
	}
	publish := func(b *testing.B, p *phase) func() int {
		return func() int {
			return pace(rate, total, func(i int) { p.e.append(b, "k", p.events[i]) })
		}
	}
	// at returns the latency of event j received at now: 0 for an event
	// a render read before the commit hook stamped it.
	at := func(p *phase, j int, now int64) time.Duration {
		if c := p.commit[j].Load(); c > 0 && c < now {
			return time.Duration(now - c)
		}
		return 0
	}

	var parent, child fanResult
	var parentFrames, childFrames float64
	for b.Loop() {
		// The parent's page: a frame delivers every call up to the
		// latest nested one it shows.
		p := setup(b)
		parent = fanViewers(b, p.e.ts.URL, viewers, viewers*total,
			func(int) string { return "/sessions/p/stream?after=3" },
			func(int) func(string, string, int64) ([]time.Duration, bool) {
				seen := -1
				return func(_, data string, now int64) ([]time.Duration, bool) {
					var lat []time.Duration
					for _, m := range nestedCall.FindAllStringSubmatch(data, -1) {
						k, _ := strconv.Atoi(m[1])
						for j := seen + 1; j <= k && j < total; j++ {
							lat = append(lat, at(p, j, now))
						}
						seen = max(seen, k)
					}
					return lat, seen >= total-1
				}
			}, publish(b, p))
		parentFrames = float64(parent.frames) / viewers / total

		// The child's own page: a frame delivers every event up to its id.
		p = setup(b)
		child = fanViewers(b, p.e.ts.URL, viewers, viewers*total,
			func(int) string { return "/sessions/k/stream?after=" + itoa(p.base-1) },
			func(int) func(string, string, int64) ([]time.Duration, bool) {
				prev, last := p.base-1, p.base+total-1
				return func(id, _ string, now int64) ([]time.Duration, bool) {
					seq, err := strconv.ParseInt(id, 10, 64)
					if err != nil {
						return nil, false
					}
					var lat []time.Duration
					for q := prev + 1; q <= seq && q <= last; q++ {
						lat = append(lat, at(p, int(q-p.base), now))
					}
					prev = max(prev, seq)
					return lat, seq >= last
				}
			}, publish(b, p))
		childFrames = float64(child.frames) / viewers / total
	}
	parent.report(b, "parent")
	child.report(b, "child")
	b.ReportMetric(parentFrames, "parent-frames/event")
	b.ReportMetric(childFrames, "child-frames/event")
	b.ReportMetric(pct(parent.lat, 0.50)/max(pct(child.lat, 0.50), 0.001), "x-child-p50")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkChildEventAllocs: the cost of one child commit to the open
// pages of its parent, whatever the child's log length. A parent's
// subagent call nests child "k", whose log already holds 10 or 1,000
// calls; 10 viewers follow the parent's page stream while 50 more calls
// are appended to the child one at a time, each appended once every
// viewer has received the previous one (so each is its own frame).
// Reports the allocations of the whole process (server and the viewers'
// readers) per child event for both lengths, in the same run, and their
// ratio (1 when a child event costs the same at any length): counted from
// the first event's append to the last one's delivery, once every viewer
// has its first frame (so a hub's one-time work is not the events').
func BenchmarkChildEventAllocs(b *testing.B) {
	const (
		viewers = 10
		total   = 50
	)
	lengths := []int{10, 1000}
	run := func(b *testing.B, length int) fanResult {
		kb := coretest.NewBuilder(t0 + 100)
		kb.TurnStart().StepStart().User("Do it.")
		for i := range length {
			kb.Call("y"+itoa(int64(i)), "note", `{"title":"y"}`)
		}
		base := len(kb.Events)
		for i := range total {
			kb.Call("x"+itoa(int64(i)), "note", `{"title":"x"}`)
		}
		e := newEnv(b, withNotes)
		ctx := context.Background()
		pb := coretest.NewBuilder(t0)
		pb.TurnStart().StepStart().User("delegate").Call("s1", "subagent", `{"description":"task","prompt":"Do it."}`)
		e.session(b, "p", pb.Events)
		one := int64(1)
		if err := e.store.CreateSession(ctx, core.SessionHeader{ID: "k", CreatedAt: t0 + 100, Cwd: "/work", ParentSession: "p",
			Origin: core.OriginSubagent, DelegationDepth: &one}); err != nil {
			b.Fatal(err)
		}
		e.append(b, "k", kb.Events[:base]...)
		in, err := notes.Link("p", "s1", pb.Events[len(pb.Events)-1].Seq, notes.LinkData{Child: "k"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.store.PutNote(ctx, in); err != nil {
			b.Fatal(err)
		}
		// The search index files the setup's log after its commits
		// (db's index lag): file it now, or the store's work on the
		// long log would count as the live path's.
		q, err := search.Parse("y", time.Now())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.store.Search(ctx, q, db.SearchOptions{}); err != nil {
			b.Fatal(err)
		}
		// got[i] counts the viewers that have seen call x<i>; done[i]
		// closes when all have.
		got := make([]atomic.Int64, total)
		done := make([]chan struct{}, total)
		for i := range done {
			done[i] = make(chan struct{})
		}
		// Each viewer's first frame is the nesting card its hub sends a
		// new stream (the noted calls' cards): publishing starts once
		// every viewer has it, so the hub's one-time fold of the child
		// is not counted as the events'.
		var primed atomic.Int64
		allPrimed := make(chan struct{})
		var mallocs uint64
		r := fanViewers(b, e.ts.URL, viewers, 0,
			func(int) string { return "/sessions/p/stream?after=" + itoa(pb.Events[len(pb.Events)-1].Seq) },
			func(int) func(string, string, int64) ([]time.Duration, bool) {
				seen, first := -1, true
				return func(_, data string, _ int64) ([]time.Duration, bool) {
					if first {
						first = false
						if primed.Add(1) == viewers {
							close(allPrimed)
						}
					}
					for _, m := range nestedCall.FindAllStringSubmatch(data, -1) {
						k, _ := strconv.Atoi(m[1])
						for j := seen + 1; j <= k && j < total; j++ {
							if got[j].Add(1) == viewers {
								close(done[j])
							}
						}
						seen = max(seen, k)
					}
					return nil, seen >= total-1
				}
			}, func() int {
				select {
				case <-allPrimed:
				case <-time.After(10 * time.Second):
					b.Fatalf("log %d: not every viewer of the parent got its first frame", length)
				}
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				for i := range total {
					e.append(b, "k", kb.Events[base+i])
					select {
					case <-done[i]:
					case <-time.After(10 * time.Second):
						b.Fatalf("log %d: call x%d did not reach every viewer of the parent", length, i)
					}
				}
				runtime.ReadMemStats(&m1)
				mallocs = m1.Mallocs - m0.Mallocs
				return total
			})
		r.mallocs = mallocs // from the first event's append to the last one's delivery
		return r
	}
	res := make([]fanResult, len(lengths))
	for b.Loop() {
		for i, n := range lengths {
			res[i] = run(b, n)
		}
	}
	for i, n := range lengths {
		b.ReportMetric(float64(res[i].mallocs)/float64(max(res[i].events, 1)), fmt.Sprintf("log%d-allocs/event", n))
	}
	b.ReportMetric(float64(res[1].mallocs)/float64(max(res[1].events, 1))/max(float64(res[0].mallocs)/float64(max(res[0].events, 1)), 1), "x-log1000/log10")
	b.ReportMetric(0, "ns/op")
}
