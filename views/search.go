package views

import (
	"strconv"

	"prism/core/search"
)

// SearchHitInput is one hit as a search returns it, for NewSearchPage and
// HitURL.
type SearchHitInput struct {
	SessionID, SessionTitle, SessionStatus string
	Kind                                   string // search.Kind*
	Seq                                    int64  // -1 for a session's own document
	CallID                                 string
	Card                                   int // the card's ordinal among its call id's cards (1 = first)
	Tool                                   string
	Failed                                 bool
	ErrorCode                              string
	Time                                   int64
	Snippet                                search.Snippet
}

// HitURL is where a hit lands: its card (?call=, &card= for a reused call
// id), its event (?event=), or the session page for a session's own
// document. The fragment names the element too, so a page that already
// shows it scrolls there.
func HitURL(h *SearchHitInput) string {
	switch {
	case h.Seq < 0:
		return SessionURL(h.SessionID)
	case h.Kind == search.KindCall:
		elem := cardElemID(h.CallID, h.Card)
		card := ""
		if h.Card > 1 {
			card = elem
		}
		return SessionCallURL(h.SessionID, h.CallID, card) + "#" + elem
	case h.Kind == search.KindAssistant:
		// Its element is named after the stream's first chunk, which the
		// index does not know: the page finds it from ?event=.
		return SessionEventURL(h.SessionID, h.Seq)
	}
	return SessionEventURL(h.SessionID, h.Seq) + "#ev-" + strconv.FormatInt(h.Seq, 10)
}

// SearchHitView is one hit on the results page.
type SearchHitView struct {
	URL        string
	Kind       string // the document's kind
	Label      string // what the kind reads as: the tool's name for a card
	Field      string // the section the snippet comes from
	Parts      []search.SnippetPart
	Time, ISO  string
	Error      string // a failure's code, or "error"
	IsCall     bool
	SessionDoc bool
}

// SearchGroupView is the hits of one session.
type SearchGroupView struct {
	SessionID, Title, Status string
	URL                      string
	// Parent is the session a subagent's hits belong under (its page at
	// ParentURL); "" for a session that is no child.
	Parent, ParentURL string
	Hits              []*SearchHitView
}

// SearchPageView is the search page.
type SearchPageView struct {
	Meta    PageMeta
	Query   string
	Order   string // rank | time
	Error   string // why the query cannot run
	Groups  []*SearchGroupView
	Hits    int
	MoreURL string // the next page ("" on the last)
	// RankedAmong is set when the hits were ranked among the most recent
	// RankedAmong matches only (more matched): the page says so.
	RankedAmong int
	// Searched is set when a query ran (even with no hits).
	Searched bool
}

var kindLabels = map[string]string{
	search.KindSession: "session", search.KindUser: "user", search.KindContext: "context",
	search.KindAssistant: "assistant", search.KindCall: "call", search.KindTitle: "title", search.KindEvent: "event",
}

// newSearchHit builds a hit's view.
func newSearchHit(h *SearchHitInput) *SearchHitView {
	v := &SearchHitView{URL: HitURL(h), Kind: clean(h.Kind), Label: kindLabels[h.Kind], Field: clean(h.Snippet.Label),
		IsCall: h.Kind == search.KindCall, SessionDoc: h.Seq < 0}
	if v.Label == "" {
		v.Label = clean(h.Kind)
	}
	if v.IsCall && h.Tool != "" {
		v.Label = firstLine(clean(h.Tool), 60)
	}
	if v.Field == "reasoning" && h.Kind == search.KindAssistant {
		v.Label, v.Field = "reasoning", ""
	}
	v.Time, v.ISO = stamp(h.Time)
	if h.Failed {
		v.Error = "error"
		if h.ErrorCode != "" {
			v.Error = firstLine(clean(h.ErrorCode), 60)
		}
	}
	for _, p := range h.Snippet.Parts() {
		v.Parts = append(v.Parts, search.SnippetPart{Text: clean(p.Text), Mark: p.Mark})
	}
	return v
}

// NewSearchPage groups hits by session, in the order the sessions first
// appear among them (best match, or newest, first).
func NewSearchPage(meta PageMeta, query, order string, hits []SearchHitInput) *SearchPageView {
	v := &SearchPageView{Meta: meta, Query: query, Order: order, Searched: true, Hits: len(hits)}
	groups := map[string]*SearchGroupView{}
	for i := range hits {
		h := &hits[i]
		g := groups[h.SessionID]
		if g == nil {
			g = &SearchGroupView{SessionID: clean(h.SessionID), Title: displayTitle(h.SessionTitle, h.SessionID), Status: clean(h.SessionStatus), URL: SessionURL(h.SessionID)}
			groups[h.SessionID] = g
			v.Groups = append(v.Groups, g)
		}
		g.Hits = append(g.Hits, newSearchHit(h))
	}
	return v
}

// sessionSearchURL is the search of query within one session.
func sessionSearchURL(query, sessionID string) string {
	return SearchURL(query+" session:"+sessionID, "", "")
}
