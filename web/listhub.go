package web

import (
	"context"
	"strings"
	"sync"
	"time"

	"prism/core"
	"prism/core/logkey"
	"prism/core/notes"
	"prism/core/price"
	"prism/views"
)

// listHub pushes session-list row changes. Flushes never overlap: a
// flush is armed only while none is armed or running, and a running flush
// re-arms itself for what changed meanwhile, so rows reach subscribers in
// the order their summaries were read.
type listHub struct {
	b      *Broker
	after  func(time.Duration, func()) // time.AfterFunc; tests step it
	prices price.Table                 // the owner's price table: rows show costs (nil: none)
	// attn returns a session's open attention firings (nil: none).
	attn func(ctx context.Context, id string) []notes.Note
	// forks counts a session's forks for its row (nil: none shown).
	forks func(ctx context.Context, id string) int

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
// the row) and as a prepend (it does not yet) — or, for a deleted session,
// as the remove of its row (removed; sum holds only the id).
type listFrame struct {
	sum            SessionSummary
	morph, prepend []byte
	removed        bool
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
		f, ok := l.frame(ctx, id)
		if !ok {
			continue
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

// frame renders session id's row as it is now: its morph and prepend, or
// its remove when the session is gone (deleted). ok is false when the row
// cannot be read or rendered (logged).
func (l *listHub) frame(ctx context.Context, id string) (f listFrame, ok bool) {
	sum, err := l.b.src.Summary(ctx, id)
	if core.ErrorCode(err) == core.CodeNotFound {
		remove := formatPatches([]views.Patch{{Selector: "#" + views.SessionRowID(id), Mode: "remove"}}, "")
		return listFrame{sum: SessionSummary{ID: id}, removed: true, morph: remove}, true
	}
	if err != nil {
		l.b.log.Debug("list: summary unavailable", logkey.SessionID, id, logkey.Err, err)
		return f, false
	}
	row := rowView(&sum, l.prices)
	if l.attn != nil {
		row.Attention = views.AttentionOf(l.attn(ctx, id))
	}
	if l.forks != nil {
		row.Forks = l.forks(ctx, id)
	}
	html, err := views.Render(ctx, views.SessionRow(row))
	if err != nil {
		l.b.log.Error("list: render failed", logkey.SessionID, id, logkey.Err, err)
		return f, false
	}
	return listFrame{
		sum:     sum,
		morph:   formatPatches([]views.Patch{{Mode: "outer", HTML: html}}, ""),
		prepend: formatPatches([]views.Patch{{Selector: "#session-rows", Mode: "prepend", HTML: html}}, ""),
	}, true
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
