package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"prism/core"
	"prism/sources/dsh"
	"prism/store"
)

const sessionCols = `id, header, COALESCE(parent_id, ''), source, created_at, updated_at,
	title, titled, status, one_shot, last_seq, turns, steps, calls, results, errors, input_tokens, output_tokens, first_time, last_time, awaiting,
	model, model_usage`

// listCols is sessionCols without the header's text (an empty string in
// its place): a list that does not show headers neither reads nor decodes
// them.
var listCols = strings.Replace(sessionCols, "id, header,", "id, '',", 1)

// scanSession reads a row of sessionCols, after any pre columns a query
// selects before them.
func scanSession(row interface{ Scan(...any) error }, pre ...any) (store.SessionInfo, error) {
	s, _, err := scanSessionRow(row, true, pre...)
	return s, err
}

// scanSessionRaw is scanSession that also returns the header's stored JSON.
func scanSessionRaw(row interface{ Scan(...any) error }, pre ...any) (store.SessionInfo, string, error) {
	return scanSessionRow(row, true, pre...)
}

// scanSessionRow reads a row of sessionCols or listCols; it decodes the
// header into the info's Header only when withHeader is set (a row of
// listCols has none).
func scanSessionRow(row interface{ Scan(...any) error }, withHeader bool, pre ...any) (store.SessionInfo, string, error) {
	return newSessionScanner(pre...).scan(row, withHeader)
}

// sessionScanner reads rows of sessionCols or listCols, after any pre
// columns, into destinations it reuses: Scan's arguments escape, so fresh
// ones cost an allocation each per row, and a list reads many rows.
type sessionScanner struct {
	s               store.SessionInfo
	header, usage   string
	titled, oneShot int
	dest            []any
}

// newSessionScanner returns a scanner of rows whose first columns scan
// into pre, then a session's.
func newSessionScanner(pre ...any) *sessionScanner {
	sc := &sessionScanner{}
	s, sm := &sc.s, &sc.s.Summary
	sc.dest = append(pre, &s.ID, &sc.header, &s.ParentID, &s.Source, &s.CreatedAt, &s.UpdatedAt,
		&sm.Title, &sc.titled, &sm.Status, &sc.oneShot, &sm.LastSeq, &sm.Turns, &sm.Steps, &sm.Calls, &sm.Results, &sm.Errors,
		&sm.InputTokens, &sm.OutputTokens, &sm.FirstTime, &sm.LastTime, &sm.Awaiting, &sm.Model, &sc.usage)
	return sc
}

// scan reads one row: the session's info, with its Header decoded only
// when withHeader is set, and the header's stored JSON.
func (sc *sessionScanner) scan(row interface{ Scan(...any) error }, withHeader bool) (store.SessionInfo, string, error) {
	sc.s = store.SessionInfo{}
	if err := row.Scan(sc.dest...); err != nil {
		return sc.s, "", err
	}
	s, sm := &sc.s, &sc.s.Summary
	var err error
	if sm.Models, err = store.DecodeModelUsage(sc.usage); err != nil {
		return *s, "", fmt.Errorf("session %s: stored model usage: %w", s.ID, err)
	}
	sm.Titled, sm.OneShot, sm.Events = sc.titled == 1, sc.oneShot == 1, sm.LastSeq+1
	if withHeader {
		if err := json.Unmarshal([]byte(sc.header), &s.Header); err != nil {
			return *s, "", fmt.Errorf("session %s: stored header: %w", s.ID, err)
		}
	}
	return *s, sc.header, nil
}

// ListSessions returns a page of sessions, newest first.
func (st *Store) ListSessions(ctx context.Context, o store.ListOptions) (store.SessionPage, error) {
	o, at, err := o.Checked()
	if err != nil {
		return store.SessionPage{}, err
	}
	var where []string
	var args []any
	if o.Status != "" {
		where, args = append(where, "status = ?"), append(args, o.Status)
	}
	if o.ParentID != "" {
		where, args = append(where, "parent_id = ?"), append(args, o.ParentID)
	}
	if o.HasErrors {
		where = append(where, "errors > 0")
	}
	if o.Annotated {
		where = append(where, store.AnnotatedSQL)
	}
	col := o.SortColumn()
	if o.TopLevel {
		where = append(where, "parent_id IS NULL")
	}
	if like := o.LikePattern(); like != "" {
		where = append(where, `(lower(title) LIKE ? ESCAPE '\' OR id LIKE ? ESCAPE '\')`)
		args = append(args, like, like)
	}
	if o.Cursor != "" {
		where, args = append(where, "("+col+" < ? OR ("+col+" = ? AND id < ?))"), append(args, at.Key, at.Key, at.ID)
	}
	cols := listCols
	if o.WithHeader {
		cols = sessionCols
	}
	q := "SELECT " + cols + " FROM sessions"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY " + col + " DESC, id DESC LIMIT ?"
	args = append(args, o.Limit+1)
	if o.Cursor == "" && o.Offset > 0 {
		q += " OFFSET ?"
		args = append(args, o.Offset)
	}
	rows, err := st.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return store.SessionPage{}, translate(err, "list sessions")
	}
	defer rows.Close()
	var list []store.SessionInfo
	sc := newSessionScanner()
	for rows.Next() {
		s, _, err := sc.scan(rows, o.WithHeader)
		if err != nil {
			return store.SessionPage{}, translate(err, "list sessions")
		}
		list = append(list, s)
	}
	if err := rows.Err(); err != nil {
		return store.SessionPage{}, translate(err, "list sessions")
	}
	return store.Page(list, o), nil
}

// Session returns one session's list row (core.CodeNotFound if missing).
func (st *Store) Session(ctx context.Context, id string) (store.SessionInfo, error) {
	s, err := scanSession(st.rdb.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return s, store.NotFound(id)
	}
	if err != nil {
		return s, translate(err, "read session "+id)
	}
	return s, nil
}

// LoadSession returns a session's row and every event, in seq order, read
// in one snapshot.
func (st *Store) LoadSession(ctx context.Context, id string) (*store.SessionLog, error) {
	tx, err := st.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, translate(err, "load session "+id)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	info, err := scanSession(tx.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.NotFound(id)
	}
	if err != nil {
		return nil, translate(err, "load session "+id)
	}
	events, err := queryEvents(ctx, tx, int(info.LastSeq+1), eventsSQL+" WHERE session_id = ? ORDER BY seq", id)
	if err != nil {
		return nil, translate(err, "load session "+id)
	}
	return &store.SessionLog{Info: info, Events: events}, nil
}

// eventsSQL selects an event's columns (eventColumns).
var eventsSQL = "SELECT " + eventColumns("") + " FROM events"

// eventColumns lists an event's columns, each prefixed with p (a table
// alias and its dot, or ""). The surface op of an ordinary surface event
// ("append", most of a log: every streamed chunk) comes as a flag, its
// text only for a replacement, so the driver makes no string of it.
func eventColumns(p string) string {
	return p + "seq, " + p + "type, " + p + "time, " + p + "data, " + p + "ignorable, " + p + `surface_op IS '"append"', ` +
		"CASE WHEN " + p + `surface_op IS '"append"' THEN NULL ELSE ` + p + "surface_op END, " + p + "source_event_seqs"
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryEvents runs an event query (eventColumns' columns).
func queryEvents(ctx context.Context, q querier, sizeHint int, query string, args ...any) ([]core.Event, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	events := make([]core.Event, 0, max(0, min(sizeHint, 1<<16)))
	sc := newEventScanner(sizeHint)
	for rows.Next() {
		e, err := sc.scan(rows)
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	return events, rows.Err()
}

// eventScanner decodes rows of eventColumns' columns (after its lead
// columns). A long log is read with few allocations
// and copies per event: the scan destinations are reused (Scan's arguments
// escape, so fresh ones would cost an allocation each per event), strings
// are taken as the driver made them (a string needs no copy), and the data
// of many events is copied once into a shared block.
type eventScanner struct {
	sizeHint, blockSize int
	block               []byte           // the data of the events read so far shares it
	ops                 []core.SurfaceOp // the append ops read so far share it, one each
	seq, at             int64
	typ, data           string
	ign, appendOp       int
	surface, sources    sql.NullString
	dest                []any
}

// newEventScanner returns a scanner of rows whose first columns scan into
// lead (a session's id, say), then an event's.
func newEventScanner(sizeHint int, lead ...any) *eventScanner {
	sc := &eventScanner{sizeHint: sizeHint, blockSize: min(1<<20, max(4<<10, sizeHint*256))}
	sc.dest = append(lead, &sc.seq, &sc.typ, &sc.at, &sc.data, &sc.ign, &sc.appendOp, &sc.surface, &sc.sources)
	return sc
}

// scan decodes the row rows is on.
func (sc *eventScanner) scan(rows *sql.Rows) (core.Event, error) {
	if err := rows.Scan(sc.dest...); err != nil {
		return core.Event{}, err
	}
	e := core.Event{Seq: sc.seq, Type: sc.typ, Time: sc.at}
	switch data := sc.data; {
	case len(data) > sc.blockSize: // a block of its own, not cleared first
		e.Data = []byte(data)
	default:
		if cap(sc.block)-len(sc.block) < len(data) {
			sc.block = make([]byte, 0, sc.blockSize)
		}
		n := len(sc.block)
		sc.block = append(sc.block, data...)
		e.Data = sc.block[n:len(sc.block):len(sc.block)] // an append to it copies
	}
	e.Ignorable = sc.ign == 1
	if sc.appendOp == 1 {
		if len(sc.ops) == cap(sc.ops) {
			sc.ops = make([]core.SurfaceOp, 0, min(1024, max(16, sc.sizeHint)))
		}
		sc.ops = append(sc.ops, core.SurfaceOp{}) // core.AppendOp()'s value
		e.SurfaceOp = &sc.ops[len(sc.ops)-1]
	} else if sc.surface.Valid {
		op := new(core.SurfaceOp)
		if err := op.UnmarshalJSON([]byte(sc.surface.String)); err != nil {
			return e, fmt.Errorf("event %d: stored surfaceOp: %w", e.Seq, err)
		}
		e.SurfaceOp = op
	}
	if sc.sources.Valid {
		var err error
		if e.SourceEventSeqs, err = store.DecodeSeqs(sc.sources.String); err != nil {
			return e, fmt.Errorf("event %d: stored sourceEventSeqs: %w", e.Seq, err)
		}
	}
	return e, nil
}

// events runs an event query after checking the session exists.
func (st *Store) events(ctx context.Context, id, what, cond string, args ...any) ([]core.Event, error) {
	tx, err := st.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, translate(err, what)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	var one int
	if err := tx.QueryRowContext(ctx, "SELECT 1 FROM sessions WHERE id = ?", id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return nil, store.NotFound(id)
	} else if err != nil {
		return nil, translate(err, what)
	}
	events, err := queryEvents(ctx, tx, 64, eventsSQL+" WHERE session_id = ? AND "+cond+" ORDER BY seq", append([]any{id}, args...)...)
	if err != nil {
		return nil, translate(err, what)
	}
	return events, nil
}

// EventsAfter returns the session's events with seq > afterSeq (all of
// them for afterSeq -1): a live stream's resume.
func (st *Store) EventsAfter(ctx context.Context, id string, afterSeq int64) ([]core.Event, error) {
	return st.events(ctx, id, "events after seq of "+id, "seq > ?", afterSeq)
}

// EventsUpTo returns the session's events with seq ≤ seq: the session as of
// that event (a replay link's ?at=).
func (st *Store) EventsUpTo(ctx context.Context, id string, seq int64) ([]core.Event, error) {
	return st.events(ctx, id, "events up to seq of "+id, "seq <= ?", seq)
}

// CallEvents returns one tool call's events in seq order: its tool/call,
// tool/result(s) (replacements too), approval/asked and Code Mode
// sub-dispatches (tool/code-dispatch-start, tool/code-dispatch) — and,
// interleaved in seq order, every event of the types withTypes names (the
// turn and step boundaries a fold needs to place the call, say).
func (st *Store) CallEvents(ctx context.Context, id, callID string, withTypes ...string) ([]core.Event, error) {
	if len(withTypes) == 0 {
		return st.events(ctx, id, "events of call "+callID, "call_id = ?", callID)
	}
	args := []any{callID}
	for _, t := range withTypes {
		args = append(args, t)
	}
	in := strings.TrimSuffix(strings.Repeat("?,", len(withTypes)), ",")
	return st.events(ctx, id, "events of call "+callID, "(call_id = ? OR type IN ("+in+"))", args...)
}

// Export writes the session as prism JSONL: the header line, then one event
// per line. Importing the output and exporting again yields the same bytes.
func (st *Store) Export(ctx context.Context, id string, w io.Writer) error {
	l, err := st.LoadSession(ctx, id)
	if err != nil {
		return err
	}
	if err := dsh.WriteJSONL(w, l.Info.Header, l.Events); err != nil {
		return fmt.Errorf("export session %s: %w", id, err)
	}
	return nil
}

// loadEvents reads a session's log inside a write transaction.
func (t *wtx) loadEvents(id string) ([]core.Event, error) {
	events, err := queryEvents(context.Background(), t.tx, 256, eventsSQL+" WHERE session_id = ? ORDER BY seq", id)
	if err != nil {
		return nil, translate(err, "load session "+id)
	}
	return events, nil
}
