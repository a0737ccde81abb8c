package web

import (
	"context"
	"maps"
	"sync"
)

// boardTails is what GET /board knows of the running sessions' logs
// between paints: per session, the seq its tail was read up to and the
// calls still waiting for their result there (callTail). A paint reads a
// session's events only when its summary's LastSeq moved past what is
// known (and then only the events after it), so a board whose sessions
// did not change since the last paint reads no events at all.
//
// It trusts that the events up to a known seq do not change: a session
// whose whole log is replaced or deleted is forgotten (forget, called
// from the board hub's replaced, which the commit feed's OnReplace
// reaches). A paint during which a log was replaced — from before it
// listed the sessions (begin) to its end — does not keep what it read
// (gen). Cached tails are never changed in place
// (callsInFlight copies before it applies events), so paints share them
// without holding the lock while they read the store.
type boardTails struct {
	mu   sync.Mutex
	gen  uint64 // counts forgets: a paint keeps its reads only if none came meanwhile
	tail map[string]*callTail
}

func newBoardTails() *boardTails { return &boardTails{tail: map[string]*callTail{}} }

// forget drops what is known of session id's log (replaced or deleted).
func (k *boardTails) forget(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gen++
	delete(k.tail, id)
}

// snapshot returns what is known, to start a board hub's tails from (the
// tails themselves are shared, never changed in place).
func (k *boardTails) snapshot() map[string]*callTail {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.tail)
}

// begin is the generation a paint starts at, taken before it lists the
// sessions: a log replaced after that (its summary listed may be the old
// log's) makes the paint keep nothing of what it read (inFlight).
func (k *boardTails) begin() uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.gen
}

// inFlight is callsInFlight over what is known: the running sessions'
// calls in flight, reading (in one read) only the tails that lag their
// summaries. It keeps the sessions of sums only: one that stopped
// running is dropped at the next paint; and nothing at all when a log was
// forgotten since gen (begin, taken before sums were listed).
func (k *boardTails) inFlight(ctx context.Context, src SessionSource, sums []SessionSummary, gen uint64) []inFlightCall {
	k.mu.Lock()
	tails := make(map[string]*callTail, len(sums))
	for i := range sums {
		if t := k.tail[sums[i].ID]; t != nil {
			tails[sums[i].ID] = t
		}
	}
	k.mu.Unlock()
	out := callsInFlight(ctx, src, sums, tails)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gen != gen {
		return out // a log was replaced while this paint read: keep nothing of it
	}
	for id, t := range tails {
		if cur := k.tail[id]; cur == nil || cur.last <= t.last {
			k.tail[id] = t
		}
	}
	// What tails lacks is a session not shown (no longer running) or one
	// whose read failed or found a gap: neither is known now.
	for id := range k.tail {
		if tails[id] == nil {
			delete(k.tail, id)
		}
	}
	return out
}
