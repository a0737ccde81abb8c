package pgstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"prism/core"
	"prism/core/logkey"
	"prism/store"
)

// The NOTIFY channels.
const (
	// channelEvents carries "<session id> <last seq>" after every commit
	// that changed a session ("<session id> deleted" after one that
	// deleted it).
	channelEvents = "prism_events"
	// channelCommands carries the id of a session_commands row.
	channelCommands = "prism_commands"
	// channelAnswers carries the id of an answered session_commands row.
	channelAnswers = "prism_answers"
	// channelNotes carries the id of a session after every commit that
	// wrote one of its notes (PutNote, RemoveNote).
	channelNotes = "prism_notes"
)

// deletedNote stands for the last seq of a deleted session in a
// channelEvents payload.
const deletedNote = "deleted"

// cursor is what this node delivered of one session: up to seq, in log
// generation gen.
type cursor struct {
	seq int64
	gen int32
}

// hint says a session changed: this node's own commit (with its events)
// or another node's NOTIFY (seq only).
type hint struct {
	id      string
	seq     int64
	deleted bool // another node deleted the session
	notes   bool // a node wrote one of the session's notes
	local   *change
	resync  *resync
}

// resync is the state of every session when the LISTEN connection was
// (re)established: what the node may have missed while it was not
// listening.
type resync struct {
	initial bool
	seq     map[string]cursor
}

// fanout delivers every committed change of every session to
// Options.Committed exactly once and in seq order, whichever node made it.
// Its deliverer goroutine owns the cursors.
type fanout struct {
	st *Store

	mu      sync.Mutex
	queue   []hint
	wake    chan struct{}
	idle    *sync.Cond // signalled when the queue is empty and nothing is being delivered
	working bool

	seen map[string]cursor // owned by the deliverer
	// mine holds the seqs, per session, of this node's commits not yet
	// delivered (claim); guarded by mineMu.
	mineMu sync.Mutex
	mine   map[string]map[int64]bool
	// gone holds the sessions whose deletion was delivered (and that were
	// not created again since), so a deletion this node hears of twice —
	// its own commit and its own NOTIFY — is delivered once. Owned by the
	// deliverer; it grows by one id per deleted session.
	gone map[string]bool

	listenPID atomic.Uint32 // the LISTEN connection's backend (tests)
	connects  atomic.Int64  // how many times it (re)connected

	answers sync.Map // command id → chan struct{}

	// holdReconnect, when set (tests), runs before each reconnection.
	holdReconnect atomic.Pointer[func()]
}

func newFanout(st *Store) *fanout {
	f := &fanout{st: st, wake: make(chan struct{}, 1), seen: map[string]cursor{}, gone: map[string]bool{}}
	f.idle = sync.NewCond(&f.mu)
	return f
}

// start connects the LISTEN connection (failing Open when it cannot) and
// starts the listener and the deliverer.
func (f *fanout) start(ctx, bg context.Context) error {
	conn, err := f.connect(ctx)
	if err != nil {
		return err
	}
	f.st.bg.Go(func() { f.deliver(bg) })
	f.st.bg.Go(func() { f.listen(bg, conn) })
	return nil
}

// connect opens the LISTEN connection, listens, and queues a resync taken
// after LISTEN took effect (so that no commit falls between the two).
func (f *fanout) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := f.st.conn(ctx, "listen")
	if err != nil {
		return nil, err
	}
	for _, ch := range []string{channelEvents, channelCommands, channelAnswers, channelNotes} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			conn.Close(context.Background()) //nolint:errcheck
			return nil, err
		}
	}
	rows, err := conn.Query(ctx, "SELECT id, last_seq, log_gen FROM sessions")
	if err != nil {
		conn.Close(context.Background()) //nolint:errcheck
		return nil, err
	}
	rs := &resync{initial: f.connects.Load() == 0, seq: map[string]cursor{}}
	for rows.Next() {
		var id string
		var c cursor
		if err := rows.Scan(&id, &c.seq, &c.gen); err != nil {
			rows.Close()
			conn.Close(context.Background()) //nolint:errcheck
			return nil, err
		}
		rs.seq[id] = c
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		conn.Close(context.Background()) //nolint:errcheck
		return nil, err
	}
	f.listenPID.Store(conn.PgConn().PID())
	f.connects.Add(1)
	f.push(hint{resync: rs})
	if !rs.initial {
		// Locks may have ended with the connections (a database
		// restart): look for sessions whose node is gone now.
		f.st.orph.poke()
	}
	// Commands sent while this node was not listening.
	f.st.bg.Go(func() { f.st.own.pendingCommands(context.Background()) })
	f.answers.Range(func(_, ch any) bool {
		select {
		case ch.(chan struct{}) <- struct{}{}:
		default:
		}
		return true
	})
	return conn, nil
}

// listen reads notifications until bg ends; a lost connection is
// reconnected (with a growing pause) and caught up.
func (f *fanout) listen(bg context.Context, conn *pgx.Conn) {
	pause := 50 * time.Millisecond
	for {
		err := f.receive(bg, conn)
		conn.Close(context.Background()) //nolint:errcheck
		if bg.Err() != nil {
			return
		}
		f.st.log.Warn("lost the LISTEN connection; reconnecting", logkey.Err, err)
		for {
			select {
			case <-bg.Done():
				return
			case <-time.After(pause):
			}
			if hold := f.holdReconnect.Load(); hold != nil {
				(*hold)()
			}
			if conn, err = f.connect(bg); err == nil {
				f.st.log.Info("LISTEN connection back; catching up")
				pause = 50 * time.Millisecond
				break
			}
			pause = min(2*pause, 5*time.Second)
			f.st.log.Warn("cannot reconnect the LISTEN connection", logkey.Err, err)
		}
	}
}

func (f *fanout) receive(bg context.Context, conn *pgx.Conn) error {
	for {
		n, err := conn.WaitForNotification(bg)
		if err != nil {
			return err
		}
		f.dispatch(n)
	}
}

func (f *fanout) dispatch(n *pgconn.Notification) {
	switch n.Channel {
	case channelEvents:
		i := strings.LastIndexByte(n.Payload, ' ')
		if i < 0 {
			return
		}
		if n.Payload[i+1:] == deletedNote {
			f.push(hint{id: n.Payload[:i], deleted: true})
			return
		}
		seq, err := strconv.ParseInt(n.Payload[i+1:], 10, 64)
		if err != nil {
			return
		}
		f.push(hint{id: n.Payload[:i], seq: seq})
	case channelNotes:
		f.push(hint{id: n.Payload, notes: true})
	case channelCommands:
		if id, err := strconv.ParseInt(n.Payload, 10, 64); err == nil {
			f.st.bg.Go(func() { f.st.own.handle(context.Background(), id) })
		}
	case channelAnswers:
		if ch, ok := f.answers.Load(n.Payload); ok {
			select {
			case ch.(chan struct{}) <- struct{}{}:
			default:
			}
		}
	}
}

// local queues this node's committed changes, in commit order.
func (f *fanout) local(changes []change) {
	for i := range changes {
		c := &changes[i]
		f.push(hint{id: c.SessionID, seq: c.lastSeq, local: c})
	}
}

func (f *fanout) push(h hint) {
	f.mu.Lock()
	f.queue = append(f.queue, h)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// flush waits until everything queued so far has been delivered (Close).
func (f *fanout) flush() {
	f.mu.Lock()
	for len(f.queue) > 0 || f.working {
		f.idle.Wait()
	}
	f.mu.Unlock()
}

// deliver is the deliverer goroutine.
func (f *fanout) deliver(bg context.Context) {
	for {
		select {
		case <-bg.Done():
			return
		case <-f.wake:
		}
		for {
			f.mu.Lock()
			q := f.queue
			f.queue = nil
			f.working = len(q) > 0
			if !f.working {
				f.idle.Broadcast()
				f.mu.Unlock()
				break
			}
			f.mu.Unlock()
			f.process(bg, q)
		}
	}
}

// process delivers a run of hints: own commits that continue what was
// delivered go out as they are; anything else is read from the table
// after the session's cursor (one query for all of them).
func (f *fanout) process(ctx context.Context, q []hint) {
	fetch := map[string]bool{}
	// deletedHere: this node's own deletions that a read in this run
	// covers; the read delivers them even for a session it never
	// delivered as created.
	deletedHere := map[string]bool{}
	var order []string
	need := func(id string) {
		if !fetch[id] {
			fetch[id] = true
			order = append(order, id)
		}
	}
	for _, h := range q {
		switch {
		case h.resync != nil:
			if h.resync.initial {
				for id, c := range h.resync.seq {
					if _, ok := f.seen[id]; !ok {
						f.seen[id] = c
					}
				}
				continue
			}
			for id, c := range h.resync.seq {
				if cur, ok := f.seen[id]; !ok || cur != c {
					need(id)
				}
				// Notes written while this node was not listening.
				f.emit(store.Commit{SessionID: id, Notes: true})
			}
		case h.notes:
			f.emit(store.Commit{SessionID: h.id, Notes: true})
		case fetch[h.id]:
			// Already behind: the read covers it.
			if h.local != nil && h.local.Deleted {
				deletedHere[h.id] = true
			}
		case h.deleted:
			need(h.id) // the read finds it gone
		case h.local != nil:
			c := h.local
			cur, known := f.seen[h.id]
			switch {
			case c.Deleted:
				f.emitDeleted(h.id)
			case c.Replaced:
				f.takeMine(h.id, c.lastSeq)
				f.emit(c.Commit)
				f.seen[h.id] = cursor{seq: c.lastSeq, gen: c.gen}
			case c.Created && !known:
				f.takeMine(h.id, c.lastSeq)
				f.emit(c.Commit)
				f.seen[h.id] = cursor{seq: c.lastSeq, gen: c.gen}
			case known && cur.gen == c.gen && len(c.Events) > 0 && c.Events[0].Seq == cur.seq+1:
				f.takeMine(h.id, c.lastSeq)
				f.emit(c.Commit)
				f.seen[h.id] = cursor{seq: c.lastSeq, gen: c.gen}
			case known && cur.gen == c.gen && c.lastSeq <= cur.seq:
				// Delivered already (read back after another node's note).
			default:
				need(h.id)
			}
		default:
			if cur, ok := f.seen[h.id]; !ok || h.seq > cur.seq {
				need(h.id)
			}
		}
	}
	if len(order) > 0 {
		f.catchUp(ctx, order, deletedHere)
	}
}

// catchUp reads what this node has not delivered of sessions ids and
// delivers it: a session it never saw as created with its whole log, a
// session whose log was replaced as replaced, else the events after its
// cursor. Events this node claimed (its own commits, claim) go out in
// commits of their own, with Local set.
func (f *fanout) catchUp(ctx context.Context, ids []string, deletedHere map[string]bool) {
	after := make([]int64, len(ids))
	for i, id := range ids {
		after[i] = -1
		if c, ok := f.seen[id]; ok {
			after[i] = c.seq
		}
	}
	// The whole read is tried again, not only the query: after an outage
	// a pooled connection that died may fail only while its rows are read
	// ("unexpected EOF"), and a catch-up given up is never asked again.
	var byID map[string]*caughtUp
	var err error
	for attempt := 0; ; attempt++ {
		byID, err = f.readAfter(ctx, ids, after)
		if err == nil || ctx.Err() != nil || attempt == 20 {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			f.st.log.Error("fan-out: cannot read other nodes' commits", logkey.Sessions, len(ids), logkey.Err, err)
		}
		return
	}
	for _, id := range ids {
		g := byID[id]
		cur, known := f.seen[id]
		if g == nil { // no such session (any more)
			if known || deletedHere[id] {
				f.emitDeleted(id)
			}
			continue
		}
		mine := f.takeMine(id, g.last)
		switch {
		case !known:
			// Created with the log's first run, the rest appended: a run
			// of this node's own events is Local.
			runs := localRuns(g.events, mine)
			if len(runs) == 0 {
				runs = []eventRun{{}}
			}
			for i, run := range runs {
				f.emit(store.Commit{SessionID: id, Created: i == 0, Events: run.events, Local: run.local})
			}
		case cur.gen != g.gen:
			f.emit(store.Commit{SessionID: id, Replaced: true})
		case len(g.events) > 0:
			for _, run := range localRuns(g.events, mine) {
				f.emit(store.Commit{SessionID: id, Events: run.events, Local: run.local})
			}
		default:
			continue
		}
		// One statement read the row and the events: they end at its
		// last_seq.
		f.seen[id] = cursor{seq: g.last, gen: g.gen}
	}
}

// caughtUp is what catchUp read of one session: its row's last seq and
// log generation, and its events after the cursor.
type caughtUp struct {
	last   int64
	gen    int32
	events []core.Event
}

// readAfter reads, in one statement, the sessions of ids with their events
// after the seq of after at the same index; a session that is gone is
// absent. A stored event it cannot decode is logged and left out.
func (f *fanout) readAfter(ctx context.Context, ids []string, after []int64) (map[string]*caughtUp, error) {
	rows, err := f.st.pool.Query(ctx, `SELECT c.id, s.last_seq, s.log_gen, e.seq, e.type, e.time, e.data, e.ignorable, e.surface_op, e.source_event_seqs
		FROM unnest($1::text[], $2::bigint[]) AS c(id, after)
		JOIN sessions s ON s.id = c.id
		LEFT JOIN events e ON e.session_id = c.id AND e.seq > c.after
		ORDER BY c.id, e.seq`, ids, after)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := map[string]*caughtUp{}
	for rows.Next() {
		var id string
		var g caughtUp
		var seq *int64
		var typ, data, surface, sources *string
		var at *int64
		var ign *bool
		if err := rows.Scan(&id, &g.last, &g.gen, &seq, &typ, &at, &data, &ign, &surface, &sources); err != nil {
			return nil, err
		}
		cur := byID[id]
		if cur == nil {
			cur = &caughtUp{last: g.last, gen: g.gen}
			byID[id] = cur
		}
		if seq == nil {
			continue
		}
		e := core.Event{Seq: *seq, Type: *typ, Time: *at, Data: []byte(*data), Ignorable: *ign}
		var derr error
		if surface != nil {
			e.SurfaceOp, derr = store.DecodeSurfaceOp(*surface)
		}
		if derr == nil && sources != nil {
			e.SourceEventSeqs, derr = store.DecodeSeqs(*sources)
		}
		if derr != nil {
			f.st.log.Error("fan-out: stored event unreadable", logkey.SessionID, id, logkey.Seq, e.Seq, logkey.Err, derr)
			continue
		}
		cur.events = append(cur.events, e)
	}
	return byID, rows.Err()
}

// claim records the events of changes as this node's own before their
// transaction commits — its NOTIFY may reach the LISTEN connection before
// local hands the changes over — so a read of the table that delivers them
// still marks them Local. unclaim undoes it when the commit failed.
func (f *fanout) claim(changes []change) {
	f.mineMu.Lock()
	defer f.mineMu.Unlock()
	for _, c := range changes {
		if len(c.Events) == 0 {
			continue
		}
		if f.mine == nil {
			f.mine = map[string]map[int64]bool{}
		}
		if f.mine[c.SessionID] == nil {
			f.mine[c.SessionID] = map[int64]bool{}
		}
		for _, e := range c.Events {
			f.mine[c.SessionID][e.Seq] = true
		}
	}
}

func (f *fanout) unclaim(changes []change) {
	f.mineMu.Lock()
	defer f.mineMu.Unlock()
	for _, c := range changes {
		for _, e := range c.Events {
			delete(f.mine[c.SessionID], e.Seq)
		}
		if len(f.mine[c.SessionID]) == 0 {
			delete(f.mine, c.SessionID)
		}
	}
}

// takeMine returns the claimed seqs of session id up to last (what a
// delivery up to last covers) and forgets them.
func (f *fanout) takeMine(id string, last int64) map[int64]bool {
	f.mineMu.Lock()
	defer f.mineMu.Unlock()
	out := map[int64]bool{}
	for seq := range f.mine[id] {
		if seq <= last {
			out[seq] = true
			delete(f.mine[id], seq)
		}
	}
	if len(f.mine[id]) == 0 {
		delete(f.mine, id)
	}
	return out
}

type eventRun struct {
	events []core.Event
	local  bool
}

// localRuns splits events into runs of this node's own (local) and other
// nodes' events, in order.
func localRuns(events []core.Event, local map[int64]bool) []eventRun {
	var out []eventRun
	for i, e := range events {
		l := local[e.Seq]
		if i == 0 || out[len(out)-1].local != l {
			out = append(out, eventRun{local: l, events: events[i:i:len(events)]})
		}
		r := &out[len(out)-1]
		r.events = r.events[:len(r.events)+1]
	}
	return out
}

// emitDeleted delivers the deletion of session id once. The node's watch
// mark of it goes too (a deletion on another node; this node's own
// dropped it at commit).
func (f *fanout) emitDeleted(id string) {
	f.st.marks.Drop(id)
	delete(f.seen, id)
	if f.gone[id] {
		return
	}
	f.gone[id] = true
	f.emit(store.Commit{SessionID: id, Deleted: true})
}

func (f *fanout) emit(c store.Commit) {
	if !c.Deleted {
		delete(f.gone, c.SessionID) // it exists (again)
	}
	if f.st.opts.Committed != nil {
		f.st.opts.Committed(c)
	}
}

// ListenPID returns the backend pid of this node's LISTEN connection (0
// before it connected): what an operator — or a test — terminates to cut
// it.
func (st *Store) ListenPID() uint32 { return st.fan.listenPID.Load() }

// Reconnects returns how many times the LISTEN connection was established
// (1 after Open).
func (st *Store) Reconnects() int64 { return st.fan.connects.Load() }

// errNoOwner is an error of Forward.
var errNoOwner = errors.New("no node runs the session")
