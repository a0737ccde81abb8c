package web

import (
	"context"
	"strings"
	"sync"
	"time"

	"prism/core/logkey"
	"prism/views"
)

// listHub pushes session-list row changes. Flushes never overlap: a
// flush is armed only while none is armed or running, and a running flush
// re-arms itself for what changed meanwhile, so rows reach subscribers in
// the order their summaries were read.
type listHub struct {
	b     *Broker
	after func(time.Duration, func()) // time.AfterFunc; tests step it

	mu       sync.Mutex
	subs     map[*listSub]struct{}
	dirty    map[string]bool
	armed    bool // a flush is scheduled
	flushing bool // a flush is running
	stopped  bool
	done     chan struct{} // closed by close: list streams end
}

type listSub struct {
	ch   chan listFrame
	kick chan struct{}
}

// listFrame is one changed row, formatted both as a morph (the page shows
// the row) and as a prepend (it does not yet).
type listFrame struct {
	sum            SessionSummary
	morph, prepend []byte
}

func (l *listHub) touch(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.subs) == 0 || l.stopped {
		return
	}
	l.dirty[id] = true
	l.armLocked()
}

// armLocked schedules a flush unless one is scheduled or running (the
// running one re-arms when it ends).
func (l *listHub) armLocked() {
	if l.armed || l.flushing || l.stopped || len(l.dirty) == 0 {
		return
	}
	l.armed = true
	l.after(l.b.tune.ListThrottle, l.flush)
}

func (l *listHub) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.stopped = true
		close(l.done)
	}
}

func (l *listHub) flush() {
	l.mu.Lock()
	dirty := l.dirty
	l.dirty = map[string]bool{}
	l.armed, l.flushing = false, true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.flushing = false
		l.armLocked()
		l.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for id := range dirty {
		sum, err := l.b.src.Summary(ctx, id)
		if err != nil {
			l.b.log.Debug("list: summary unavailable", logkey.SessionID, id, logkey.Err, err)
			continue
		}
		html, err := views.Render(ctx, views.SessionRow(rowView(&sum)))
		if err != nil {
			l.b.log.Error("list: render failed", logkey.SessionID, id, logkey.Err, err)
			continue
		}
		f := listFrame{
			sum:     sum,
			morph:   formatPatches([]views.Patch{{Mode: "outer", HTML: html}}, ""),
			prepend: formatPatches([]views.Patch{{Selector: "#session-rows", Mode: "prepend", HTML: html}}, ""),
		}
		l.mu.Lock()
		for s := range l.subs {
			select {
			case s.ch <- f:
			default:
				select {
				case s.kick <- struct{}{}:
				default:
				}
			}
		}
		l.mu.Unlock()
	}
}

func (l *listHub) subscribe() *listSub {
	s := &listSub{ch: make(chan listFrame, l.b.tune.Buffer), kick: make(chan struct{}, 1)}
	l.mu.Lock()
	l.subs[s] = struct{}{}
	l.mu.Unlock()
	return s
}

func (l *listHub) unsubscribe(s *listSub) {
	l.mu.Lock()
	delete(l.subs, s)
	l.mu.Unlock()
}

// matches reports whether a summary matches a list query's filters.
func matches(q ListQuery, s *SessionSummary) bool {
	switch {
	case q.Status != "" && s.Status != q.Status, q.HasErrors && s.Errors == 0:
		return false
	case q.Query == "":
		return true
	}
	text := strings.ToLower(q.Query)
	return strings.Contains(strings.ToLower(s.Title), text) || strings.Contains(strings.ToLower(s.ID), text)
}
