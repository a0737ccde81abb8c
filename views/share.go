package views

import (
	"context"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"prism/core/redact"
	"prism/core/share"
)

// ExportView is a session saved as one self-contained HTML file: every
// segment, the page's stylesheets inline, no script, no links to a server.
type ExportView struct {
	Title    string
	CSS      string // the stylesheets, inlined
	Head     SessionHeadView
	R        R
	Segments []Segment
	// Note says what the file holds: when it was made, up to which event,
	// whether it was redacted.
	Note string
}

// NewExport builds the export of t (all of it). note describes its scope.
func NewExport(t *Timeline, css, note string) *ExportView {
	l := OfflineLinks()
	head := newSessionHeadFor(t, l)
	return &ExportView{Title: head.Title, CSS: css, Head: head, R: NewR(t, l), Segments: t.Segments(), Note: note}
}

// inlineStyle is a <style> element holding css (prism's own stylesheets;
// "</" is escaped so that nothing in it can end the element).
func inlineStyle(css string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, "<style>"+strings.ReplaceAll(css, "</", `<\/`)+"</style>")
		return err
	})
}

// SharePanelView is the owner's share form and list of links on the
// session page.
type SharePanelView struct {
	SessionID string
	CreateURL string // where the form posts
	// PreviewURL answers the form's redaction preview (a Datastar GET).
	PreviewURL string
	LastSeq    int64
	Preview    *SharePreviewView
	Links      []ShareRowView
	// Created is the link just made, shown once.
	Created *ShareRowView
	Error   string
}

// SharePreviewView says what redaction will hide.
type SharePreviewView struct {
	Scope  string // "the whole session" / "up to event N"
	Total  int
	Kinds  []redact.KindReport
	Redact bool
}

// ShareRowView is one link in the owner's list.
type ShareRowView struct {
	ID, Label, URL  string
	Created, Expiry string
	Scope           string
	Redact          bool
	// Labels says the link shows the session's labels.
	Labels bool
	// Children says the link nests the session's subagents.
	Children   bool
	Views      int64
	LastViewed string
	Revoked    bool
	Expired    bool
	RevokeURL  string
}

// NewShareRow describes a link for its owner at now.
func NewShareRow(s share.Share, now time.Time) ShareRowView {
	r := ShareRowView{ID: s.ID, Label: clean(s.Label), Created: dateTime(s.CreatedAt), Redact: s.Redact,
		Views: s.Views, LastViewed: dateTime(s.LastViewedAt), Revoked: s.RevokedAt != 0,
		Expired: s.ExpiresAt != 0 && now.UnixMilli() >= s.ExpiresAt, RevokeURL: shareRevokeURL(s.ID)}
	r.Scope, r.Labels, r.Children = scopeText(s.UpToSeq), s.Labels, s.Children
	if s.ExpiresAt != 0 {
		r.Expiry = dateTime(s.ExpiresAt)
	} else {
		r.Expiry = "never"
	}
	if r.LastViewed == "" {
		r.LastViewed = "—"
	}
	return r
}

// scopeText describes a link's scope.
func scopeText(upTo *int64) string {
	if upTo == nil {
		return "whole session, live"
	}
	return "up to event " + strconv.FormatInt(*upTo, 10)
}

// NewSharePreview describes a redaction report for the form.
func NewSharePreview(rep redact.Report, upTo *int64, redacting bool) *SharePreviewView {
	return &SharePreviewView{Scope: scopeText(upTo), Total: rep.Total, Kinds: rep.Kinds, Redact: redacting}
}

// where lists where a kind's hits are, briefly.
func where(k redact.KindReport) string {
	var parts []string
	if k.Header {
		parts = append(parts, "session cwd")
	}
	const max = 6
	ids := k.CallIDs
	more := 0
	if len(ids) > max {
		ids, more = ids[:max], len(ids)-max
	}
	for _, id := range ids {
		parts = append(parts, "call "+clean(id))
	}
	if more > 0 {
		parts = append(parts, strconv.Itoa(more)+" more calls")
	}
	if n := len(k.Seqs); n > 0 {
		parts = append(parts, plural(n, "message", "messages"))
	}
	return strings.Join(parts, ", ")
}

// ShareCreateURL is where the share form posts.
func ShareCreateURL(sessionID string) string { return SessionURL(sessionID) + "/shares" }

// SharePreviewURL answers the share form's preview.
func SharePreviewURL(sessionID string) string { return SessionURL(sessionID) + "/shares/preview" }

// shareRevokeURL is where a link's revoke button posts.
func shareRevokeURL(id string) string { return "/shares/" + url.PathEscape(id) + "/revoke" }

// LoginView is the owner's login page.
type LoginView struct {
	Meta  PageMeta
	Next  string
	Error string
}
