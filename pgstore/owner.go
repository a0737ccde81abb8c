package pgstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"prism/core"
	"prism/core/logkey"
	"prism/store"
)

// owner holds this node's session locks on a connection of its own: a
// session-level advisory lock per live session the node created, held
// until the node closes (or the connection dies: then no node holds it,
// which is what a crashed node looks like). PostgreSQL keeps advisory
// locks in its shared lock table (max_locks_per_transaction ×
// max_connections entries), which bounds the sessions all nodes run at once.
type owner struct {
	st *Store

	mu   sync.Mutex
	conn *pgx.Conn
	held map[string]bool
	// creating are this node's creates in flight, by session id (claim to
	// its settle): who of them may give the id's lock back.
	creating map[string]*creates
	// claimed, when set (tests), runs after each claim a create took,
	// before the create writes anything.
	claimed func(id string)
	// failed holds the sessions of this node whose append failed (their
	// core.Session refuses further appends) and why, until the sweep
	// (orphans.go) repaired them; their locks were given back.
	failed map[string]*core.CancelCause

	handler Handler
}

func newOwner(st *Store) *owner {
	return &owner{st: st, held: map[string]bool{}, creating: map[string]*creates{}, failed: map[string]*core.CancelCause{}}
}

// creates are the creates of one session id in flight on this node at
// once (concurrent requests naming one id): the id's lock is the node's
// while any of them runs, and stays when one of them created the session
// — whichever took the lock — or when the node held it before them (it
// runs that session). It is given back only when none of them created it
// and the first of them took it.
type creates struct {
	n    int  // in flight
	took bool // the first of them took the lock (the node held none)
	made bool // one of them created the session
}

// errClaimedElsewhere is claim's refusal: another node holds the id's
// lock (it runs that session, or is creating it).
var errClaimedElsewhere = errors.New("another node runs it")

// claim takes session id's lock for this node, for a create of that
// session; the create calls settle once it knows whether it created the
// session. A create that fails gives the lock back only when no other
// create of the id in flight beside it succeeded and the node did not hold
// the lock before them (creates): the lock stays with the session that
// runs.
func (o *owner) claim(ctx context.Context, id string) (settle func(created bool), err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	settle = func(created bool) { o.settle(id, created) }
	if c := o.creating[id]; c != nil {
		c.n++
		return settle, nil
	}
	if o.held[id] {
		o.creating[id] = &creates{n: 1}
		return settle, nil
	}
	if o.conn == nil || o.conn.IsClosed() {
		if err := o.reconnectLocked(ctx); err != nil {
			return nil, translate(err, "claim session "+id)
		}
	}
	var ok bool
	err = o.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", sessionLockKey(id)).Scan(&ok)
	if err != nil && isConnErr(err) {
		// The connection died since its last use (a database restart
		// the sweep has not noticed yet): a new one, once.
		if rerr := o.reconnectLocked(ctx); rerr != nil {
			return nil, translate(rerr, "claim session "+id)
		}
		err = o.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", sessionLockKey(id)).Scan(&ok)
	}
	if err != nil {
		return nil, translate(err, "claim session "+id)
	}
	if !ok {
		return nil, core.Errorf(core.CodeConflict, "claim session %s: %w", id, errClaimedElsewhere)
	}
	o.held[id] = true
	o.creating[id] = &creates{n: 1, took: true}
	return settle, nil
}

// settle ends one create of session id that claim admitted: created
// reports whether it created the session. The last create of the id in
// flight gives the lock back when none of them created the session and
// the first of them took the lock.
func (o *owner) settle(id string, created bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.creating[id]
	if c == nil {
		return
	}
	c.n--
	c.made = c.made || created
	if c.n > 0 {
		return
	}
	delete(o.creating, id)
	if c.took && !c.made {
		o.releaseLocked(id)
	}
}

// reconnectLocked opens a new lock connection and takes again the locks
// of the sessions this node holds: the old connection died and its locks
// with it. A lock another node took meanwhile (its sweep repaired the
// session: then this node's appends to it conflict) is lost to this node.
// The caller holds o.mu.
func (o *owner) reconnectLocked(ctx context.Context) error {
	conn, err := o.st.conn(ctx, "locks")
	if err != nil {
		return err
	}
	if o.conn != nil {
		o.conn.Close(context.Background()) //nolint:errcheck // dead already
		retaken := 0
		if len(o.held) > 0 {
			// The old backend may not have ended yet (the server ends a
			// connection's locks when its backend exits): wait for it a
			// little, never for long. A repair another node started
			// meanwhile makes this wait until it commits.
			if _, err := conn.Exec(ctx, "SET lock_timeout = '2s'"); err != nil {
				conn.Close(context.Background()) //nolint:errcheck
				return err
			}
		}
		for held := range o.held {
			if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", sessionLockKey(held)); err != nil {
				if conn.IsClosed() || isConnErr(err) {
					// The next attempt takes them all again.
					conn.Close(context.Background()) //nolint:errcheck
					return err
				}
				o.st.log.Error("lost the lock of a running session: another node took it", logkey.SessionID, held, logkey.Err, err)
				delete(o.held, held)
				continue
			}
			retaken++
		}
		if retaken > 0 {
			o.st.log.Info("lock connection back: took the running sessions' locks again", logkey.Sessions, retaken)
		}
	}
	o.conn = conn
	return nil
}

// lockPingTimeout bounds the check of the lock connection.
const lockPingTimeout = 2 * time.Second

// keep checks that the lock connection is alive and, when it died (a
// database restart, a terminated backend), reconnects and takes this
// node's locks again, so that a session this node still runs never looks
// ownerless for longer than one sweep interval. Other nodes wait longer
// than that before they repair a session whose lock is free (orphans.go).
func (o *owner) keep(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conn == nil {
		return nil // nothing claimed yet
	}
	if !o.conn.IsClosed() {
		pctx, cancel := context.WithTimeout(ctx, lockPingTimeout)
		err := o.conn.Ping(pctx)
		cancel()
		if err == nil {
			return nil
		}
	}
	cctx, cancel := context.WithTimeout(ctx, lockConnectTimeout)
	defer cancel()
	if err := o.reconnectLocked(cctx); err != nil {
		return translate(err, "reconnect the lock connection")
	}
	return nil
}

// lockConnectTimeout bounds keep's reconnection (claims wait for it).
const lockConnectTimeout = 10 * time.Second

// holds reports whether this node holds session id's lock: it created the
// session and its appends have not failed.
func (o *owner) holds(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.held[id]
}

// appendFailed records that an append to session id failed with err. If
// this node holds the session, its core.Session now refuses further
// appends: nothing will close its turn here. The node gives its lock back
// and remembers why, and its sweep repairs the session (with that reason)
// as soon as the database answers. Refusals of the append itself (invalid
// events, a conflict, a missing session) and a caller's ended context are
// not such failures.
func (o *owner) appendFailed(id string, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrClosed) {
		return
	}
	why := &core.CancelCause{Kind: core.InterruptStoreRefused, Reason: "the store refused its events"}
	switch core.ErrorCode(err) {
	case core.CodeInvalid, core.CodeConflict, core.CodeNotFound:
		return
	case core.CodeUnavailable:
		why = &core.CancelCause{Kind: core.InterruptStoreUnreachable, Reason: store.StoreUnreachableReason}
	}
	o.mu.Lock()
	if !o.held[id] {
		o.mu.Unlock()
		return
	}
	delete(o.held, id)
	o.failed[id] = why
	if o.conn != nil && !o.conn.IsClosed() {
		ctx, cancel := context.WithTimeout(context.Background(), lockPingTimeout)
		o.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", sessionLockKey(id)) //nolint:errcheck // a dead connection dropped it
		cancel()
	}
	o.mu.Unlock()
	o.st.log.Error("a running session's events could not be stored: it is repaired (interrupted) once the database answers",
		logkey.SessionID, id, logkey.Reason, why.Reason, logkey.Err, err)
	o.st.orph.poke()
}

// failures returns the sessions whose appends failed here, not yet
// repaired.
func (o *owner) failures() map[string]*core.CancelCause {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.failed)
}

// repaired forgets a failed session once the sweep repaired it.
func (o *owner) repaired(id string) {
	o.mu.Lock()
	delete(o.failed, id)
	o.mu.Unlock()
}

// release gives session id's lock back.
func (o *owner) release(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.releaseLocked(id)
}

// releaseLocked is release; the caller holds o.mu.
func (o *owner) releaseLocked(id string) {
	if !o.held[id] || o.conn == nil {
		return
	}
	delete(o.held, id)
	o.conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", sessionLockKey(id)) //nolint:errcheck
}

// close gives every claim back: unlocked before the connection closes,
// since the server drops a closed connection's locks only when its
// backend notices, and another node must see them free once Close
// returns.
func (o *owner) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		o.conn.Exec(ctx, "SELECT pg_advisory_unlock_all()") //nolint:errcheck // closing drops them anyway
		cancel()
		o.conn.Close(context.Background()) //nolint:errcheck
		o.conn = nil
	}
	clear(o.held)
	clear(o.creating)
}

// Running reports whether some node (this one included) runs session id:
// whether its advisory lock is held.
func (st *Store) Running(ctx context.Context, id string) (bool, error) {
	k := uint64(sessionLockKey(id))
	var held bool
	err := st.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid = $1::bigint::oid AND objid = $2::bigint::oid AND objsubid = 1)`, int64(k>>32), int64(k&0xffffffff)).Scan(&held)
	if err != nil {
		return false, translate(err, "look up who runs session "+id)
	}
	return held, nil
}

// Command is what one node forwards to the node that runs a session
// (store.Command).
type Command = store.Command

// Command kinds (store's).
const (
	CommandMessage  = store.CommandMessage
	CommandCancel   = store.CommandCancel
	CommandApproval = store.CommandApproval
	CommandPolicy   = store.CommandPolicy
)

// Handler acts on a forwarded command (store.CommandHandler).
type Handler = store.CommandHandler

// HandleCommands sets what this node does with forwarded commands. Set it
// once, before commands arrive.
func (st *Store) HandleCommands(fn Handler) {
	st.own.mu.Lock()
	st.own.handler = fn
	st.own.mu.Unlock()
}

// answerTimeout bounds how long Forward waits for the owner's answer.
var answerTimeout = 10 * time.Second

// Forward hands a command to the node that runs its session, through the
// database (a session_commands row and a NOTIFY the owner acts on), and
// returns the owner's answer: its reply, and nil when it took the command
// or its error (with its code) when it refused. core.CodeNotFound when no
// node runs the session; core.CodeUnavailable when the owner does not
// answer in time.
func (st *Store) Forward(ctx context.Context, c Command) (string, error) {
	switch c.Kind {
	case CommandMessage, CommandCancel, CommandApproval, CommandPolicy:
	default:
		return "", core.Errorf(core.CodeInvalid, "forward: unknown command %q", c.Kind)
	}
	running, err := st.Running(ctx, c.SessionID)
	if err != nil {
		return "", err
	}
	if !running {
		return "", &core.Error{Name: "Error", Code: core.CodeNotFound, Message: fmt.Sprintf("session %s is not running on any node", c.SessionID), Err: errNoOwner}
	}
	wake := make(chan struct{}, 1)
	var id int64
	err = pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "INSERT INTO session_commands (session_id, kind, body) VALUES ($1, $2, $3) RETURNING id",
			c.SessionID, c.Kind, c.Body).Scan(&id); err != nil {
			return err
		}
		// Wait for the answer from before the command is visible.
		st.fan.answers.Store(strconv.FormatInt(id, 10), wake)
		_, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", channelCommands, strconv.FormatInt(id, 10))
		return err
	})
	if id != 0 {
		defer st.fan.answers.Delete(strconv.FormatInt(id, 10))
	}
	if err != nil {
		return "", translate(err, "forward a "+c.Kind+" to session "+c.SessionID)
	}
	defer st.pool.Exec(context.Background(), "DELETE FROM session_commands WHERE id = $1", id) //nolint:errcheck
	deadline := time.NewTimer(answerTimeout)
	defer deadline.Stop()
	// The answer's NOTIFY wakes us; a slow re-check covers a NOTIFY lost
	// while this node's LISTEN connection was down.
	recheck := time.NewTicker(time.Second)
	defer recheck.Stop()
	for {
		var answered bool
		var refusal, reply *string
		err := st.pool.QueryRow(ctx, "SELECT answered_at IS NOT NULL, error, reply FROM session_commands WHERE id = $1", id).Scan(&answered, &refusal, &reply)
		if err != nil {
			return "", translate(err, "read the answer to a "+c.Kind)
		}
		if answered {
			var body string
			if reply != nil {
				body = *reply
			}
			if refusal == nil {
				return body, nil
			}
			return body, decodeRefusal(*refusal)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-deadline.C:
			return "", core.Errorf(core.CodeUnavailable, "the node running session %s did not answer a %s within %s", c.SessionID, c.Kind, answerTimeout)
		case <-wake:
		case <-recheck.C:
		}
	}
}

// encodeRefusal stores an owner's error as "CODE:message".
func encodeRefusal(err error) string { return core.ErrorCode(err) + ":" + err.Error() }

func decodeRefusal(s string) error {
	code, msg, _ := cutColon(s)
	return &core.Error{Name: "Error", Code: code, Message: msg}
}

func cutColon(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return "", s, false
}

// handle acts on one forwarded command if this node runs its session.
func (o *owner) handle(ctx context.Context, id int64) {
	o.mu.Lock()
	fn := o.handler
	o.mu.Unlock()
	if fn == nil {
		return
	}
	var c Command
	err := o.st.pool.QueryRow(ctx, "SELECT session_id, kind, body FROM session_commands WHERE id = $1 AND answered_at IS NULL", id).Scan(&c.SessionID, &c.Kind, &c.Body)
	if err != nil {
		if !errors.Is(err, pgx.ErrNoRows) {
			o.st.log.Warn("cannot read a forwarded command", logkey.Err, err)
		}
		return
	}
	reply, handled, herr := fn(ctx, c)
	if !handled {
		return
	}
	var refusal *string
	if herr != nil {
		s := encodeRefusal(herr)
		refusal = &s
	}
	o.st.log.Info("took a forwarded command", logkey.SessionID, c.SessionID, logkey.Command, c.Kind, logkey.Err, herr)
	err = pgx.BeginFunc(ctx, o.st.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE session_commands SET answered_at = now(), error = $1, reply = NULLIF($2, '') WHERE id = $3 AND answered_at IS NULL",
			refusal, reply, id)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", channelAnswers, strconv.FormatInt(id, 10))
		return err
	})
	if err != nil {
		o.st.log.Warn("cannot answer a forwarded command", logkey.SessionID, c.SessionID, logkey.Err, err)
	}
}

// pendingCommands handles the commands left unanswered (sent while this
// node was not listening) and drops answered or abandoned ones older than
// an hour.
func (o *owner) pendingCommands(ctx context.Context) {
	o.st.pool.Exec(ctx, "DELETE FROM session_commands WHERE created_at < now() - interval '1 hour'") //nolint:errcheck
	rows, err := o.st.pool.Query(ctx, "SELECT id FROM session_commands WHERE answered_at IS NULL ORDER BY id")
	if err != nil {
		return
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return
	}
	for _, id := range ids {
		o.handle(ctx, id)
	}
}

// startLock serialises nodes deciding whether the database is empty.
const startLock int64 = 0x7072_6973_6d00_0002 // "prism\0" 2

// sessionLockKey is the advisory lock key of a session: 64 bits of
// FNV-1a over a prefix and its id (a collision only makes a free session
// look held).
func sessionLockKey(id string) int64 {
	h := fnv.New64a()
	h.Write([]byte("prism session\x00" + id))
	return int64(h.Sum64())
}
