package store

import (
	"encoding/base64"
	"strconv"
	"strings"

	"prism/core"
)

// ListOptions select and page sessions. Sessions come newest first (by
// updated time, then id).
type ListOptions struct {
	// Status keeps only sessions with this status ("" = all).
	Status string
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

// Checked returns the options with Limit resolved (default 50, at most
// 1000) and, when Cursor is set, the position it continues after; a
// Status prism does not know or a malformed Cursor is core.CodeInvalid.
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
	var at Position
	if o.Cursor != "" {
		var err error
		if at, err = decodeCursor(o.Cursor); err != nil {
			return o, at, err
		}
	}
	return o, at, nil
}

// Position is a place in the list order: (UpdatedAt, ID) descending.
type Position struct {
	UpdatedAt int64
	ID        string
}

// Page cuts rows (fetched with limit+1) to a page and sets its cursor.
func Page(rows []SessionInfo, limit int) SessionPage {
	page := SessionPage{Sessions: rows}
	if page.Sessions == nil {
		page.Sessions = []SessionInfo{}
	}
	if len(page.Sessions) > limit {
		page.Sessions = page.Sessions[:limit]
		last := page.Sessions[limit-1]
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(last.UpdatedAt, 10) + ":" + last.ID))
	}
	return page
}

func decodeCursor(c string) (Position, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		if at, id, ok := strings.Cut(string(b), ":"); ok {
			if n, err := strconv.ParseInt(at, 10, 64); err == nil {
				return Position{UpdatedAt: n, ID: id}, nil
			}
		}
	}
	return Position{}, core.Errorf(core.CodeInvalid, "list sessions: malformed cursor %q", c)
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
