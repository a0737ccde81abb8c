package web_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"prism/backend"
	"prism/core"
	"prism/web"
)

// TestStream_ReplacedLogReRendersThePage: when the store replaces a
// session's whole log (a rewritten watched file), an open page is sent
// its header and transcript re-rendered from the new log in one morph, and
// then follows the new log live — although the new log is shorter than
// what the page had seen.
func TestStream_ReplacedLogReRendersThePage(t *testing.T) {
	e := newEnv(t, nil)
	old := openStep()
	old.Call("old-a", "note", `{}`).Result("old-a", "one", false, nil, nil)
	old.Call("old-b", "note", `{}`).Result("old-b", "two", false, nil, nil)
	e.watched(t, core.SessionHeader{ID: "s1", CreatedAt: t0, Cwd: "/work"}, old.Events[:7])
	sc := e.stream(t, "/sessions/s1/stream?after=6")
	old.StepEnd()
	e.append(t, "s1", old.Events[7])
	sc.until(t, func(ev sseEvent) bool { return ev.ID == "7" }) // live

	b := openStep()
	b.Call("new-a", "note", `{}`).Result("new-a", "fresh", false, nil, nil)
	e.watched(t, core.SessionHeader{ID: "s1", CreatedAt: t0, Cwd: "/other"}, b.Events)
	evs := sc.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), `id="transcript"`) })
	reset := evs[len(evs)-1]
	if reset.ID != "4" || reset.field("mode") != "" || reset.field("selector") != "" {
		t.Errorf("reset event: id %q, mode %q, selector %q; want id 4, an outer morph", reset.ID, reset.field("mode"), reset.field("selector"))
	}
	page := reset.Elements()
	got := cards(page)
	if !strings.Contains(got["call-new-a"], `data-state="ok"`) || got["call-old-a"] != "" || got["call-old-b"] != "" {
		t.Errorf("re-rendered transcript has cards %v", keys(got))
	}
	if !strings.Contains(page, `id="session-head"`) || !strings.Contains(page, "/other") {
		t.Errorf("the session header is not re-rendered from the new log: %.300s", page)
	}

	// The new log goes on from seq 5, below what the page had seen.
	b.Call("new-b", "note", `{}`)
	e.append(t, "s1", b.Events[5])
	evs = sc.until(t, func(ev sseEvent) bool { return ev.ID == "5" })
	if c := cards(evs[len(evs)-1].Elements()); !strings.Contains(c["call-new-b"], `data-state="pending"`) {
		t.Errorf("the new log's next call is not patched live: %+v", evs[len(evs)-1])
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// brokenAfterReplace fails every load once the log was replaced.
type brokenAfterReplace struct {
	backend.Source
	broken atomic.Bool
}

func (s *brokenAfterReplace) LoadSession(ctx context.Context, id string) (core.SessionHeader, []core.Event, error) {
	if s.broken.Load() {
		return core.SessionHeader{}, nil, core.Errorf(core.CodeUnavailable, "store offline")
	}
	return s.Source.LoadSession(ctx, id)
}

// TestStream_ReplacedLogThatCannotBeReadEndsTheStream: a replaced log the
// hub cannot reload ends its streams with the reason, instead of leaving
// pages on the old log.
func TestStream_ReplacedLogThatCannotBeReadEndsTheStream(t *testing.T) {
	var src *brokenAfterReplace
	e := newEnv(t, func(d *web.Deps) {
		src = &brokenAfterReplace{Source: d.Sessions.(backend.Source)}
		d.Sessions = src
	})
	b := openStep()
	e.watched(t, core.SessionHeader{ID: "s1", CreatedAt: t0}, b.Events)
	sc := e.stream(t, "/sessions/s1/stream?after=1")
	sc.until(t, func(ev sseEvent) bool { return ev.ID == "2" })
	src.broken.Store(true)
	e.watched(t, core.SessionHeader{ID: "s1", CreatedAt: t0, Cwd: "/elsewhere"}, b.Events[:2])
	evs := sc.rest(t)
	if len(evs) == 0 || !strings.Contains(evs[len(evs)-1].Elements(), "live updates stopped: store offline") {
		t.Errorf("stream ended with %+v", evs)
	}
}
