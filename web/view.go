package web

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"prism/core/redact"
	"prism/views"
)

// view is what a hub folds and renders: a session as its owner's pages
// show it (ownerView), or as a share link shows it (Server.linkView) —
// redacted when the link says so, read-only, with the link's URLs. Every
// stream of the same view shares one hub: one fold, one redaction pass and
// one rendered frame per update, whatever the number of readers.
type view struct {
	// key is the broker's key of the view's hub: the session id for the
	// owner's view, linkKey for a link's.
	key     string
	session string
	links   views.Links
	link    *linkView // nil: the owner's view
}

// linkView is what a share link's hub needs besides the session.
type linkView struct {
	id string // the link's id
	// redactor redacts what the link shows; nil when the link shows the
	// log as it was logged.
	redactor *redact.Redactor
	// reader is what the link's pages show their reader (the notes it
	// shows, read again when they change).
	reader func(ctx context.Context) views.Reader
	// aliases names the children the link nests by their names on the
	// link (Server.childAliases, as the link last read them:
	// Server.linkFamily); nil when the link nests none.
	aliases func(ctx context.Context) (map[string]string, error)
	// active reports errLinkEnded once the link no longer grants access
	// (revoked, expired), another error when it cannot tell; the hub asks
	// every Tuning.ShareCheck.
	active func(ctx context.Context) error
}

// ownerView is session id as its owner's pages show it.
func ownerView(id string) view {
	return view{key: id, session: id, links: views.SessionLinks(id)}
}

// linkKey is the broker's key of a live link's hub: its id with what
// decides its frames (redaction; a live link has no scope). A NUL cannot
// occur in a session id, so it never names an owner's hub.
func linkKey(shareID string, redacted bool) string {
	k := "\x00link\x00" + shareID
	if redacted {
		k += "\x00redacted"
	}
	return k
}

// errLinkEnded is why a link's hub stops when the link no longer grants
// access: its streams say shareEndedMessage.
var errLinkEnded = errors.New("share: the link was revoked or has expired")

// liveStats counts the live path's work, so tests and benchmarks can hold
// it to its promises (one fold and one redaction per event per view, one
// render per frame, one catch-up render per cursor) with counters rather
// than timings.
type liveStats struct {
	folded   atomic.Int64 // events folded by hubs (owner's and links')
	redacted atomic.Int64 // events redacted by link hubs
	frames   atomic.Int64 // frames rendered by hubs
	catchUps atomic.Int64 // catch-up frames rendered (from the log, or a link hub's log)
	pages    atomic.Int64 // share pages rendered (sharePageCache)
	dropped  atomic.Int64 // subscribers dropped from a hub's queue for holding too many bytes
}

// renderCache keeps recent renders by key, each made once: the readers
// that ask for the same key at once wait for the first one's render, and
// later ones reuse it. It holds at most maxSize bytes, or its newest
// render when that alone is larger (a crowd asking for a large render at
// once still shares it). A failed render is not kept.
type renderCache[K comparable] struct {
	mu      sync.Mutex
	m       map[K]*renderEntry
	order   []K // oldest first
	bytes   int
	maxSize int
}

type renderEntry struct {
	ready chan struct{}
	data  []byte
	err   error
}

// catchUpCache keeps a hub's recent catch-up frames, by the log generation
// and the range they cover: a crowd of readers that open the same page at
// once asks for the same range, which is rendered once.
type catchUpCache = renderCache[catchUpKey]

type catchUpKey struct {
	gen         int
	after, upTo int64
}

// catchUpCacheBytes bounds a hub's cached catch-up frames.
const catchUpCacheBytes = 4 << 20

// get returns the render of k, rendering it with render when no reader
// has yet.
func (c *renderCache[K]) get(ctx context.Context, k K, render func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[K]*renderEntry{}
	}
	if c.maxSize == 0 {
		c.maxSize = catchUpCacheBytes
	}
	if e, ok := c.m[k]; ok {
		c.mu.Unlock()
		select {
		case <-e.ready:
			return e.data, e.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e := &renderEntry{ready: make(chan struct{})}
	c.m[k] = e
	c.mu.Unlock()
	e.data, e.err = render()
	close(e.ready)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.err != nil {
		delete(c.m, k)
		return e.data, e.err
	}
	c.order = append(c.order, k)
	c.bytes += len(e.data)
	for c.bytes > c.maxSize && len(c.order) > 1 {
		old := c.order[0]
		c.order = c.order[1:]
		if o, ok := c.m[old]; ok {
			c.bytes -= len(o.data)
			delete(c.m, old)
		}
	}
	return e.data, e.err
}
