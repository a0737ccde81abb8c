package views

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"prism/core"
	"prism/core/notes"
	"prism/core/price"
)

// Attention routes.
const (
	RouteRules           = "/rules"
	RouteBoard           = "/board"
	RouteBoardStream     = "/board/stream"
	RouteAPIAttention    = "/api/attention"
	RouteAPIAttentionAck = "/api/attention/:id/ack"
	// ParamAttention is the list's attention filter (?attention=1).
	ParamAttention = "attention"
)

// RulesURL is the /rules page.
func RulesURL() string { return RouteRules }

// BoardURL is the /board page; BoardStreamURL its live stream.
func BoardURL() string { return RouteBoard }

// BoardStreamURL is the board's SSE stream.
func BoardStreamURL() string { return RouteBoardStream }

// APIAttentionURL lists the open attention firings.
func APIAttentionURL() string { return RouteAPIAttention }

// AttentionAckURL acknowledges one firing.
func AttentionAckURL(id string) string { return "/api/attention/" + url.PathEscape(id) + "/ack" }

// AttentionListURL is the session list filtered to sessions with an open
// attention.
func AttentionListURL() string { return RouteHome + "?" + ParamAttention + "=1" }

// AttentionView is one attention firing on a card or a list row.
type AttentionView struct {
	ID, Rule, Reason string
	// AckURL acknowledges it ("" on pages that cannot).
	AckURL string
}

// attentionViews returns the attention firings on call callID ("": the
// session) that apply at the seq the page shows. Share pages have no notes,
// so they never show any.
func attentionViews(callID string, r R) []AttentionView {
	var out []AttentionView
	for _, n := range r.Notes {
		if n.Kind != notes.KindAttention || n.CallID != callID || !n.AppliesAt(r.Seq) {
			continue
		}
		var d notes.AttentionData
		if json.Unmarshal(n.Data, &d) != nil {
			continue
		}
		v := AttentionView{ID: n.ID, Rule: clean(d.Rule), Reason: clean(d.Reason)}
		if r.Labels && n.RemovedAtSeq == nil {
			v.AckURL = AttentionAckURL(n.ID)
		}
		out = append(out, v)
	}
	return out
}

// AttentionOf returns the views of open attention notes (for list rows).
func AttentionOf(ns []notes.Note) []AttentionView {
	var out []AttentionView
	for _, n := range ns {
		var d notes.AttentionData
		if n.Kind != notes.KindAttention || json.Unmarshal(n.Data, &d) != nil {
			continue
		}
		out = append(out, AttentionView{ID: n.ID, Rule: clean(d.Rule), Reason: clean(d.Reason), AckURL: AttentionAckURL(n.ID)})
	}
	return out
}

// BoardView is /board: the running sessions, those that need a person
// first.
type BoardView struct {
	Meta      PageMeta
	Rows      []*BoardRow
	StreamURL string
	Priced    bool
}

// BoardRow is one running session on the board.
type BoardRow struct {
	ID, Title, Status, URL string
	// Call is the call in flight ("" when none) and Age how long it has
	// been running.
	Call, Age string
	Approvals []BoardApproval
	Attention []AttentionView
	Tokens    string
	Cost      string
	// Rendered, when set, is this row's HTML as BoardRowView renders it
	// (a cache's, for a row equal to this one): BoardRows writes it as
	// is.
	Rendered string
}

// NewBoardRow is session id's board row from its summary, priced by p
// (nil: no cost): its title, status, link, tokens and cost as its list
// row (NewSessionRow) shows them, and nothing the board does not show.
func NewBoardRow(id string, sum *core.Summary, p price.Table) *BoardRow {
	r := &BoardRow{ID: id, Title: displayTitle(sum.Title, id), Status: sum.Status, URL: SessionURL(id),
		Tokens: CompactCount(sum.InputTokens) + " / " + CompactCount(sum.OutputTokens)}
	r.Cost, _ = SessionCost(sum, p)
	return r
}

// NeedsPerson reports whether the row waits for a person: an approval or
// an attention.
func (r *BoardRow) NeedsPerson() bool { return len(r.Approvals) > 0 || len(r.Attention) > 0 }

// BoardApproval is one approval waiting, with its inline form.
type BoardApproval struct {
	Tool, Reason string
	DecideURL    string
}

// Ago formats a duration for the board: 42s, 3m05s, 1h02m.
func Ago(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

// when is a time's UTC text for the attention pages.
func when(ms int64) string {
	s, _ := stamp(ms)
	return s
}

// SessionAttentionID is the id of the session header's attention element.
const SessionAttentionID = "session-attention"

// RenderSessionAttentionFor renders the session header's attention as t's
// reader sees it (ok false when the page shows none).
func RenderSessionAttentionFor(ctx context.Context, t *Timeline, l Links) (p Patch, ok bool, err error) {
	r := NewR(t, l)
	as := attentionViews("", r)
	if !r.Labels && len(as) == 0 {
		return Patch{}, false, nil
	}
	html, err := Render(ctx, SessionAttention(as))
	if err != nil {
		return Patch{}, false, err
	}
	return Patch{Mode: "outer", HTML: html}, true, nil
}
