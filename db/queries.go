package db

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"prism/core"
	"prism/core/sessionlog"
)

// SessionInfo is one session as a list shows it: its header, where its log
// comes from, and the core.Summary of its log (title, status, counters,
// tokens, times), computed in the transaction that appended the events.
// Times are epoch milliseconds.
type SessionInfo struct {
	ID       string             `json:"id"`
	Header   core.SessionHeader `json:"header"`
	ParentID string             `json:"parentId,omitempty"`
	Source   string             `json:"source"` // live | import | watch
	// CreatedAt is the header's; UpdatedAt the latest event time, or
	// CreatedAt while the log is empty (the list's order).
	CreatedAt int64 `json:"createdAt"`
	UpdatedAt int64 `json:"updatedAt"`
	core.Summary
}

// List orders: by the updated time (the default), the creation time, the
// number of calls or of errors; each the largest first, ties by id.
const (
	SortUpdated = "updated"
	SortCreated = "created"
	SortCalls   = "calls"
	SortErrors  = "errors"
)

// sortColumns are the columns the list orders by.
var sortColumns = map[string]string{SortUpdated: "updated_at", SortCreated: "created_at", SortCalls: "calls", SortErrors: "errors"}

// ListOptions select and page sessions. Sessions come newest first (by
// updated time, then id) unless Sort says otherwise.
type ListOptions struct {
	// Status keeps only sessions with this status ("" = all).
	Status string
	// HasErrors keeps only sessions with at least one failed call.
	HasErrors bool
	// Sort orders the list: SortUpdated ("" too), SortCreated, SortCalls
	// or SortErrors, largest first.
	Sort string
	// ParentID keeps only the children of this session ("" = no filter).
	ParentID string
	// TopLevel hides subagent sessions (those with a parent).
	TopLevel bool
	// Query keeps sessions whose title or id contains it (case-insensitive).
	Query string
	// Limit caps the page (default 50, at most 1000).
	Limit int
	// Cursor continues after a previous page's NextCursor; Offset skips
	// rows instead (ignored when Cursor is set).
	Cursor string
	Offset int
}

// SessionPage is one page of a session list.
type SessionPage struct {
	Sessions []SessionInfo `json:"sessions"`
	// NextCursor continues the list ("" on the last page).
	NextCursor string `json:"nextCursor,omitempty"`
}

const sessionCols = `id, header, COALESCE(parent_id, ''), source, created_at, updated_at,
	title, titled, status, one_shot, last_seq, turns, steps, calls, results, errors, input_tokens, output_tokens, first_time, last_time, awaiting,
	model, model_usage`

// scanSession reads a row of sessionCols, after any pre columns a query
// selects before them.
func scanSession(row interface{ Scan(...any) error }, pre ...any) (SessionInfo, error) {
	s, _, err := scanSessionRaw(row, pre...)
	return s, err
}

// scanSessionRaw is scanSession that also returns the header's stored JSON.
func scanSessionRaw(row interface{ Scan(...any) error }, pre ...any) (SessionInfo, string, error) {
	var s SessionInfo
	var header string
	var titled, oneShot int
	var usage string
	sm := &s.Summary
	err := row.Scan(append(pre, &s.ID, &header, &s.ParentID, &s.Source, &s.CreatedAt, &s.UpdatedAt,
		&sm.Title, &titled, &sm.Status, &oneShot, &sm.LastSeq, &sm.Turns, &sm.Steps, &sm.Calls, &sm.Results, &sm.Errors,
		&sm.InputTokens, &sm.OutputTokens, &sm.FirstTime, &sm.LastTime, &sm.Awaiting, &sm.Model, &usage)...)
	if err != nil {
		return s, "", err
	}
	if sm.Models, err = decodeModelUsage(usage); err != nil {
		return s, "", fmt.Errorf("session %s: stored model usage: %w", s.ID, err)
	}
	sm.Titled, sm.OneShot, sm.Events = titled == 1, oneShot == 1, sm.LastSeq+1
	if err := json.Unmarshal([]byte(header), &s.Header); err != nil {
		return s, "", fmt.Errorf("session %s: stored header: %w", s.ID, err)
	}
	return s, header, nil
}

// encodeModelUsage is the model_usage column of a summary: its Models as
// JSON, or "" when it has none.
func encodeModelUsage(ms []core.ModelUsage) (string, error) {
	if len(ms) == 0 {
		return "", nil
	}
	b, err := json.Marshal(ms)
	if err != nil {
		return "", fmt.Errorf("encode model usage: %w", err)
	}
	return string(b), nil
}

// decodeModelUsage reads a model_usage column ("" is none).
func decodeModelUsage(s string) ([]core.ModelUsage, error) {
	if s == "" {
		return nil, nil
	}
	var ms []core.ModelUsage
	if err := json.Unmarshal([]byte(s), &ms); err != nil {
		return nil, err
	}
	return ms, nil
}

// sortKey is a row's value of the list's sort column.
func sortKey(s SessionInfo, sort string) int64 {
	switch sort {
	case SortCreated:
		return s.CreatedAt
	case SortCalls:
		return s.Calls
	case SortErrors:
		return s.Errors
	}
	return s.UpdatedAt
}

// encodeCursor writes the key of the last row of a page: "key:id" for the
// default order, "sort:key:id" for the others.
func encodeCursor(s SessionInfo, sort string) string {
	c := strconv.FormatInt(sortKey(s, sort), 10) + ":" + s.ID
	if sort != SortUpdated {
		c = sort + ":" + c
	}
	return base64.RawURLEncoding.EncodeToString([]byte(c))
}

func decodeCursor(c, sort string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		rest, ok := string(b), true
		if sort != SortUpdated {
			rest, ok = strings.CutPrefix(rest, sort+":")
		}
		if at, id, cut := strings.Cut(rest, ":"); ok && cut {
			if n, err := strconv.ParseInt(at, 10, 64); err == nil {
				return n, id, nil
			}
		}
	}
	return 0, "", core.Errorf(core.CodeInvalid, "list sessions: malformed cursor %q (for the %s order)", c, sort)
}

// ListSessions returns a page of sessions, newest first.
func (st *Store) ListSessions(ctx context.Context, o ListOptions) (SessionPage, error) {
	limit := o.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 1000)
	var where []string
	var args []any
	if o.Status != "" {
		switch o.Status {
		case StatusRunning, StatusIdle, StatusEnded, StatusInterrupted:
		default:
			return SessionPage{}, core.Errorf(core.CodeInvalid, "list sessions: unknown status %q", o.Status)
		}
		where, args = append(where, "status = ?"), append(args, o.Status)
	}
	if o.ParentID != "" {
		where, args = append(where, "parent_id = ?"), append(args, o.ParentID)
	}
	if o.HasErrors {
		where = append(where, "errors > 0")
	}
	sort := o.Sort
	if sort == "" {
		sort = SortUpdated
	}
	col, ok := sortColumns[sort]
	if !ok {
		return SessionPage{}, core.Errorf(core.CodeInvalid, "list sessions: unknown order %q (use updated, created, calls or errors)", o.Sort)
	}
	if o.TopLevel {
		where = append(where, "parent_id IS NULL")
	}
	if q := strings.TrimSpace(o.Query); q != "" {
		esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.ToLower(q))
		where = append(where, `(lower(title) LIKE ? ESCAPE '\' OR id LIKE ? ESCAPE '\')`)
		args = append(args, "%"+esc+"%", "%"+esc+"%")
	}
	if o.Cursor != "" {
		at, id, err := decodeCursor(o.Cursor, sort)
		if err != nil {
			return SessionPage{}, err
		}
		where, args = append(where, "("+col+" < ? OR ("+col+" = ? AND id < ?))"), append(args, at, at, id)
	}
	q := "SELECT " + sessionCols + " FROM sessions"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY " + col + " DESC, id DESC LIMIT ?"
	args = append(args, limit+1)
	if o.Cursor == "" && o.Offset > 0 {
		q += " OFFSET ?"
		args = append(args, o.Offset)
	}
	rows, err := st.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return SessionPage{}, translate(err, "list sessions")
	}
	defer rows.Close()
	page := SessionPage{Sessions: []SessionInfo{}}
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return SessionPage{}, translate(err, "list sessions")
		}
		page.Sessions = append(page.Sessions, s)
	}
	if err := rows.Err(); err != nil {
		return SessionPage{}, translate(err, "list sessions")
	}
	if len(page.Sessions) > limit {
		page.Sessions = page.Sessions[:limit]
		page.NextCursor = encodeCursor(page.Sessions[limit-1], sort)
	}
	return page, nil
}

// Session returns one session's list row (core.CodeNotFound if missing).
func (st *Store) Session(ctx context.Context, id string) (SessionInfo, error) {
	s, err := scanSession(st.rdb.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return s, notFound(id)
	}
	if err != nil {
		return s, translate(err, "read session "+id)
	}
	return s, nil
}

// SessionLog is a session with its whole log.
type SessionLog struct {
	Info   SessionInfo
	Events []core.Event
}

// LoadSession returns a session's row and every event, in seq order, read
// in one snapshot.
func (st *Store) LoadSession(ctx context.Context, id string) (*SessionLog, error) {
	tx, err := st.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, translate(err, "load session "+id)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	info, err := scanSession(tx.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, translate(err, "load session "+id)
	}
	events, err := queryEvents(ctx, tx, int(info.LastSeq+1), eventsSQL+" WHERE session_id = ? ORDER BY seq", id)
	if err != nil {
		return nil, translate(err, "load session "+id)
	}
	return &SessionLog{Info: info, Events: events}, nil
}

const eventsSQL = "SELECT seq, type, time, data, ignorable, surface_op, source_event_seqs FROM events"

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryEvents runs an event query (eventsSQL's columns). A long log is
// read with few allocations and copies per event: the scan destinations
// are reused (Scan's arguments escape, so fresh ones would cost an
// allocation each per event), strings are taken as the driver made them
// (a string needs no copy), and the data of many events is copied once
// into a shared block.
func queryEvents(ctx context.Context, q querier, sizeHint int, query string, args ...any) ([]core.Event, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	events := make([]core.Event, 0, max(0, min(sizeHint, 1<<16)))
	var block []byte // the data of the events read so far shares it
	blockSize := min(1<<20, max(4<<10, sizeHint*256))
	var seq, at int64
	var typ, data string
	var ign int
	var surface, sources sql.NullString
	for rows.Next() {
		if err := rows.Scan(&seq, &typ, &at, &data, &ign, &surface, &sources); err != nil {
			return nil, err
		}
		e := core.Event{Seq: seq, Type: typ, Time: at}
		if cap(block)-len(block) < len(data) {
			block = make([]byte, 0, max(blockSize, len(data)))
		}
		n := len(block)
		block = append(block, data...)
		e.Data = block[n:len(block):len(block)] // an append to it copies
		e.Ignorable = ign == 1
		if surface.Valid {
			if surface.String == `"append"` {
				e.SurfaceOp = core.AppendOp()
			} else {
				op := new(core.SurfaceOp)
				if err := op.UnmarshalJSON([]byte(surface.String)); err != nil {
					return nil, fmt.Errorf("event %d: stored surfaceOp: %w", e.Seq, err)
				}
				e.SurfaceOp = op
			}
		}
		if sources.Valid {
			if e.SourceEventSeqs, err = decodeSeqs(sources.String); err != nil {
				return nil, fmt.Errorf("event %d: stored sourceEventSeqs: %w", e.Seq, err)
			}
		}
		events = append(events, e)
	}
	return events, rows.Err()
}

func decodeSeqs(s string) ([]int64, error) {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	out := []int64{}
	if s == "" {
		return out, nil
	}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
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
		return nil, notFound(id)
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
	if err := sessionlog.WriteJSONL(w, l.Info.Header, l.Events); err != nil {
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
