package store

import (
	"encoding/base64"
	"strconv"
	"strings"

	"prism/core"
)

// List orders: by the updated time (the default), the creation time, the
// number of calls or of errors; each the largest first, ties by id.
const (
	SortUpdated = "updated"
	SortCreated = "created"
	SortCalls   = "calls"
	SortErrors  = "errors"
)

// sortColumns are the sessions columns the list orders by, in both
// engines' schemas.
var sortColumns = map[string]string{SortUpdated: "updated_at", SortCreated: "created_at", SortCalls: "calls", SortErrors: "errors"}

// ListOptions select and page sessions. Sessions come newest first (by
// updated time, then id) unless Sort says otherwise.
type ListOptions struct {
	// Status keeps only sessions with this status ("" = all).
	Status string
	// HasErrors keeps only sessions with at least one failed call.
	HasErrors bool
	// Annotated keeps only sessions with at least one label (a label note
	// not removed, on a call or on the session).
	Annotated bool
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
	// WithHeader fills each SessionInfo.Header from the stored header.
	// Without it Header is left zero and the header is neither read nor
	// decoded: no list shows it (the web list, the board and
	// /api/sessions use the summary columns only), and its decode was
	// most of a page's cost. Session and LoadSession always fill it.
	WithHeader bool
}

// AnnotatedSQL is the condition, over a sessions row, of
// ListOptions.Annotated (both engines' schemas).
const AnnotatedSQL = "EXISTS (SELECT 1 FROM notes n WHERE n.session_id = sessions.id AND n.kind = 'label' AND n.removed_at IS NULL)"

// CountAnnotatedSQL counts the sessions ListOptions.Annotated keeps.
const CountAnnotatedSQL = "SELECT count(DISTINCT session_id) FROM notes WHERE kind = 'label' AND removed_at IS NULL"

// SessionPage is one page of a session list.
type SessionPage struct {
	Sessions []SessionInfo `json:"sessions"`
	// NextCursor continues the list ("" on the last page).
	NextCursor string `json:"nextCursor,omitempty"`
}

// Checked returns the options with Limit resolved (default 50, at most
// 1000) and Sort (SortUpdated for ""), and, when Cursor is set, the
// position it continues after; a Status or Sort prism does not know or a
// malformed Cursor is core.CodeInvalid.
func (o ListOptions) Checked() (ListOptions, Position, error) {
	if o.Limit <= 0 {
		o.Limit = 50
	}
	o.Limit = min(o.Limit, 1000)
	switch o.Status {
	case "", core.StatusRunning, core.StatusIdle, core.StatusEnded, core.StatusInterrupted:
	default:
		return o, Position{}, core.Errorf(core.CodeInvalid, "list sessions: unknown status %q", o.Status)
	}
	if o.Sort == "" {
		o.Sort = SortUpdated
	}
	if _, ok := sortColumns[o.Sort]; !ok {
		return o, Position{}, core.Errorf(core.CodeInvalid, "list sessions: unknown order %q (use updated, created, calls or errors)", o.Sort)
	}
	var at Position
	if o.Cursor != "" {
		var err error
		if at, err = decodeCursor(o.Cursor, o.Sort); err != nil {
			return o, at, err
		}
	}
	return o, at, nil
}

// SortColumn is the column of the checked options' order.
func (o ListOptions) SortColumn() string { return sortColumns[o.Sort] }

// Position is a place in the list order: (the sort column's value, ID)
// descending.
type Position struct {
	Key int64
	ID  string
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

// Page cuts rows (fetched with limit+1 under the checked options o) to a
// page and sets its cursor: "key:id" for the default order, "sort:key:id"
// for the others.
func Page(rows []SessionInfo, o ListOptions) SessionPage {
	page := SessionPage{Sessions: rows}
	if page.Sessions == nil {
		page.Sessions = []SessionInfo{}
	}
	if len(page.Sessions) > o.Limit {
		page.Sessions = page.Sessions[:o.Limit]
		last := page.Sessions[o.Limit-1]
		c := strconv.FormatInt(sortKey(last, o.Sort), 10) + ":" + last.ID
		if o.Sort != SortUpdated {
			c = o.Sort + ":" + c
		}
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(c))
	}
	return page
}

func decodeCursor(c, sort string) (Position, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		rest, ok := string(b), true
		if sort != SortUpdated {
			rest, ok = strings.CutPrefix(rest, sort+":")
		}
		if at, id, cut := strings.Cut(rest, ":"); ok && cut {
			if n, err := strconv.ParseInt(at, 10, 64); err == nil {
				return Position{Key: n, ID: id}, nil
			}
		}
	}
	return Position{}, core.Errorf(core.CodeInvalid, "list sessions: malformed cursor %q (for the %s order)", c, sort)
}

// LikePattern is Query as a case-insensitive LIKE pattern (lower-cased,
// with %, _ and \ escaped by \), matching anywhere; "" when Query is
// blank.
func (o ListOptions) LikePattern() string {
	q := strings.TrimSpace(o.Query)
	if q == "" {
		return ""
	}
	return "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.ToLower(q)) + "%"
}
