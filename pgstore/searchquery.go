package pgstore

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"prism/core/search"
	"prism/store"
)

// rankWeights weigh a match by its column for ts_rank, in its order
// {D, C, B, A}: the error identity, results and reasoning, the text, a
// tool's name or a title — the SQLite store's column weights (2, 1, 0.8,
// 1.5 for A, B, C, D) scaled into ts_rank's range.
const rankWeights = "'{0.75, 0.4, 0.5, 1.0}'::float4[]"

// tsPhrase writes a text term as a tsquery: its words in a row (<->), the
// last one a prefix (:*) when the term is. The words are the tokenizer's
// terms, quoted, so nothing of the query's syntax reaches tsquery.
func tsPhrase(t search.Term) string {
	var b strings.Builder
	for i, w := range t.Words {
		if i > 0 {
			b.WriteString(" <-> ")
		}
		quoteLexeme(&b, w)
	}
	if t.Prefix {
		b.WriteString(":*")
	}
	if len(t.Words) > 1 {
		return "(" + b.String() + ")"
	}
	return b.String()
}

// searchSQL is a query in SQL: the tsquery of its words ("" when it has
// none to rank by) and the conditions on search_docs d and sessions s.
type searchSQL struct {
	match    string
	matchArg string // match's placeholder, once matchConds added it
	sessions bool   // a condition reads the sessions row (s)
	// words is set when the query has words (to match, to exclude, or in
	// a clause with operators): its best plan depends on how common they
	// are.
	words bool
	where []string
	args  []any
}

// arg adds a parameter and returns its placeholder.
func (s *searchSQL) arg(v any) string {
	s.args = append(s.args, v)
	return "$" + strconv.Itoa(len(s.args))
}

// labelledSQL opens the condition that a label note, not removed, is on
// document d's call or on its whole session (the caller adds its own
// conditions on n and the closing parenthesis). Notes never enter the
// search documents: this reads the notes table.
const labelledSQL = `EXISTS (SELECT 1 FROM notes n WHERE n.session_id = d.session_id AND n.kind = 'label' AND n.removed_at IS NULL
	AND (n.call_id IS NULL OR n.call_id = d.call_id)`

// filterSQL is an operator's condition.
func (s *searchSQL) filterSQL(t search.Term) string {
	switch t.Field {
	case search.FieldTool:
		if t.Prefix {
			return "lower(d.tool) LIKE lower(" + s.arg(likePrefix(t.Value)) + ")"
		}
		return "lower(d.tool) = lower(" + s.arg(t.Value) + ")"
	case search.FieldError:
		switch {
		case t.Prefix:
			return "lower(d.error) LIKE lower(" + s.arg(likePrefix(t.Value)) + ")"
		case t.Value == "":
			return "d.error IS NOT NULL"
		}
		return "lower(d.error) = lower(" + s.arg(t.Value) + ")"
	case search.FieldStatus:
		s.sessions = true
		return "s.status = " + s.arg(t.Value)
	case search.FieldSession:
		return "starts_with(d.session_id, " + s.arg(t.Value) + ")"
	case search.FieldKind:
		return "d.kind = " + s.arg(t.Value)
	case search.FieldAfter:
		return "d.time >= " + s.arg(t.Time)
	case search.FieldBefore:
		return "d.time < " + s.arg(t.Time)
	case search.FieldLabel:
		return labelledSQL + " AND n.label = " + s.arg(t.Value) + ")"
	case search.FieldHas:
		if t.Value == search.HasComment {
			return labelledSQL + " AND n.commented)"
		}
		return labelledSQL + ")"
	}
	return "false"
}

func likePrefix(v string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(v) + "%"
}

// compileSearch translates a parsed query: clauses of words alone become
// one tsquery (each clause's words ORed, the clauses ANDed, the excluded
// ones ANDed as NOT), which the GIN index answers and ts_rank ranks by;
// a clause that mixes words and operators becomes a condition of its own.
func compile(q *search.Query) searchSQL {
	var s searchSQL
	var match, exclude []string
	words, excluded, mixed := store.SplitClauses(q)
	for _, terms := range words {
		phrases := make([]string, len(terms))
		for i, t := range terms {
			phrases[i] = tsPhrase(t)
		}
		match = append(match, "("+strings.Join(phrases, " | ")+")")
	}
	for _, t := range excluded {
		exclude = append(exclude, tsPhrase(t))
	}
	for _, c := range mixed {
		var ors []string
		for _, t := range c.Terms {
			if t.Field == search.FieldText {
				s.words = true
				ors = append(ors, "d.terms @@ "+s.arg(tsPhrase(t))+"::tsquery")
				continue
			}
			ors = append(ors, s.filterSQL(t))
		}
		cond := "(" + strings.Join(ors, " OR ") + ")"
		if c.Not {
			cond = "NOT COALESCE(" + cond + ", false)"
		}
		s.where = append(s.where, cond)
	}
	s.words = s.words || len(match) > 0 || len(exclude) > 0
	switch {
	case len(match) > 0:
		s.match = strings.Join(match, " & ")
		for _, x := range exclude {
			s.match += " & !" + x
		}
	case len(exclude) > 0:
		s.where = append(s.where, "NOT (d.terms @@ "+s.arg(strings.Join(exclude, " | "))+"::tsquery)")
	}
	return s
}

// hitCols are a hit's columns. A card's number (its ordinal among the
// cards of its call id) was counted when it was filed (insertDocsSQL,
// pairResultSQL).
const hitCols = `d.id, d.session_id, d.seq, d.kind, COALESCE(d.call_id, ''), d.card,
	COALESCE(d.tool, ''), COALESCE(d.result_seq, -1), d.error, d.time, s.title, s.status`

// newestFirst orders documents newest first: search_docs_time_idx walked
// backward (or, under an equality on a tool or an error, that column's
// index), the id breaking ties.
const newestFirst = " ORDER BY d.time DESC, d.id DESC"

// matchConds are the query's conditions on search_docs d and sessions s:
// its tsquery first, then the operators'.
func (s *searchSQL) matchConds() []string {
	conds := s.where
	if s.match != "" {
		s.matchArg = s.arg(s.match)
		conds = append([]string{"d.terms @@ " + s.matchArg + "::tsquery"}, conds...)
	}
	return conds
}

// docsFrom is the documents a query's conditions read: search_docs d,
// joined to its session s only when a condition needs it.
func (s *searchSQL) docsFrom() string {
	if s.sessions {
		return " FROM search_docs d JOIN sessions s ON s.id = d.session_id"
	}
	return " FROM search_docs d"
}

// snippetCol is the column of search_docs a page reads for its snippets:
// the sections when the query has words to mark, else the query-free
// snippet.
func snippetCol(marks bool) string {
	if marks {
		return "secs"
	}
	return "snip"
}

// newestPage is a query in time order, whole in one statement: the
// matching documents newest first, read straight from search_docs in the
// order of an index, so the planner walks search_docs_time_idx (or a
// tool's or error's index) and stops at the page — no sort key is
// computed for the other matches — with the columns a page shows (and
// col, snippetCol's), each session's read for the page's rows alone. The
// cursor's time bound (d.time <= key) is an index condition. The page is
// one more than plan.Limit; its candidates are counted as 0. Its rows come
// in the subquery's order, which nothing promises: pageRows puts them in
// order (pageOrder), so PostgreSQL plans and runs no Sort above the
// session lookups.
//
// The limit (store.PlanSearch bounds it) is written into the statement,
// not bound: a statement of operators alone is prepared, and with a bound
// LIMIT PostgreSQL's generic plan is costed for a tenth of the matches, so
// at a million events it kept planning the statement at every search (0
// generic plans in 10, 0.2-0.3 ms each).
//
// With hidden set (a statement of operators alone, prepared once per
// connection) the cursor's values are each read by a subquery (an
// InitPlan), which the planner estimates without the value whether it
// plans for the values or generically: with the values bound as plain
// parameters, the plan for a page's values (its time near the newest) was
// always costed below the generic one, so PostgreSQL planned the
// statement again at every page after the first (0 generic plans in 10 at
// a million events; planning 0.46-0.50 ms against an execution of 0.10).
// A statement with words is planned for its values every time and sees
// them.
func (s *searchSQL) newestPage(p store.SearchPlan, hidden bool, col string) string {
	conds := s.matchConds()
	if a := p.After; a != nil {
		k, doc := s.arg(int64(a.Key)), s.arg(a.Doc)
		if hidden {
			k, doc = "(SELECT "+k+"::bigint)", "(SELECT "+doc+"::bigint)"
		}
		conds = append(conds, "d.time <= "+k, "(d.time < "+k+" OR d.id < "+doc+")")
	}
	return "SELECT " + hitCols + ", d.key, 0, CASE WHEN d.seq < 0 THEN s.header END, d." + col + " FROM (" +
		"SELECT d.id, d.session_id, d.seq, d.kind, d.call_id, d.card, d.tool, d.result_seq, d.error, d.time, d." + col + ", d.time::float8 AS key" +
		s.docsFrom() + whereSQL(conds) + newestFirst + " LIMIT " + strconv.Itoa(p.Limit+1) + ") d" + pageSession
}

// pageSession joins each row of a page (d) to its session (s), looked up
// by its key row by row: a subquery the planner cannot merge into the
// statement (OFFSET 0), so it is planned as one nested loop over the
// page's rows and sessions_pkey. As a plain join it was planned as a hash
// join over a scan of every session (0.1 ms at 300 sessions), and planned
// at three times the cost.
const pageSession = " CROSS JOIN LATERAL (SELECT s.title, s.status, s.header FROM sessions s WHERE s.id = d.session_id OFFSET 0) s"

// rankedTop is a query by rank: the most recent p.Candidates matching
// documents (walked newest first, as newestPage does, and cut there) are
// ranked by ts_rank, and the best page after the cursor kept in top.
// among counts the candidates (p.Candidates when the bound was reached).
func (s *searchSQL) rankedTop(p store.SearchPlan) (with, among string) {
	conds := s.matchConds()
	var b strings.Builder
	b.WriteString("WITH r AS MATERIALIZED (SELECT c.id, ts_rank(" + rankWeights + ", c.terms, " + s.matchArg + "::tsquery)::float8 AS key FROM (")
	b.WriteString("SELECT d.id, d.terms" + s.docsFrom() + whereSQL(conds) + newestFirst + " LIMIT " + s.arg(p.Candidates) + ") c), ")
	b.WriteString("top AS (SELECT id, key FROM r")
	if a := p.After; a != nil {
		k := s.arg(a.Key)
		b.WriteString(" WHERE key < " + k + " OR (key = " + k + " AND id < " + s.arg(a.Doc) + ")")
	}
	b.WriteString(" ORDER BY key DESC, id DESC LIMIT " + s.arg(p.Limit+1) + ") ")
	return b.String(), "(SELECT count(*) FROM r)"
}

// rankedPageSQL ends a ranked query's CTEs (rankedTop's) with its page,
// read whole (hitCols, the candidates' count, and the column of
// search_docs its snippets are made from, snippetCol's), best first.
const rankedPageSQL = "SELECT " + hitCols + ", top.key, %s, CASE WHEN d.seq < 0 THEN s.header END, d.%s " +
	"FROM top JOIN search_docs d ON d.id = top.id" + pageSession + " ORDER BY top.key DESC, d.id DESC"

// whereSQL returns " WHERE …" for the conditions, or "".
func whereSQL(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// querySQL compiles a parsed query for the plan's order into one
// statement that chooses its page and reads it whole, with what its
// snippets are made from (snippetCol): in time order newestPage, by rank
// rankedTop's CTEs and rankedPageSQL. A query of operators alone (words
// false; always in time order) is prepared once per connection: it walks
// the same index whatever its values, and planning the page's join costs
// several times the query itself. A query with words (words true) is
// planned for its values every time (a cached generic plan cannot tell a
// rare word, for the GIN index, from a common one, for the time index).
// A ranked query was once two statements (the page's ids planned for
// their values, then a prepared page that read and decoded the hits'
// events): with the hits' sections filed in search_docs the page is one
// join more, and one statement spends less of this process's CPU per
// search (about 80 µs at 100k events) and one round trip less.
func querySQL(q *search.Query, o store.SearchOptions) (sql string, args []any, plan store.SearchPlan, words bool, err error) {
	s := compile(q)
	plan, err = store.PlanSearch(o, s.match != "")
	if err != nil {
		return "", nil, plan, false, err
	}
	if plan.Order == store.OrderRank {
		with, among := s.rankedTop(plan)
		return with + fmt.Sprintf(rankedPageSQL, among, snippetCol(len(q.Highlights()) > 0)), s.args, plan, true, nil
	}
	return s.newestPage(plan, !s.words, snippetCol(len(q.Highlights()) > 0)), s.args, plan, s.words, nil
}

// searchMode is how Search runs querySQL's statement: one with words
// planned for its values at every execution (an unnamed statement whose
// result types pgx caches, so its rows come in the binary format in one
// round trip), one of operators alone prepared once per connection.
func searchMode(words bool) pgx.QueryExecMode {
	if words {
		return pgx.QueryExecModeCacheDescribe
	}
	return pgx.QueryExecModeCacheStatement
}

// Search runs a parsed query over the index and returns a page of hits
// with their snippets, read in one statement (one snapshot): every hit is
// a committed document whose events exist. Words are ranked by
// ts_rank (the SQLite store ranks by BM25: the orders of equally good hits
// may differ), among the most recent store.RankCandidates matches.
func (st *Store) Search(ctx context.Context, q *search.Query, o store.SearchOptions) (store.SearchPage, error) {
	r, err := st.pageRows(ctx, q, o)
	if err != nil {
		return store.SearchPage{}, err
	}
	plan := r.plan
	page := store.SearchPage{Hits: r.hits}
	if plan.Order == store.OrderRank && r.among >= plan.Candidates {
		page.RankedAmong = plan.Candidates
	}
	if len(r.hits) > plan.Limit {
		page.NextCursor = store.SearchCursor{Order: plan.Order, Key: r.keys[plan.Limit-1], Doc: r.docs[plan.Limit-1]}.Encode()
		page.Hits = r.hits[:plan.Limit]
	}
	hl := q.Highlights()
	for i := range page.Hits {
		h := &page.Hits[i]
		switch r.from[i] {
		case fromPlain: // made as the rows were read
		case fromSections:
			h.Snippet = search.MakeSnippet(r.sections(i), hl)
		case fromLog:
			// Filed without what its snippet is made from (by an older
			// version, or an older node): read from the log.
			secs, err := st.hitSections(ctx, h)
			if err != nil {
				return store.SearchPage{}, translate(err, "search: snippet of session "+h.SessionID)
			}
			h.Snippet = search.MakeSnippet(secs, hl)
		}
	}
	return page, nil
}

// snippetFrom says what a hit's snippet is made from.
type snippetFrom uint8

const (
	// fromLog: its events, read on their own (the row brought neither of
	// the others, or one that does not decode).
	fromLog snippetFrom = iota
	// fromPlain: the query-free snippet its document was filed with (the
	// hit's Snippet is made as the rows are read).
	fromPlain
	// fromSections: its sections (secs), as filed, or its session's
	// title and cwd for a session's own document.
	fromSections
)

// pageRows are the rows of a search's page statement: the page's hits and
// the look-ahead one after them (plan.Limit+1 at most: only its cursor is
// used), each with its sort key and document id, and for each hit of the
// page what its snippet is made from (from; secs).
type pageRows struct {
	plan  store.SearchPlan
	among int // how many candidates a ranked search had
	hits  []store.SearchHit
	docs  []int64
	keys  []float64
	from  []snippetFrom
	secs  [][]search.Section
}

// sections returns the sections of the page's i-th hit (none when
// no hit had any: secs is then nil).
func (r *pageRows) sections(i int) []search.Section {
	if r.secs == nil {
		return nil
	}
	return r.secs[i]
}

// pageRows runs a search's statement and returns its rows. Their text
// columns (ids, kinds, tools, titles, the filed snippets or sections) are
// read into one buffer as they are scanned (pageText) and made into one
// string after the last row, which every hit's strings are parts of: a
// page of 21 rows allocates a few times, not a few times per column.
func (st *Store) pageRows(ctx context.Context, q *search.Query, o store.SearchOptions) (pageRows, error) {
	query, args, plan, words, err := querySQL(q, o)
	if err != nil {
		return pageRows{plan: plan}, err
	}
	marks := len(q.Highlights()) > 0
	rows, err := st.pool.Query(ctx, query, append([]any{searchMode(words)}, args...)...)
	if err != nil {
		return pageRows{plan: plan}, translate(err, "search")
	}
	defer rows.Close()
	n := plan.Limit + 1
	r := pageRows{plan: plan, hits: make([]store.SearchHit, 0, n), docs: make([]int64, 0, n), keys: make([]float64, 0, n)}
	// Each row is scanned into one set of targets: its numbers into cur,
	// its texts into t (spans of buf), then appended.
	buf, _ := st.pageTexts.Get().(*pageText)
	if buf == nil {
		buf = new(pageText)
	}
	defer buf.put(&st.pageTexts)
	var cur store.SearchHit
	var doc int64
	var key float64
	var t rowText
	texts := make([]rowSpans, 0, n)
	t.bind(buf)
	dest := []any{&doc, &t.session, &cur.Seq, &t.kind, &t.call, &cur.Card, &t.tool,
		&cur.ResultSeq, &t.code, &cur.Time, &t.title, &t.status, &key, &r.among, &t.header, &t.snip}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return pageRows{plan: plan}, translate(err, "search")
		}
		if len(r.hits) == n || len(buf.b) > math.MaxInt32 {
			return pageRows{plan: plan}, fmt.Errorf("search: the page's statement returned more than %d rows or 2 GiB of text", n)
		}
		r.hits, r.docs, r.keys = append(r.hits, cur), append(r.docs, doc), append(r.keys, key)
		texts = append(texts, t.spans())
	}
	if err := rows.Err(); err != nil {
		return pageRows{plan: plan}, translate(err, "search")
	}
	rows.Close()
	// A page in time order comes in its subquery's order, which nothing
	// promises: it is put in order here (best first, then by id), not by
	// an ORDER BY PostgreSQL would plan and sort by.
	if p := (pageOrder{&r, texts}); !sort.IsSorted(p) {
		sort.Sort(p)
	}
	text := string(buf.b)
	r.from = make([]snippetFrom, min(len(r.hits), plan.Limit))
	var secs []search.Section // the sections of every hit, in turn
	if marks {
		secs = make([]search.Section, 0, 4*len(r.from))
	}
	var ends []int
	for i := range r.hits {
		h, t := &r.hits[i], &texts[i]
		h.SessionID, h.Kind, h.CallID, h.Tool = t[colSession].in(text), t[colKind].in(text), t[colCall].in(text), t[colTool].in(text)
		h.SessionTitle, h.SessionStatus = t[colTitle].in(text), t[colStatus].in(text)
		if !t[colCode].null() {
			h.Failed, h.ErrorCode = true, t[colCode].in(text)
		}
		if i >= plan.Limit {
			continue // the look-ahead row: only its cursor is used
		}
		switch {
		case h.Seq < 0:
			// A session's own document: its current title and cwd.
			secs = append(secs, search.SessionSections(h.SessionTitle, store.HeaderCwd(t[colHeader].in(text)))...)
			r.from[i] = fromSections
		case t[colSnip].null():
		case !marks:
			// A snippet that does not decode (or JSON's null) is read
			// from the log.
			if snip := t[colSnip].in(text); snip != "null" {
				if h.Snippet, err = search.PlainSnippet(snip); err == nil {
					r.from[i] = fromPlain
				}
			}
		default:
			// Sections that do not decode are read from the log.
			if got, err := appendDecodedSections(secs, t[colSnip].in(text)); err == nil {
				secs, r.from[i] = got, fromSections
			}
		}
		ends = append(ends, len(secs))
	}
	if len(secs) > 0 {
		// ends[i] is where the sections of the page's i-th hit end.
		r.secs = make([][]search.Section, len(r.from))
		for i, hi := range ends {
			lo := 0
			if i > 0 {
				lo = ends[i-1]
			}
			if r.from[i] == fromSections {
				r.secs[i] = secs[lo:hi:hi]
			}
		}
	}
	return r, nil
}

// pageOrder sorts a page's rows, best first (by key, then by document
// id, both descending), and their texts with them.
type pageOrder struct {
	r     *pageRows
	texts []rowSpans
}

func (p pageOrder) Len() int { return len(p.r.hits) }
func (p pageOrder) Less(i, j int) bool {
	r := p.r
	return r.keys[i] > r.keys[j] || r.keys[i] == r.keys[j] && r.docs[i] > r.docs[j]
}
func (p pageOrder) Swap(i, j int) {
	r := p.r
	r.hits[i], r.hits[j] = r.hits[j], r.hits[i]
	r.docs[i], r.docs[j] = r.docs[j], r.docs[i]
	r.keys[i], r.keys[j] = r.keys[j], r.keys[i]
	p.texts[i], p.texts[j] = p.texts[j], p.texts[i]
}

// pageText is the text of a page's rows, read into one buffer row after
// row (textSpan). A Store keeps the buffers for its next searches
// (Store.pageTexts): a page's text is then allocated once, as the string
// its hits' strings are parts of.
type pageText struct{ b []byte }

// maxPooledText bounds the buffers kept for the next searches.
const maxPooledText = 256 << 10

// put empties the buffer and keeps it in pool, unless it grew past
// maxPooledText.
func (t *pageText) put(pool *sync.Pool) {
	if cap(t.b) <= maxPooledText {
		t.b = t.b[:0]
		pool.Put(t)
	}
}

// textSpan is a text, bytea or jsonb column of a row: its bytes are
// appended to a pageText (pgtype.BytesScanner), and their place kept.
type textSpan struct {
	t        *pageText
	off, end int
	null     bool
}

// ScanBytes implements pgtype.BytesScanner: it appends v (valid only
// during the call) to the buffer; v nil is NULL.
func (c *textSpan) ScanBytes(v []byte) error {
	c.off = len(c.t.b)
	c.t.b = append(c.t.b, v...)
	c.end, c.null = len(c.t.b), v == nil
	return nil
}

// rowText are a page row's text columns as they are scanned (the
// rowCol order): hitCols', then the header of a session's own document and
// the filed snippet or sections.
type rowText struct {
	session, kind, call, tool, code, title, status, header, snip textSpan
}

// rowCol names a column of rowText and rowSpans.
type rowCol int

const (
	colSession rowCol = iota
	colKind
	colCall
	colTool
	colCode
	colTitle
	colStatus
	colHeader
	colSnip
	numRowCols
)

// cols returns t's spans in rowCol order.
func (t *rowText) cols() [numRowCols]*textSpan {
	return [numRowCols]*textSpan{&t.session, &t.kind, &t.call, &t.tool, &t.code, &t.title, &t.status, &t.header, &t.snip}
}

// bind makes every span of t read into buf.
func (t *rowText) bind(buf *pageText) {
	for _, c := range t.cols() {
		c.t = buf
	}
}

// spans returns where t's columns are, kept row after row.
func (t *rowText) spans() rowSpans {
	var s rowSpans
	for i, c := range t.cols() {
		s[i] = span{off: int32(c.off), end: int32(c.end)}
		if c.null {
			s[i].off = -1
		}
	}
	return s
}

// rowSpans are where a row's text columns are in its page's text.
type rowSpans [numRowCols]span

// span is a column's place in a page's text (off -1: NULL).
type span struct{ off, end int32 }

func (s span) null() bool { return s.off < 0 }

// in returns the column's text in text, the buffer made a string ("" for
// NULL).
func (s span) in(text string) string {
	if s.off < 0 {
		return ""
	}
	return text[s.off:s.end]
}

// hitSections reads what a hit's document was built from, for one filed
// without its sections or query-free snippet (before searchVersion 3
// refiled it, or by an older node).
func (st *Store) hitSections(ctx context.Context, h *store.SearchHit) ([]search.Section, error) {
	seqs := store.HitSeqs(h)
	events, err := queryEvents(ctx, st.pool, len(seqs), eventsSQL+" WHERE session_id = $1 AND seq = ANY($2) ORDER BY seq", h.SessionID, seqs)
	if err != nil {
		return nil, err
	}
	return store.HitSections(h, "", events)
}
