package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

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

// scanSession reads a row of sessionCols.
func scanSession(row pgx.Row) (store.SessionInfo, error) {
	return scanSessionRow(row, true)
}

// scanSessionRow reads a row of sessionCols or listCols; it decodes the
// header into the info's Header only when withHeader is set (a row of
// listCols has none).
func scanSessionRow(row pgx.Row, withHeader bool) (store.SessionInfo, error) {
	return newSessionScanner().scan(row, withHeader)
}

// sessionScanner reads rows of sessionCols or listCols into destinations
// it reuses: Scan's arguments escape, so fresh ones cost an allocation
// each per row, and a list reads many rows.
type sessionScanner struct {
	s             store.SessionInfo
	header, usage string
	dest          []any
}

func newSessionScanner() *sessionScanner {
	sc := &sessionScanner{}
	s, sm := &sc.s, &sc.s.Summary
	sc.dest = []any{&s.ID, &sc.header, &s.ParentID, &s.Source, &s.CreatedAt, &s.UpdatedAt,
		&sm.Title, &sm.Titled, &sm.Status, &sm.OneShot, &sm.LastSeq, &sm.Turns, &sm.Steps, &sm.Calls, &sm.Results, &sm.Errors,
		&sm.InputTokens, &sm.OutputTokens, &sm.FirstTime, &sm.LastTime, &sm.Awaiting, &sm.Model, &sc.usage}
	return sc
}

// scan reads one row: the session's info, with its Header decoded only
// when withHeader is set.
func (sc *sessionScanner) scan(row pgx.Row, withHeader bool) (store.SessionInfo, error) {
	sc.s = store.SessionInfo{}
	s, sm := &sc.s, &sc.s.Summary
	if err := row.Scan(sc.dest...); err != nil {
		return *s, err
	}
	var err error
	if sm.Models, err = store.DecodeModelUsage(sc.usage); err != nil {
		return *s, fmt.Errorf("session %s: stored model usage: %w", s.ID, err)
	}
	sm.Events = sm.LastSeq + 1
	if withHeader {
		if err := json.Unmarshal([]byte(sc.header), &s.Header); err != nil {
			return *s, fmt.Errorf("session %s: stored header: %w", s.ID, err)
		}
	}
	return *s, nil
}

// ListSessions returns a page of sessions, newest first.
func (st *Store) ListSessions(ctx context.Context, o store.ListOptions) (store.SessionPage, error) {
	o, at, err := o.Checked()
	if err != nil {
		return store.SessionPage{}, err
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if o.Status != "" {
		where = append(where, "status = "+arg(o.Status))
	}
	if o.ParentID != "" {
		where = append(where, "parent_id = "+arg(o.ParentID))
	}
	if o.HasErrors {
		where = append(where, "errors > 0")
	}
	if o.Annotated {
		where = append(where, store.AnnotatedSQL)
	}
	if o.TopLevel {
		where = append(where, "parent_id IS NULL")
	}
	if like := o.LikePattern(); like != "" {
		p := arg(like)
		where = append(where, `(lower(title) LIKE `+p+` OR lower(id) LIKE `+p+`)`)
	}
	if o.Cursor != "" {
		col, a, id := o.SortColumn(), arg(at.Key), arg(at.ID)
		where = append(where, "("+col+" < "+a+" OR ("+col+" = "+a+` AND id COLLATE "C" < `+id+"::text))")
	}
	cols := listCols
	if o.WithHeader {
		cols = sessionCols
	}
	q := "SELECT " + cols + " FROM sessions"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY " + o.SortColumn() + ` DESC, id COLLATE "C" DESC LIMIT ` + arg(o.Limit+1)
	if o.Cursor == "" && o.Offset > 0 {
		q += " OFFSET " + arg(o.Offset)
	}
	rows, err := st.pool.Query(ctx, q, args...)
	if err != nil {
		return store.SessionPage{}, translate(err, "list sessions")
	}
	defer rows.Close()
	var list []store.SessionInfo
	sc := newSessionScanner()
	for rows.Next() {
		s, err := sc.scan(rows, o.WithHeader)
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
	s, err := scanSession(st.pool.QueryRow(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
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
	var l *store.SessionLog
	err := pgx.BeginTxFunc(ctx, st.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		info, err := scanSession(tx.QueryRow(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = $1", id))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.NotFound(id)
		}
		if err != nil {
			return err
		}
		events, err := queryEvents(ctx, tx, int(info.LastSeq+1), eventsSQL+" WHERE session_id = $1 ORDER BY seq", id)
		if err != nil {
			return err
		}
		l = &store.SessionLog{Info: info, Events: events}
		return nil
	})
	if err != nil {
		return nil, translate(err, "load session "+id)
	}
	return l, nil
}

const eventsSQL = "SELECT seq, type, time, data, ignorable, surface_op, source_event_seqs FROM events"

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func queryEvents(ctx context.Context, q querier, sizeHint int, query string, args ...any) ([]core.Event, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	events := make([]core.Event, 0, max(0, min(sizeHint, 1<<16)))
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	return events, rows.Err()
}

// scanEvent reads the columns of eventsSQL (after any pre columns).
func scanEvent(row pgx.Row, pre ...any) (core.Event, error) {
	var e core.Event
	var data []byte
	var surface, sources *string
	if err := row.Scan(append(pre, &e.Seq, &e.Type, &e.Time, &data, &e.Ignorable, &surface, &sources)...); err != nil {
		return e, err
	}
	e.Data = data
	var err error
	if surface != nil {
		if e.SurfaceOp, err = store.DecodeSurfaceOp(*surface); err != nil {
			return e, fmt.Errorf("event %d: stored surfaceOp: %w", e.Seq, err)
		}
	}
	if sources != nil {
		if e.SourceEventSeqs, err = store.DecodeSeqs(*sources); err != nil {
			return e, fmt.Errorf("event %d: stored sourceEventSeqs: %w", e.Seq, err)
		}
	}
	return e, nil
}

// events runs an event query and tells a missing session (one statement,
// one snapshot).
func (st *Store) events(ctx context.Context, id, what, cond string, args ...any) ([]core.Event, error) {
	rows, err := st.pool.Query(ctx, `SELECT s.id IS NOT NULL, e.seq, e.type, e.time, e.data, e.ignorable, e.surface_op, e.source_event_seqs
		FROM (SELECT $1::text AS id) AS want
		LEFT JOIN sessions s ON s.id = want.id
		LEFT JOIN events e ON e.session_id = s.id AND `+cond+`
		ORDER BY e.seq`, append([]any{id}, args...)...)
	if err != nil {
		return nil, translate(err, what)
	}
	defer rows.Close()
	events := []core.Event{}
	found := false
	for rows.Next() {
		var exists bool
		var seq *int64
		var typ, data, surface, sources *string
		var at *int64
		var ign *bool
		if err := rows.Scan(&exists, &seq, &typ, &at, &data, &ign, &surface, &sources); err != nil {
			return nil, translate(err, what)
		}
		found = exists
		if seq == nil {
			continue
		}
		e := core.Event{Seq: *seq, Type: *typ, Time: *at, Data: []byte(*data), Ignorable: *ign}
		if surface != nil {
			if e.SurfaceOp, err = store.DecodeSurfaceOp(*surface); err != nil {
				return nil, fmt.Errorf("%s: event %d: stored surfaceOp: %w", what, e.Seq, err)
			}
		}
		if sources != nil {
			if e.SourceEventSeqs, err = store.DecodeSeqs(*sources); err != nil {
				return nil, fmt.Errorf("%s: event %d: stored sourceEventSeqs: %w", what, e.Seq, err)
			}
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, what)
	}
	if !found {
		return nil, store.NotFound(id)
	}
	return events, nil
}

// EventsAfter returns the session's events with seq > afterSeq (all of
// them for afterSeq -1): a live stream's resume.
func (st *Store) EventsAfter(ctx context.Context, id string, afterSeq int64) ([]core.Event, error) {
	return st.events(ctx, id, "events after seq of "+id, "e.seq > $2", afterSeq)
}

// EventsUpTo returns the session's events with seq ≤ seq: the session as of
// that event.
func (st *Store) EventsUpTo(ctx context.Context, id string, seq int64) ([]core.Event, error) {
	return st.events(ctx, id, "events up to seq of "+id, "e.seq <= $2", seq)
}

// CallEvents returns one tool call's events in seq order: its tool/call,
// tool/result(s) (replacements too), approval/asked and Code Mode
// sub-dispatches — and, interleaved in seq order, every event of the types
// withTypes names (the turn and step boundaries a fold needs to place the
// call, say).
func (st *Store) CallEvents(ctx context.Context, id, callID string, withTypes ...string) ([]core.Event, error) {
	if len(withTypes) == 0 {
		return st.events(ctx, id, "events of call "+callID, "e.call_id = $2", callID)
	}
	return st.events(ctx, id, "events of call "+callID, "(e.call_id = $2 OR e.type = ANY($3::text[]))", callID, withTypes)
}

// Export writes the session as prism JSONL: the header line, then one event
// per line.
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

// Awaiting returns the ids of the sessions whose summary counts approvals
// waiting for a person (core.Summary.Awaiting), oldest update first: where
// a node looks for what waits on the sessions other nodes run.
func (st *Store) Awaiting(ctx context.Context) ([]string, error) {
	rows, err := st.pool.Query(ctx, `SELECT id FROM sessions WHERE awaiting > 0 ORDER BY updated_at, id COLLATE "C"`)
	if err != nil {
		return nil, translate(err, "list sessions awaiting approvals")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, translate(err, "list sessions awaiting approvals")
	}
	return ids, nil
}
