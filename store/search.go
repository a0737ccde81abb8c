package store

import "prism/core/search"

// Search orders.
const (
	OrderRank = "rank" // best match first (BM25 over the matched words; time order when the query has no words)
	OrderTime = "time" // newest first
)

// SearchOptions page a search.
type SearchOptions struct {
	// Order is OrderRank (the default) or OrderTime.
	Order string
	// Limit caps the page (default 20, at most 200).
	Limit int
	// Cursor continues after a previous page's NextCursor (same query and
	// order).
	Cursor string
}

// SearchHit is one document that matched: a session's own document, a
// tool card, or an event.
type SearchHit struct {
	SessionID     string
	SessionTitle  string // the session's title ("" when it has none)
	SessionStatus string
	// Kind is the document's kind (search.Kind*).
	Kind string
	// Seq is the event a link lands on: the event, or a card's tool/call
	// (its result when the call was never logged); -1 for a session's own
	// document.
	Seq int64
	// CallID and Card identify a card: its call id and its ordinal among
	// the session's cards with that call id (1 for the first).
	CallID string
	Card   int
	Tool   string
	// ResultSeq is a card's result (-1 while pending).
	ResultSeq int64
	// Failed is set for a failed call or turn; ErrorCode is its code.
	Failed    bool
	ErrorCode string
	Time      int64 // epoch ms of the event at Seq (the session's creation for its own document)
	Snippet   search.Snippet
}

// SearchPage is one page of hits.
type SearchPage struct {
	Hits []SearchHit
	// NextCursor continues the search ("" on the last page).
	NextCursor string
}
