package db

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"prism/core"
	"prism/core/search"
	"prism/store"
)

// The search vocabulary is store's (both engines' words): these names
// keep db's callers short.
const (
	OrderRank = store.OrderRank
	OrderTime = store.OrderTime
)

type (
	SearchOptions = store.SearchOptions // SearchOptions page a search.
	SearchHit     = store.SearchHit     // SearchHit is one document that matched.
	SearchPage    = store.SearchPage    // SearchPage is one page of hits.
)

// rankColumnWeights weigh a match by the column it is in (search.Col
// order): a tool's name or a title, the text, results and reasoning, the
// error identity.
var rankColumnWeights = [search.NumCols]float64{2, 1, 0.8, 1.5}

// bm25 scores a document from FTS4's matchinfo(…, 'pcnalx'): Okapi BM25
// (k1 1.2, b 0.75) summed over the query's phrases and the columns. It
// runs in Go over the rows the query returns: about five times cheaper
// than the same function called by SQLite through go-sqlite3's callback.
func bm25(info []byte) float64 {
	if len(info)%4 != 0 || len(info) < 12 {
		return 0
	}
	u := func(i int) float64 { return float64(binary.NativeEndian.Uint32(info[4*i:])) }
	p, c := int(u(0)), int(u(1))
	if c > int(search.NumCols) || len(info)/4 < 3+2*c+3*p*c {
		return 0
	}
	n := u(2)
	const k1, b = 1.2, 0.75
	score := 0.0
	for i := 0; i < p; i++ {
		for j := 0; j < c; j++ {
			x := 3 + 2*c + 3*(i*c+j)
			tf, docs := u(x), u(x+2)
			if tf == 0 {
				continue
			}
			idf := math.Log((n-docs+0.5)/(docs+0.5) + 1)
			avg, l := u(3+j), u(3+c+j)
			norm := 1.0
			if avg > 0 {
				norm = 1 - b + b*l/avg
			}
			score += rankColumnWeights[j] * idf * tf * (k1 + 1) / (tf + k1*norm)
		}
	}
	return score
}

// ftsPhrase writes a text term as an FTS4 phrase. Its words hold only
// lower-case ASCII letters and digits and non-ASCII characters (the
// tokenizer guarantees it), so nothing of the query's syntax can reach
// FTS: no operator, no quote, no column filter.
func ftsPhrase(t search.Term) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, w := range t.Words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strings.Map(func(r rune) rune {
			if r < 0x80 && !('a' <= r && r <= 'z' || '0' <= r && r <= '9') {
				return -1
			}
			return r
		}, w))
	}
	if t.Prefix {
		b.WriteByte('*')
	}
	b.WriteByte('"')
	return b.String()
}

func likePrefix(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(v) + "%"
}

// labelledSQL opens the condition that a label note, not removed, is on
// document d's call or on its whole session (the caller adds its own
// conditions on n and the closing parenthesis). Notes never enter the
// FTS documents: this reads the notes table.
const labelledSQL = `EXISTS (SELECT 1 FROM notes n WHERE n.session_id = d.session_id AND n.kind = 'label' AND n.removed_at IS NULL
	AND (n.call_id IS NULL OR n.call_id = d.call_id)`

// filterSQL is an operator's condition on search_docs d and sessions s.
func filterSQL(t search.Term) (string, []any) {
	switch t.Field {
	case search.FieldTool:
		if t.Prefix {
			return `d.tool LIKE ? ESCAPE '\'`, []any{likePrefix(t.Value)}
		}
		return "d.tool = ? COLLATE NOCASE", []any{t.Value}
	case search.FieldError:
		switch {
		case t.Prefix:
			return `d.error LIKE ? ESCAPE '\'`, []any{likePrefix(t.Value)}
		case t.Value == "":
			return "d.error IS NOT NULL", nil
		}
		return "d.error = ? COLLATE NOCASE", []any{t.Value}
	case search.FieldStatus:
		return "s.status = ?", []any{t.Value}
	case search.FieldSession:
		return "(d.session_id >= ? AND d.session_id < ?)", []any{t.Value, t.Value + "\U0010FFFF"}
	case search.FieldKind:
		return "d.kind = ?", []any{t.Value}
	case search.FieldAfter:
		return "d.time >= ?", []any{t.Time}
	case search.FieldBefore:
		return "d.time < ?", []any{t.Time}
	case search.FieldLabel:
		return labelledSQL + " AND n.label = ?)", []any{t.Value}
	case search.FieldHas:
		if t.Value == search.HasComment {
			return labelledSQL + " AND n.commented = 1)", nil
		}
		return labelledSQL + ")", nil
	}
	return "0", nil
}

// searchSQL is a query in SQL: the FTS MATCH expression of its words ("" when
// it has none) and the conditions on the documents.
type searchSQL struct {
	match    string
	where    []string
	args     []any
	sessions bool // a condition reads the sessions row (s)
}

// sessionsJoin joins search_docs d to its session s when a condition
// needs it.
func (s *searchSQL) sessionsJoin() string {
	if s.sessions {
		return " JOIN sessions s ON s.id = d.session_id"
	}
	return ""
}

const docsMatching = "d.id IN (SELECT docid FROM search_fts WHERE search_fts MATCH ?)"

func compile(q *search.Query) searchSQL {
	var s searchSQL
	var match, exclude []string
	words, excluded, mixed := store.SplitClauses(q)
	for _, terms := range words {
		phrases := make([]string, len(terms))
		for i, t := range terms {
			phrases[i] = ftsPhrase(t)
		}
		if len(phrases) == 1 {
			match = append(match, phrases[0])
		} else {
			match = append(match, "("+strings.Join(phrases, " OR ")+")")
		}
	}
	for _, t := range excluded {
		exclude = append(exclude, ftsPhrase(t))
	}
	for _, c := range mixed {
		var ors []string
		for _, t := range c.Terms {
			if t.Field == search.FieldText {
				ors = append(ors, docsMatching)
				s.args = append(s.args, ftsPhrase(t))
				continue
			}
			cond, args := filterSQL(t)
			s.sessions = s.sessions || t.Field == search.FieldStatus
			ors = append(ors, cond)
			s.args = append(s.args, args...)
		}
		cond := strings.Join(ors, " OR ")
		if len(ors) > 1 {
			cond = "(" + cond + ")"
		}
		if c.Not {
			cond = "NOT IFNULL(" + cond + ", 0)"
		}
		s.where = append(s.where, cond)
	}
	switch {
	case len(match) > 0:
		s.match = strings.Join(match, " ")
		for _, x := range exclude {
			s.match += " NOT " + x
		}
	case len(exclude) > 0:
		s.where = append(s.where, "d.id NOT IN (SELECT docid FROM search_fts WHERE search_fts MATCH ?)")
		s.args = append(s.args, strings.Join(exclude, " OR "))
	}
	return s
}

// hitCols are a hit's columns. A card's number (its ordinal among the
// cards of its call id) was counted when it was filed (insDocSQL).
const hitCols = `d.id, d.session_id, d.seq, d.kind, COALESCE(d.call_id, ''), d.card,
	COALESCE(d.tool, ''), COALESCE(d.result_seq, -1), d.error, d.time, s.title, s.status`

// Search runs a parsed query over the index and returns a page of hits
// with their snippets, read in one snapshot: every hit is a committed
// document whose events exist. The writer first files what the index
// lags (searchlag.go), so every event committed before the call is found.
// Words rank among the most recent store.RankCandidates matches.
func (st *Store) Search(ctx context.Context, q *search.Query, o SearchOptions) (SearchPage, error) {
	s := compile(q)
	plan, err := store.PlanSearch(o, s.match != "")
	if err != nil {
		return SearchPage{}, err
	}
	order, limit, after := plan.Order, plan.Limit, plan.After
	// The index lags the log (searchlag.go): file what lags first, so the
	// search sees every event committed before it — through the writer
	// goroutine only when something may lag (indexCurrent).
	if !st.indexCurrent() {
		if err := st.catchUpIndex(ctx); err != nil {
			return SearchPage{}, err
		}
	}
	if order == OrderTime && s.match == "" {
		// One statement reads the page and what its snippets are made
		// from: one snapshot, no transaction around it. A query without
		// words to mark reads the snippets its documents were filed with,
		// not their events.
		if len(q.Highlights()) == 0 {
			return newestPlainPage(ctx, st.rdb, &st.plainStmts, s, plan)
		}
		found, err := newestHits(ctx, st.rdb, s, after, limit+1)
		if err != nil {
			return SearchPage{}, translate(err, "search")
		}
		return st.page(ctx, st.rdb, q, plan, found, 0)
	}
	tx, err := st.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return SearchPage{}, translate(err, "search")
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	var found []hitRow
	among := 0
	if order == OrderTime {
		found, err = newestMatchHits(ctx, tx, s, after, limit+1)
	} else {
		found, among, err = rankedHits(ctx, tx, s, after, limit+1, plan.Candidates)
	}
	if err != nil {
		return SearchPage{}, translate(err, "search")
	}
	return st.page(ctx, tx, q, plan, found, among)
}

// page makes the page of a search from the documents found (one more
// than the page when there is a next one): the cursor, and each hit's
// snippet — for a query without words to mark, the one its document was
// filed with (newestHits' plain); else from the sections its row brought
// (readHits) or the events it brought (newestHits), else from its events
// read on their own (hitSections names an event the log lacks).
func (st *Store) page(ctx context.Context, rq querier, parsed *search.Query, plan store.SearchPlan, found []hitRow, among int) (SearchPage, error) {
	limit, order := plan.Limit, plan.Order
	page := SearchPage{Hits: make([]SearchHit, 0, min(len(found), limit))}
	if order == OrderRank && among >= plan.Candidates {
		page.RankedAmong = plan.Candidates
	}
	if len(found) > limit {
		last := found[limit-1]
		page.NextCursor = store.SearchCursor{Order: order, Key: last.key, Doc: last.doc}.Encode()
		found = found[:limit]
	}
	hl := parsed.Highlights()
	for _, r := range found {
		var secs []search.Section
		var err error
		switch {
		case r.sectioned:
			secs = r.secs
		case r.read:
			secs, err = store.HitSections(&r.hit, r.header, r.events)
		default:
			secs, err = hitSections(ctx, rq, &r.hit)
		}
		if err != nil {
			return SearchPage{}, translate(err, "search: snippet of session "+r.hit.SessionID)
		}
		r.hit.Snippet = search.MakeSnippet(secs, hl)
		page.Hits = append(page.Hits, r.hit)
	}
	return page, nil
}

// hitSections re-reads what a hit's document was built from.
func hitSections(ctx context.Context, tx querier, h *SearchHit) ([]search.Section, error) {
	var header string
	var events []core.Event
	if seqs := store.HitSeqs(h); len(seqs) == 0 {
		rows, err := tx.QueryContext(ctx, "SELECT header FROM sessions WHERE id = ?", h.SessionID)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return nil, err
			}
			return nil, sql.ErrNoRows
		}
		if err := rows.Scan(&header); err != nil {
			return nil, err
		}
	} else {
		args := []any{h.SessionID}
		for _, q := range seqs {
			args = append(args, q)
		}
		var err error
		events, err = queryEvents(ctx, tx, 2, eventsSQL+" WHERE session_id = ? AND seq IN (?"+strings.Repeat(", ?", len(seqs)-1)+") ORDER BY seq", args...)
		if err != nil {
			return nil, err
		}
	}
	return store.HitSections(h, header, events)
}

// hitRow is one matched document and its sort key.
type hitRow struct {
	hit SearchHit
	doc int64
	key float64
	// read is set when the row brought what its snippet is made from:
	// its session's header (a session's own document) or its events.
	read   bool
	header string
	events []core.Event
	// sectioned is set when the row brought its snippet's sections
	// (secs: readHits); stored when they are its stored text.
	sectioned, stored bool
	secs              []search.Section
}

// matchCTE is the words' matches, computed once (MATERIALIZED): joined
// directly, the planner may walk documents by a filter's index and run the
// full-text query again for each one.
// k is how many there are (computed only when read: newestMatches'
// walkTime reads it).
const matchCTE = "WITH m AS MATERIALIZED (SELECT docid FROM search_fts WHERE search_fts MATCH ?), k AS MATERIALIZED (SELECT count(*) AS n FROM m) "

// candidatesSQL reads a ranked search's candidates — the most recent
// matches (by time, then id), at most the plan's bound, after the
// conditions — and their match statistics for bm25: matchinfo runs for the
// candidates only, not for every match. Its %s is the candidates' ids
// (newestMatches).
const candidatesSQL = matchCTE + `, c AS MATERIALIZED (%s)
	SELECT docid, matchinfo(search_fts, 'pcnalx') FROM search_fts WHERE search_fts MATCH ? AND docid IN (SELECT id FROM c)`

// walkTime is the condition under which newestMatches walks the time
// index rather than joining every match: when the matches are so many
// that the walk meets its n newest after fewer steps than the join has
// matches to read and sort (an index step costs about a quarter of a
// match joined and sorted: 4·m² > n·docs). A common word then costs about
// the same however long the history grows, as it must at a million events;
// a rare one keeps the join. The count (k) is computed once per statement.
const walkTime = "(SELECT n * n FROM k) * 4 > ? * (SELECT ifnull(max(id), 0) FROM search_docs)"

// newestMatches returns a query of the ids (and times) of the n most
// recent documents of matchCTE's m (by time, then id) under the
// conditions, and its arguments after the match's. With no conditions on
// anything but time and id (extra: the cursor's) the plan is chosen at run
// time (walkTime) by the LIMITs, which SQLite evaluates once before a
// loop (a LIMIT of 0 runs nothing; a condition in WHERE would be tested
// on every row): the time index walked newest first, each document looked
// up in m, stopping at the n-th; or the matches joined and sorted (a
// CROSS JOIN, m first: beside the walk the planner does not know m is
// small, and would walk the time index there too). Otherwise the join,
// which a filter's own index may drive.
func newestMatches(s searchSQL, extra []string, extraArgs []any, n int) (string, []any) {
	if len(s.where) == 0 && !s.sessions {
		conds := where(extra)
		and := " AND "
		if conds == "" {
			and = " WHERE "
		}
		q := "SELECT id, time FROM (SELECT d.id, d.time FROM search_docs d INDEXED BY search_docs_time_idx" + conds + and +
			"d.id IN m ORDER BY d.time DESC, d.id DESC LIMIT CASE WHEN " + walkTime + " THEN ? ELSE 0 END)" +
			" UNION ALL SELECT id, time FROM (SELECT d.id, d.time FROM m CROSS JOIN search_docs d ON d.id = m.docid" + conds +
			" ORDER BY d.time DESC, d.id DESC LIMIT CASE WHEN " + walkTime + " THEN 0 ELSE ? END)"
		args := append(append(append([]any{}, extraArgs...), n, n), extraArgs...)
		return q, append(args, n, n)
	}
	conds := append(s.where[:len(s.where):len(s.where)], extra...)
	return "SELECT d.id, d.time FROM m JOIN search_docs d ON d.id = m.docid" + s.sessionsJoin() + where(conds) + " ORDER BY d.time DESC, d.id DESC LIMIT ?",
		append(append(append([]any{}, s.args...), extraArgs...), n)
}

// where returns " WHERE …" for the conditions, or "".
func where(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// cursorConds are the conditions of a page in time order after the
// cursor (none without one) and their arguments: the documents before it,
// by time then id. The time's bound stands alone, so SQLite seeks the
// index to it and walks on from there; written as one OR (time before, or
// the same time and an id before) it read a page after the first of
// tool:grep at 100k events in about half as much time again (64 against
// 94 µs of CPU per search), though its plan named the same range.
func cursorConds(after *store.SearchCursor) ([]string, []any) {
	if after == nil {
		return nil, nil
	}
	return []string{"d.time <= ?", "(d.time < ? OR d.id < ?)"}, []any{int64(after.Key), int64(after.Key), after.Doc}
}

// newestTop is the statement choosing the ids (and times) of the n newest
// documents of a query without words under its conditions and extra
// (cursorConds').
//
// The LIMIT is written into the statement, not bound: with a bound one
// SQLite ran the page's statement about twice as slowly (a page of
// tool:grep at 100k events: 57 against 31 µs).
func newestTop(s searchSQL, extra []string, n int) string {
	conds := append(s.where[:len(s.where):len(s.where)], extra...)
	return "SELECT d.id, d.time FROM search_docs d" + s.sessionsJoin() + where(conds) + " ORDER BY d.time DESC, d.id DESC LIMIT " + strconv.Itoa(n)
}

// newestPlainPage returns the page of a query without words to mark (no
// words at all, or only excluded ones: s.match empty, no highlights) in
// time order, in one statement (its text kept by its shape in stmts): the
// page's ids chosen first (newestTop),
// then their rows with the query-free snippet each was filed with
// (search.PlainSnippet), each row one packed text (plainPacked) read
// straight into the page's hit — no row kept beside it — and put in order
// here. A session's own document, or
// one filed without its snippet, makes it from its session's title and
// cwd or its events as newestHits' rows do (Store.page).
func newestPlainPage(ctx context.Context, q querier, stmts *plainStmts, s searchSQL, plan store.SearchPlan) (SearchPage, error) {
	n := plan.Limit + 1
	extra, extraArgs := cursorConds(plan.After)
	args := s.args
	if len(extraArgs) > 0 {
		args = append(s.args[:len(s.args):len(s.args)], extraArgs...)
	}
	rows, err := q.QueryContext(ctx, stmts.text(s, extra, n), args...)
	if err != nil {
		return SearchPage{}, translate(err, "search")
	}
	defer rows.Close()
	p := plainRows{hits: make([]SearchHit, 0, n), docs: make([]int64, 0, n)}
	var header sql.NullString
	var packed string
	for rows.Next() {
		if err := rows.Scan(&packed, &header); err != nil {
			return SearchPage{}, translate(err, "search")
		}
		p.hits = append(p.hits, SearchHit{})
		h := &p.hits[len(p.hits)-1]
		doc, snip, hasSnip, err := unpackPlainRow(packed, h)
		if err != nil {
			return SearchPage{}, fmt.Errorf("search: %w", err)
		}
		p.docs = append(p.docs, doc)
		ok := false
		if hasSnip {
			// A snippet that does not decode is made again below.
			h.Snippet, err = search.PlainSnippet(snip)
			ok = err == nil
		}
		if !ok {
			p.unread = append(p.unread, unreadHit{doc: doc, header: header.String})
		}
	}
	if err := rows.Err(); err != nil {
		return SearchPage{}, translate(err, "search")
	}
	rows.Close()
	if !sort.IsSorted(&p) {
		sort.Sort(&p)
	}
	page := SearchPage{Hits: p.hits}
	if len(p.hits) > plan.Limit {
		last := &p.hits[plan.Limit-1]
		page.NextCursor = store.SearchCursor{Order: plan.Order, Key: float64(last.Time), Doc: p.docs[plan.Limit-1]}.Encode()
		page.Hits = p.hits[:plan.Limit]
	}
	for _, u := range p.unread {
		i := slices.Index(p.docs, u.doc)
		if i >= len(page.Hits) {
			continue // the look-ahead row: only its cursor is used
		}
		h := &page.Hits[i]
		var secs []search.Section
		if h.Seq < 0 {
			// A session's own document: its current title and cwd.
			secs, err = store.HitSections(h, u.header, nil)
		} else {
			secs, err = hitSections(ctx, q, h)
		}
		if err != nil {
			return SearchPage{}, translate(err, "search: snippet of session "+h.SessionID)
		}
		h.Snippet = search.MakeSnippet(secs, nil)
	}
	return page, nil
}

// plainPageSelect and plainPageFrom are newestPlainPage's statement around
// its newestTop: each chosen id's row with its session's title and status
// and the query-free snippet the document was filed with (plainPacked),
// and the header of a session's own document. The rows come in no
// particular order:
// newestPlainPage puts them in order (newest first, then by document id),
// not an ORDER BY that would copy every row, sessions joined, into a
// sorter once more (about a fifth of the statement's time).
const (
	plainPageSelect = "SELECT " + plainPacked + ", CASE WHEN d.seq < 0 THEN s.header END FROM ("
	plainPageFrom   = ") top JOIN search_docs d ON d.id = top.id JOIN sessions s ON s.id = d.session_id"
)

// plainPacked is a hit's columns, but for the header, packed into one
// text (unpackPlainRow reads it): its numbers and the byte lengths of its
// texts (-1: NULL) in decimal, each followed by a comma but the last,
// followed by a colon, then the texts one after the other. The driver
// allocates for every text and every number above 255 of a row (a string
// and its boxing), 17 times a row for hitCols and the snippet: in one
// text, twice.
const plainPacked = `concat(d.id, ',', d.seq, ',', d.card, ',', ifnull(d.result_seq, -1), ',', d.time, ',',
	octet_length(d.session_id), ',', octet_length(d.kind), ',', octet_length(ifnull(d.call_id, '')), ',', octet_length(ifnull(d.tool, '')), ',',
	ifnull(octet_length(d.error), -1), ',', octet_length(s.title), ',', octet_length(s.status), ',', ifnull(octet_length(d.snip), -1), ':',
	d.session_id, d.kind, ifnull(d.call_id, ''), ifnull(d.tool, ''), ifnull(d.error, ''), s.title, s.status, ifnull(d.snip, ''))`

// unpackPlainRow reads plainPacked's text into h (its texts parts of
// packed) and returns the document's id and its filed snippet (has false
// when NULL).
func unpackPlainRow(packed string, h *SearchHit) (doc int64, snip string, has bool, err error) {
	var nums [13]int64
	rest := packed
	for i := range nums {
		end := ','
		if i == len(nums)-1 {
			end = ':'
		}
		j := strings.IndexByte(rest, byte(end))
		if j < 0 {
			return 0, "", false, fmt.Errorf("a page row's packed columns %.80q: no %q after number %d", packed, end, i+1)
		}
		if nums[i], err = strconv.ParseInt(rest[:j], 10, 64); err != nil {
			return 0, "", false, fmt.Errorf("a page row's packed columns %.80q: number %d: %w", packed, i+1, err)
		}
		rest = rest[j+1:]
	}
	doc, h.Seq, h.Card, h.ResultSeq, h.Time = nums[0], nums[1], int(nums[2]), nums[3], nums[4]
	var texts [8]string
	var null [8]bool
	for i, n := range nums[5:] {
		if n < 0 {
			null[i] = true
			continue
		}
		if n > int64(len(rest)) {
			return 0, "", false, fmt.Errorf("a page row's packed columns %.80q: text %d is %d bytes, %d are left", packed, i+1, n, len(rest))
		}
		texts[i], rest = rest[:n], rest[n:]
	}
	if rest != "" {
		return 0, "", false, fmt.Errorf("a page row's packed columns %.80q: %d bytes after the texts", packed, len(rest))
	}
	h.SessionID, h.Kind, h.CallID, h.Tool = texts[0], texts[1], texts[2], texts[3]
	h.Failed, h.ErrorCode = !null[4], texts[4]
	h.SessionTitle, h.SessionStatus = texts[5], texts[6]
	return doc, texts[7], !null[7], nil
}

// plainRows are newestPlainPage's hits and their documents' ids, in the
// order of the rows until sorted (sort.Interface: newest first, then by
// id); unread are the hits whose snippet is made after the rows.
type plainRows struct {
	hits   []SearchHit
	docs   []int64
	unread []unreadHit
}

// unreadHit is a hit of newestPlainPage without a filed snippet that
// decodes, and its session's header (for a session's own document).
type unreadHit struct {
	doc    int64
	header string
}

func (p *plainRows) Len() int { return len(p.hits) }
func (p *plainRows) Less(i, j int) bool {
	a, b := &p.hits[i], &p.hits[j]
	return a.Time > b.Time || a.Time == b.Time && p.docs[i] > p.docs[j]
}
func (p *plainRows) Swap(i, j int) {
	p.hits[i], p.hits[j] = p.hits[j], p.hits[i]
	p.docs[i], p.docs[j] = p.docs[j], p.docs[i]
}

// newestHits returns up to n documents of a query without words (s.match
// empty: newestMatchHits reads the others) newest first (by event time, then
// document id), after the cursor, each with what its snippet is made from
// (its events, or its session's header), in one statement
// (newestPlainPage reads a query without words to mark). The
// page's ids are chosen first and only they are read whole: SQLite
// computes a row's result columns before its sorter sees it, so every
// match would be read whole (and its events joined).
func newestHits(ctx context.Context, q querier, s searchSQL, after *store.SearchCursor, n int) ([]hitRow, error) {
	var sb strings.Builder
	var args []any
	extra, extraArgs := cursorConds(after)
	top := newestTop(s, extra, n)
	args = append(append(args, s.args...), extraArgs...)
	// The page's rows come in no particular order: they are put in order
	// here (newest first, then by document id), not by an ORDER BY that
	// would copy every row, sessions joined, into a sorter once more (about
	// a fifth of the statement's time).
	sb.WriteString("SELECT " + hitCols + ", " + hitPageCols + " FROM (" + top + ") top" +
		" JOIN search_docs d ON d.id = top.id JOIN sessions s ON s.id = d.session_id" + hitEventsJoin)
	rows, err := q.QueryContext(ctx, sb.String(), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := make([]hitRow, 0, n)
	var e [2]snipEvent
	var appendOp core.SurfaceOp
	var header, errCol sql.NullString
	// Each row is scanned into r (dest, made once), then copied.
	var r hitRow
	h := &r.hit
	dest := []any{&r.doc, &h.SessionID, &h.Seq, &h.Kind, &h.CallID, &h.Card, &h.Tool, &h.ResultSeq, &errCol, &h.Time,
		&h.SessionTitle, &h.SessionStatus, &header}
	dest = append(append(dest, e[0].dest()...), e[1].dest()...)
	for rows.Next() {
		r.events = nil
		if err := scanSnipRow(rows, dest, &e); err != nil {
			return nil, err
		}
		h.Failed, h.ErrorCode = errCol.Valid, errCol.String
		r.key = float64(h.Time)
		r.header = header.String
		r.read = true
		for _, q := range store.HitSeqs(h) {
			i := 0
			if q != h.Seq {
				i = 1
			}
			ev, ok, err := e[i].event(q, &appendOp)
			if err != nil {
				return nil, err
			}
			if !ok {
				r.read = false // the log lacks it: hitSections names it
				break
			}
			ev.Data = append([]byte(nil), ev.Data...) // kept past the row
			r.events = append(r.events, ev)
		}
		found = append(found, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(found, func(a, b hitRow) int {
		if c := cmp.Compare(b.hit.Time, a.hit.Time); c != 0 {
			return c
		}
		return cmp.Compare(b.doc, a.doc)
	})
	return found, nil
}

// hitEventsJoin joins a hit's event (e1) and a card's result event (e2).
const hitEventsJoin = " LEFT JOIN events e1 ON e1.session_id = d.session_id AND e1.seq = d.seq AND d.seq >= 0" +
	" LEFT JOIN events e2 ON e2.session_id = d.session_id AND e2.seq = d.result_seq AND d.result_seq <> d.seq"

// rankedHits returns up to n documents best match first (BM25, then
// document id), after the cursor, among the most recent candidates
// matches: the candidates' ids and match statistics are read, scored in
// Go, and the best n read whole. among is how many candidates there were.
func rankedHits(ctx context.Context, tx *sql.Tx, s searchSQL, after *store.SearchCursor, n, candidates int) (found []hitRow, among int, err error) {
	c, cargs := newestMatches(s, nil, nil, candidates)
	args := append(append([]any{s.match}, cargs...), s.match)
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(candidatesSQL, c), args...)
	if err != nil {
		return nil, 0, err
	}
	type scored struct {
		doc  int64
		rank float64
	}
	var all []scored
	var mi []byte
	for rows.Next() {
		var sc scored
		if err := rows.Scan(&sc.doc, &mi); err != nil {
			rows.Close()
			return nil, 0, err
		}
		among++
		sc.rank = bm25(mi)
		if after != nil && !(sc.rank < after.Key || sc.rank == after.Key && sc.doc < after.Doc) {
			continue
		}
		all = append(all, sc)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].rank != all[j].rank {
			return all[i].rank > all[j].rank
		}
		return all[i].doc > all[j].doc
	})
	all = all[:min(len(all), n)]
	docs, keys := make([]int64, len(all)), make([]float64, len(all))
	for i, sc := range all {
		docs[i], keys[i] = sc.doc, sc.rank
	}
	found, err = pageHits(ctx, tx, docs, keys, n-1)
	return found, among, err
}

// hitPageCols are, after hitCols, what a hit's snippet is made from: its
// session's header for a session's own document, and the type, data and
// surface op of its event (e1) and of a card's result event (e2) — all
// that core/search.Extract reads of an event; hitEventsJoin joins them.
const hitPageCols = `CASE WHEN d.seq < 0 THEN s.header END, e1.type, e1.data, e1.surface_op, e2.type, e2.data, e2.surface_op`

// snipEvent is what hitPageCols read of an event (NULL when the join
// finds none). Its data is read into a buffer reused row after row: an
// event is decoded for its row's snippet sections and not kept.
type snipEvent struct {
	typ, surface sql.NullString
	data         sql.RawBytes
	buf          []byte // data's buffer, kept when a NULL clears data
}

func (e *snipEvent) dest() []any { return []any{&e.typ, &e.data, &e.surface} }

// scanSnipRow scans the next row of rows into dest, whose last columns
// are e's: each event's data goes into its buffer, kept from row to row
// (grown when a row's data is larger).
func scanSnipRow(rows *sql.Rows, dest []any, e *[2]snipEvent) error {
	e[0].data, e[1].data = e[0].buf[:0], e[1].buf[:0]
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	for j := range e {
		if cap(e[j].data) > cap(e[j].buf) {
			e[j].buf = e[j].data[:0]
		}
	}
	return nil
}

// event returns the event at seq (its Data valid until the next row is
// scanned), or ok false when the join found none. appendOp is the value
// an append op decodes to, shared by the rows: a snippet's sections
// (core/search.Extract) only read it.
func (e *snipEvent) event(seq int64, appendOp *core.SurfaceOp) (ev core.Event, ok bool, err error) {
	if !e.typ.Valid {
		return ev, false, nil
	}
	ev = core.Event{Seq: seq, Type: e.typ.String, Data: []byte(e.data)}
	switch {
	case !e.surface.Valid:
	case e.surface.String == `"append"`:
		ev.SurfaceOp = appendOp
	default:
		if ev.SurfaceOp, err = store.DecodeSurfaceOp(e.surface.String); err != nil {
			return ev, false, fmt.Errorf("event %d: stored surfaceOp: %w", seq, err)
		}
	}
	return ev, true, nil
}

// hitTextCols are, after hitPageCols, a document's text (searchtext.go);
// hitTextJoin joins it and, only for a document without one, its events
// (hitEventsJoin's). The condition is in the events' key, which it makes
// NULL: SQLite then skips the lookup (a condition beside the key is tested
// after it).
const (
	hitTextCols = `t.secs, t.result_secs`
	hitTextJoin = " LEFT JOIN search_text t ON t.id = d.id" +
		" LEFT JOIN events e1 ON e1.session_id = d.session_id AND e1.seq = CASE WHEN t.id IS NULL AND d.seq >= 0 THEN d.seq END" +
		" LEFT JOIN events e2 ON e2.session_id = d.session_id AND e2.seq = CASE WHEN t.id IS NULL AND d.result_seq <> d.seq THEN d.result_seq END"
)

// pageHits returns the documents docs (readHits) of which only the first
// page are read: the ones after it (the look-ahead that says a next page
// exists) only with their ids and keys. Should a document of the page be
// missing (never within one snapshot), all are read.
func pageHits(ctx context.Context, tx *sql.Tx, docs []int64, keys []float64, page int) ([]hitRow, error) {
	if page >= len(docs) {
		return readHits(ctx, tx, docs, keys, page)
	}
	found, err := readHits(ctx, tx, docs[:page], keys[:page], page)
	if err != nil || len(found) < page {
		if err == nil {
			found, err = readHits(ctx, tx, docs, keys, page)
		}
		return found, err
	}
	for i := page; i < len(docs); i++ {
		found = append(found, hitRow{doc: docs[i], key: keys[i]})
	}
	return found, nil
}

// storedText is a column of hitTextCols, read into a buffer reused row
// after row (nil for NULL).
type storedText struct{ b, buf sql.RawBytes }

func (t *storedText) reset() { t.b = t.buf[:0] }

// keep keeps the row's buffer when it grew.
func (t *storedText) keep() {
	if cap(t.b) > cap(t.buf) {
		t.buf = t.b[:0]
	}
}

// readHits reads the documents docs whole (hitCols), in that order, each
// with its sort key, in one statement; the first page of them (the rest
// only look ahead for the cursor) with their snippet's sections, made from
// what the same statement read: the document's text when it has one
// (hitTextCols), else its events (hitPageCols).
func readHits(ctx context.Context, tx *sql.Tx, docs []int64, keys []float64, page int) ([]hitRow, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	ids := make([]any, len(docs))
	for i, d := range docs {
		ids[i] = d
	}
	rows, err := tx.QueryContext(ctx, "SELECT "+hitCols+", "+hitPageCols+", "+hitTextCols+" FROM search_docs d JOIN sessions s ON s.id = d.session_id"+
		hitTextJoin+" WHERE d.id IN (?"+strings.Repeat(",?", len(docs)-1)+")", ids...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	index := make(map[int64]int, len(docs))
	for i, d := range docs {
		index[d] = i
	}
	got := make([]hitRow, len(docs))
	seen := make([]bool, len(docs))
	// Each row is scanned into r (dest, made once), then copied.
	var r hitRow
	h := &r.hit
	var errCol, header sql.NullString
	var e [2]snipEvent
	var text [2]storedText
	var td textDecoder
	dest := append(append([]any{&r.doc, &h.SessionID, &h.Seq, &h.Kind, &h.CallID, &h.Card, &h.Tool, &h.ResultSeq, &errCol, &h.Time,
		&h.SessionTitle, &h.SessionStatus, &header}, append(e[0].dest(), e[1].dest()...)...), &text[0].b, &text[1].b)
	var appendOp core.SurfaceOp
	evs := make([]core.Event, 0, 2)
	for rows.Next() {
		text[0].reset()
		text[1].reset()
		if err := scanSnipRow(rows, dest, &e); err != nil {
			return nil, err
		}
		text[0].keep()
		text[1].keep()
		i, ok := index[r.doc]
		if !ok {
			continue
		}
		h.Failed, h.ErrorCode = errCol.Valid, errCol.String
		r.key, r.secs, r.sectioned, r.stored = keys[i], nil, false, false
		if i < page {
			if (text[0].b != nil || text[1].b != nil) && h.Seq >= 0 {
				// A text that does not decode is set aside: the
				// snippet is made from the hit's events (hitSections).
				if secs, err := td.decode(nil, text[0].b, text[1].b); err == nil {
					r.secs, r.sectioned, r.stored = secs, true, true
				}
			} else {
				evs = evs[:0]
				for j, q := range []int64{h.Seq, h.ResultSeq} {
					ev, ok, err := e[j].event(q, &appendOp)
					if err != nil {
						return nil, err
					}
					if ok {
						evs = append(evs, ev)
					}
				}
				// A hit whose events the log lacks is read on its own
				// (hitSections), which names the one missing.
				if h.Seq < 0 || len(evs) == len(store.HitSeqs(h)) {
					if r.secs, err = store.HitSections(h, header.String, evs); err != nil {
						return nil, err
					}
					r.sectioned = true
				}
			}
		}
		got[i], seen[i] = r, true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	found := make([]hitRow, 0, len(docs))
	for i := range got {
		if seen[i] {
			found = append(found, got[i])
		}
	}
	return found, nil
}

// newestMatchHits returns up to n documents of a query with words newest
// first, after the cursor: their ids chosen by the statement alone
// (newestMatches: read whole in the same statement, SQLite ran it about
// twice as slowly), then read whole (readHits). tx holds the two in one
// snapshot.
func newestMatchHits(ctx context.Context, tx *sql.Tx, s searchSQL, after *store.SearchCursor, n int) ([]hitRow, error) {
	extra, extraArgs := cursorConds(after)
	q, qargs := newestMatches(s, extra, extraArgs, n)
	rows, err := tx.QueryContext(ctx, matchCTE+q, append([]any{s.match}, qargs...)...)
	if err != nil {
		return nil, err
	}
	var docs []int64
	var keys []float64
	for rows.Next() {
		var doc, at int64
		if err := rows.Scan(&doc, &at); err != nil {
			rows.Close()
			return nil, err
		}
		docs, keys = append(docs, doc), append(keys, float64(at))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return pageHits(ctx, tx, docs, keys, n-1)
}
