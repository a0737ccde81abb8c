package web

import (
	"slices"
	"sync"

	"prism/core"
	"prism/views"
)

// chapterCache keeps the transport's chapters of recently replayed
// sessions, so that a page at an event — each move of a scrubbing reader
// — folds only the log up to that event, not the whole log again. An
// entry is used only for the very log it was made from (same last seq and
// time); a replaced log drops its session's entry (Broker.Replace).
type chapterCache struct {
	mu    sync.Mutex
	m     map[string]cachedChapters
	order []string // oldest first
}

type cachedChapters struct {
	last, lastTime int64
	ch             views.Chapters
	running        bool
}

// chapterCacheSize bounds the cache (a 10,000-event session's chapters
// take ~100 KB).
const chapterCacheSize = 32

func logEnd(events []core.Event) (int64, int64) {
	if n := len(events); n > 0 {
		return events[n-1].Seq, events[n-1].Time
	}
	return -1, 0
}

// lookup returns the chapters of exactly these events under key id.
func (c *chapterCache) lookup(id string, events []core.Event) (cachedChapters, bool) {
	last, lastTime := logEnd(events)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	return e, ok && e.last == last && e.lastTime == lastTime
}

// store keeps r's chapters of events under key id.
func (c *chapterCache) store(id string, events []core.Event, r *views.Replay) {
	last, lastTime := logEnd(events)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cachedChapters{}
	}
	if _, ok := c.m[id]; !ok {
		c.order = append(c.order, id)
		if len(c.order) > chapterCacheSize {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.m[id] = cachedChapters{last: last, lastTime: lastTime, ch: r.Chapters, running: r.Running}
}

// replay folds the events a reader may see at at (views.NewReplay),
// reusing the chapters of an earlier replay of the same log under key (a
// session id, or a share link's).
func (c *chapterCache) replay(key string, h core.SessionHeader, events []core.Event, at int64, p views.Presenter, rd views.Reader) *views.Replay {
	if e, ok := c.lookup(key, events); ok {
		return views.NewReplayOf(h, events, at, p, rd, e.ch, e.running)
	}
	r := views.NewReplay(h, events, at, p, rd)
	c.store(key, events, r)
	return r
}

// forget drops a session's entry (its log was replaced).
func (c *chapterCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[id]; ok {
		delete(c.m, id)
		c.order = slices.DeleteFunc(c.order, func(s string) bool { return s == id })
	}
}
