package store

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"prism/core"
	"prism/core/logkey"
	"prism/core/search"
)

// Search orders.
const (
	OrderRank = "rank" // best match first (BM25 over the matched words; time order when the query has no words)
	OrderTime = "time" // newest first
)

// RankCandidates bounds what a ranked search ranks: the most recent
// RankCandidates matching documents (by time, then document id), so that a
// common word costs the same however long the history grows. Time order
// has no bound: it walks the index newest first and stops at the page.
const RankCandidates = 10_000

// SearchOptions page a search.
type SearchOptions struct {
	// Order is OrderRank (the default) or OrderTime.
	Order string
	// Limit caps the page (default 20, at most 200).
	Limit int
	// Cursor continues after a previous page's NextCursor (same query and
	// order).
	Cursor string
	// Candidates bounds a ranked search below RankCandidates (0 or more
	// than RankCandidates: RankCandidates); tests page through a small
	// bound.
	Candidates int
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
	// RankedAmong is the candidate bound when a ranked search reached it
	// (at least that many documents matched, and the hits are ranked among
	// the most recent RankedAmong of them); 0 otherwise.
	RankedAmong int
}

// SearchPlan is a search's options checked and filled in.
type SearchPlan struct {
	Order string // OrderRank or OrderTime
	Limit int    // 1…200
	// After is the cursor to continue after (nil: the first page).
	After *SearchCursor
	// Candidates is how many of the most recent matches a ranked search
	// ranks (1…RankCandidates).
	Candidates int
}

// PlanSearch checks o and fills in its defaults; ranked is false when the
// query has no words to rank by, which makes the order time. A bad order
// or cursor is core.CodeInvalid.
func PlanSearch(o SearchOptions, ranked bool) (SearchPlan, error) {
	p := SearchPlan{Order: o.Order, Limit: o.Limit, Candidates: o.Candidates}
	if p.Candidates <= 0 || p.Candidates > RankCandidates {
		p.Candidates = RankCandidates
	}
	if p.Limit <= 0 {
		p.Limit = 20
	}
	p.Limit = min(p.Limit, 200)
	switch p.Order {
	case "":
		p.Order = OrderRank
	case OrderRank, OrderTime:
	default:
		return SearchPlan{}, core.Errorf(core.CodeInvalid, "search: order must be %s or %s, not %q", OrderRank, OrderTime, o.Order)
	}
	if !ranked {
		p.Order = OrderTime // nothing to rank
	}
	if o.Cursor != "" {
		c, err := DecodeSearchCursor(o.Cursor, p.Order)
		if err != nil {
			return SearchPlan{}, err
		}
		p.After = &c
	}
	return p, nil
}

// SearchCursor is a page boundary: the last hit's sort key (its rank, or
// its time) and document id.
type SearchCursor struct {
	Order string
	Key   float64
	Doc   int64
}

// Encode writes the cursor as an opaque URL-safe string.
func (c SearchCursor) Encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.Order + ":" + strconv.FormatUint(math.Float64bits(c.Key), 16) + ":" + strconv.FormatInt(c.Doc, 10)))
}

// DecodeSearchCursor reads a cursor Encode wrote for order (a cursor of
// another order, or anything else, is core.CodeInvalid).
func DecodeSearchCursor(s, order string) (SearchCursor, error) {
	bad := func() error {
		return core.Errorf(core.CodeInvalid, "search: malformed cursor %q (pass the nextCursor of the same query and order)", s)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return SearchCursor{}, bad()
	}
	o, rest, ok1 := strings.Cut(string(b), ":")
	key, id, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || o != order || strings.Contains(id, ":") {
		return SearchCursor{}, bad()
	}
	bits, err1 := strconv.ParseUint(key, 16, 64)
	doc, err2 := strconv.ParseInt(id, 10, 64)
	if err1 != nil || err2 != nil {
		return SearchCursor{}, bad()
	}
	return SearchCursor{Order: order, Key: math.Float64frombits(bits), Doc: doc}, nil
}

// HeaderCwd returns the working directory of a stored header ("" when it
// has none or does not decode).
func HeaderCwd(header string) string {
	var h struct {
		Cwd string `json:"cwd"`
	}
	_ = json.Unmarshal([]byte(header), &h)
	return h.Cwd
}

// HitSeqs are the events a hit's document was built from: none for a
// session's own document, the card's call and result, or the one event.
func HitSeqs(h *SearchHit) []int64 {
	switch {
	case h.Seq < 0:
		return nil
	case h.ResultSeq >= 0 && h.ResultSeq != h.Seq:
		return []int64{h.Seq, h.ResultSeq}
	}
	return []int64{h.Seq}
}

// HitSections re-reads what a hit's document was built from, for its
// snippet: the session's title and cwd (header is its stored header), or
// the events at HitSeqs (events, in seq order).
func HitSections(h *SearchHit, header string, events []core.Event) ([]search.Section, error) {
	if h.Seq < 0 {
		return search.SessionSections(h.SessionTitle, HeaderCwd(header)), nil
	}
	if len(events) != len(HitSeqs(h)) {
		return nil, fmt.Errorf("the index names seq %d (result %d), which the log does not hold", h.Seq, h.ResultSeq)
	}
	var secs []search.Section
	for i := range events {
		secs = append(secs, search.Extract(&events[i]).Sections...)
	}
	return secs, nil
}

// Unindexed is a session to (re)index for search, with how many events it
// holds.
type Unindexed struct {
	ID     string
	Events int64
}

// ReindexSessions runs index on each session of list in order, logging the
// start, the progress every two seconds (so a terminal shows how a large
// database is getting on) and the end. An engine's Open calls it for the
// sessions not indexed under its current rules.
func ReindexSessions(log *slog.Logger, list []Unindexed, index func(id string) error) error {
	if len(list) == 0 {
		return nil
	}
	var total int64
	for _, x := range list {
		total += x.Events
	}
	start := time.Now()
	log.Info("indexing sessions for search", logkey.Sessions, len(list), logkey.Events, total)
	last := start
	var done int64
	for i, x := range list {
		if err := index(x.ID); err != nil {
			return fmt.Errorf("index session %s for search: %w", x.ID, err)
		}
		done += x.Events
		if now := time.Now(); now.Sub(last) >= 2*time.Second && i < len(list)-1 {
			last = now
			log.Info("indexing sessions for search", logkey.Progress, fmt.Sprintf("%d of %d sessions, %d of %d events", i+1, len(list), done, total),
				logkey.Duration, now.Sub(start).Round(time.Millisecond))
		}
	}
	log.Info("search index ready", logkey.Sessions, len(list), logkey.Events, total, logkey.Duration, time.Since(start).Round(time.Millisecond))
	return nil
}

// SplitClauses sorts a query's clauses for an engine's compiler: the
// clauses of words alone that must hold (each a list of phrases, any of
// which matches), the phrases of excluded clauses of words alone, and the
// clauses that mix words and operators.
func SplitClauses(q *search.Query) (words [][]search.Term, excluded []search.Term, mixed []search.Clause) {
	for _, c := range q.Clauses {
		textOnly := true
		for _, t := range c.Terms {
			if t.Field != search.FieldText {
				textOnly = false
			}
		}
		switch {
		case !textOnly:
			mixed = append(mixed, c)
		case c.Not:
			excluded = append(excluded, c.Terms...)
		default:
			words = append(words, c.Terms)
		}
	}
	return words, excluded, mixed
}
