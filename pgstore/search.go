package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"prism/core"
	"prism/core/search"
	"prism/store"
)

// searchVersion numbers the rules of the search index: core/search's
// tokenizer and Extract (shared with the SQLite store, whose
// db.searchVersion moves with it) and how this file files their output.
// Open reindexes the sessions indexed under another version.
const searchVersion = 1

// tsvector's limits: a position is at most maxPos (later words share it),
// and a term keeps at most maxPositions positions.
const (
	maxPos       = 16383
	maxPositions = 256
)

// colWeight is the tsvector weight of each search.Col.
var colWeight = [search.NumCols]byte{'A', 'B', 'C', 'D'}

// rankWeights weigh a match by its column for ts_rank, in its order
// {D, C, B, A}: the error identity, results and reasoning, the text, a
// tool's name or a title — the SQLite store's column weights (2, 1, 0.8,
// 1.5 for A, B, C, D) scaled into ts_rank's range.
const rankWeights = "'{0.75, 0.4, 0.5, 1.0}'::float4[]"

// termVector builds a document's tsvector from its sections' terms, as
// core/search splits them: a column's terms are numbered in order, each
// column starting after a gap, so that a phrase never matches across two
// columns (as it never does across FTS columns in SQLite).
type termVector struct {
	pos   int
	terms map[string][]string // term → "pos" + weight
	order []string
}

// add numbers secs' terms on from the vector's last position.
func (v *termVector) add(secs []search.Section) {
	if v.terms == nil {
		v.terms = map[string][]string{}
	}
	for col := search.Col(0); col < search.NumCols; col++ {
		first := true
		for _, s := range secs {
			if s.Col != col {
				continue
			}
			search.EachToken(s.Text, func(tok search.Token) bool {
				if first {
					v.pos++ // the gap before a column
					first = false
				}
				v.pos++
				p := strconv.Itoa(min(v.pos, maxPos)) + string(colWeight[col])
				ps, seen := v.terms[tok.Term]
				if !seen {
					v.order = append(v.order, tok.Term)
				}
				if len(ps) < maxPositions && (len(ps) == 0 || ps[len(ps)-1] != p) {
					v.terms[tok.Term] = append(ps, p)
				}
				return true
			})
		}
	}
}

// String writes the vector as a tsvector literal: each term quoted as it
// is, with its positions and weights.
func (v *termVector) String() string {
	var b strings.Builder
	for i, t := range v.order {
		if i > 0 {
			b.WriteByte(' ')
		}
		quoteLexeme(&b, t)
		b.WriteByte(':')
		b.WriteString(strings.Join(v.terms[t], ","))
	}
	return b.String()
}

// quoteLexeme writes a term as a quoted tsvector/tsquery lexeme. Terms
// hold only lower-case ASCII letters and digits and non-ASCII characters;
// a quote or backslash would be escaped all the same.
func quoteLexeme(b *strings.Builder, t string) {
	b.WriteByte('\'')
	for i := 0; i < len(t); i++ {
		if t[i] == '\'' || t[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(t[i])
	}
	b.WriteByte('\'')
}

func vectorOf(secs []search.Section) *termVector {
	v := &termVector{}
	v.add(secs)
	return v
}

// cardKey names the cards of one call id in one session.
type cardKey struct{ session, callID string }

// docRow is a document to insert.
type docRow struct {
	session, kind, callID, tool string
	seq, resultSeq, time        int64
	failed                      bool
	code                        string
	terms                       *termVector
}

// resultOp is a tool result whose card is not among this transaction's
// documents: the database pairs it (see pairResultSQL).
type resultOp struct {
	session, callID string
	seq, time       int64
	failed          bool
	code            string
	terms           string
}

// searchIndex is what a write transaction adds to the search index,
// written at flush: new documents (cards completed in memory when their
// call is in the same transaction), results paired by the database, and
// the sessions' own documents.
type searchIndex struct {
	docs    []*docRow
	cards   map[cardKey][]*docRow // this transaction's cards, in seq order
	results []resultOp
}

// indexEvent files one appended event of session id: a document of its
// own, a new card, or the result that completes a card (paired as the
// transcript pairs it: with the latest card of its call id still waiting
// for a result). facts, when not nil, are the event's facts: the words the
// session handed over with them are filed without decoding the data again.
func (x *searchIndex) indexEvent(id string, e *core.Event, facts *core.EventFacts) {
	p := search.ExtractFacts(e, facts)
	switch p.Role {
	case search.RoleNone:
		return
	case search.RoleCall:
		d := &docRow{session: id, seq: e.Seq, kind: search.KindCall, callID: p.CallID, tool: p.Tool, resultSeq: -1, time: e.Time, terms: vectorOf(p.Sections)}
		x.docs = append(x.docs, d)
		if x.cards == nil {
			x.cards = map[cardKey][]*docRow{}
		}
		k := cardKey{id, p.CallID}
		x.cards[k] = append(x.cards[k], d)
		return
	case search.RoleResult:
		cs := x.cards[cardKey{id, p.CallID}]
		for i := len(cs) - 1; i >= 0; i-- {
			if c := cs[i]; c.resultSeq < 0 {
				c.resultSeq, c.failed, c.code = e.Seq, p.IsError, p.Code
				c.terms.add(p.Sections)
				return
			}
		}
		// The card, if any, is an earlier transaction's: every card of
		// this one with a smaller seq is complete by now.
		r := vectorOf(nil)
		r.pos = 1 // a gap after the card's terms it is appended to
		r.add(p.Sections)
		x.results = append(x.results, resultOp{session: id, callID: p.CallID, seq: e.Seq, time: e.Time, failed: p.IsError, code: p.Code, terms: r.String()})
		return
	}
	x.docs = append(x.docs, &docRow{session: id, seq: e.Seq, kind: p.Kind, resultSeq: -1, time: e.Time, failed: p.IsError, code: p.Code, terms: vectorOf(p.Sections)})
}

func (x *searchIndex) empty() bool { return len(x.docs) == 0 && len(x.results) == 0 }

// insertDocsSQL inserts documents column by column.
const insertDocsSQL = `INSERT INTO search_docs (session_id, seq, kind, call_id, tool, result_seq, error, time, terms)
	SELECT s, q, k, CASE WHEN k = 'call' THEN c END, NULLIF(tl, ''), NULLIF(r, -1), CASE WHEN f THEN e END, ti, v::tsvector
	FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::boolean[], $8::text[], $9::bigint[], $10::text[])
		AS u(s, q, k, c, tl, r, f, e, ti, v)`

// queueDocs queues the insert of the documents.
func (x *searchIndex) queueDocs(b *pgx.Batch) {
	n := len(x.docs)
	session, kind, call, tool, code, terms := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	seq, result, at := make([]int64, n), make([]int64, n), make([]int64, n)
	failed := make([]bool, n)
	for i, d := range x.docs {
		session[i], kind[i], call[i], tool[i], code[i], terms[i] = d.session, d.kind, d.callID, d.tool, d.code, d.terms.String()
		seq[i], result[i], at[i], failed[i] = d.seq, d.resultSeq, d.time, d.failed
	}
	b.Queue(insertDocsSQL, session, seq, kind, call, tool, result, failed, code, at, terms)
}

// pairResultSQL files a tool result whose card an earlier transaction
// wrote, by the transcript's rule: it completes the latest card of its
// call id still waiting (before it in the log); with no such card, a call
// id that has cards gets a row of its own (a second result), and one that
// has none a card of the result alone (its call was never logged).
const pairResultSQL = `WITH open AS (
		SELECT id FROM search_docs WHERE session_id = $1 AND call_id = $2 AND seq < $3 AND result_seq IS NULL
		ORDER BY seq DESC LIMIT 1),
	done AS (
		UPDATE search_docs d SET result_seq = $3, error = $4, terms = d.terms || $5::tsvector FROM open WHERE d.id = open.id RETURNING d.id),
	cards AS (
		SELECT EXISTS (SELECT 1 FROM search_docs WHERE session_id = $1 AND call_id = $2 AND seq < $3) AS any)
	INSERT INTO search_docs (session_id, seq, kind, call_id, result_seq, error, time, terms)
	SELECT $1, $3, CASE WHEN cards.any THEN 'event' ELSE 'call' END, CASE WHEN cards.any THEN NULL ELSE $2 END,
		CASE WHEN cards.any THEN NULL ELSE $3::bigint END, $4, $6, $5::tsvector
	FROM cards WHERE NOT EXISTS (SELECT 1 FROM open)`

// queueResults queues the results the database pairs, in log order.
func (x *searchIndex) queueResults(b *pgx.Batch) {
	for _, r := range x.results {
		var code *string
		if r.failed {
			code = &r.code
		}
		b.Queue(pairResultSQL, r.session, r.callID, r.seq, code, r.terms, r.time)
	}
}

// upsertSessionDocsSQL writes sessions' own documents (seq -1: the title
// and cwd) and marks them indexed under the current rules.
const upsertSessionDocsSQL = `WITH docs AS (
		INSERT INTO search_docs (session_id, seq, kind, time, terms)
		SELECT s, -1, 'session', t, v::tsvector FROM unnest($1::text[], $2::bigint[], $3::text[]) AS u(s, t, v)
		ON CONFLICT (session_id, seq) DO UPDATE SET terms = excluded.terms)
	INSERT INTO search_sessions (session_id, version) SELECT s, $4 FROM unnest($1::text[]) AS s
	ON CONFLICT (session_id) DO UPDATE SET version = excluded.version`

// queueSessionDocs queues the own documents of sessions (created,
// replaced, retitled or reindexed ones).
func queueSessionDocs(b *pgx.Batch, ids []string, states []*sessState) {
	at, terms := make([]int64, len(ids)), make([]string, len(ids))
	for i, s := range states {
		at[i], terms[i] = s.createdAt, vectorOf(search.SessionSections(s.sum.Title, store.HeaderCwd(s.header))).String()
	}
	b.Queue(upsertSessionDocsSQL, ids, at, terms, searchVersion)
}

// unindexEvents removes the documents of a session's events (its own
// document stays): its log is being replaced or reindexed.
func (t *wtx) unindexEvents(ctx context.Context, id string) error {
	if _, err := t.tx.Exec(ctx, "DELETE FROM search_docs WHERE session_id = $1 AND seq >= 0", id); err != nil {
		return translate(err, "unindex session "+id)
	}
	return nil
}

// reindex rebuilds a locked session's documents from its stored log.
func (t *wtx) reindex(ctx context.Context, id string) (events int, err error) {
	s := t.touched[id]
	if s == nil || !s.exists {
		return 0, nil
	}
	if err := t.unindexEvents(ctx, id); err != nil {
		return 0, err
	}
	log, err := t.loadEvents(ctx, id)
	if err != nil {
		return 0, err
	}
	for i := range log {
		t.idx.indexEvent(id, &log[i], nil)
	}
	s.reindexed = true
	return len(log), nil
}

// reindexSearch indexes the sessions not indexed under the current rules:
// every session of a database written before the index existed (once), or
// all of them when the rules change. Each session is reindexed in a
// transaction that holds its row lock, and skipped when another node
// indexed it meanwhile. It logs its progress every few seconds. Open calls
// it.
func (st *Store) reindexSearch(ctx context.Context) error {
	rows, err := st.pool.Query(ctx, `SELECT s.id, s.last_seq + 1 FROM sessions s
		LEFT JOIN search_sessions x ON x.session_id = s.id WHERE x.version IS DISTINCT FROM $1 ORDER BY s.id`, searchVersion)
	if err != nil {
		return translate(err, "list sessions to index")
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Unindexed, error) {
		var x store.Unindexed
		return x, r.Scan(&x.ID, &x.Events)
	})
	if err != nil {
		return translate(err, "list sessions to index")
	}
	return store.ReindexSessions(st.log, list, func(id string) error {
		return st.inTx(ctx, func(t *wtx) error {
			if err := t.lock(ctx, []string{id}); err != nil {
				return err
			}
			var stale bool
			if err := t.tx.QueryRow(ctx, "SELECT NOT EXISTS (SELECT 1 FROM search_sessions WHERE session_id = $1 AND version = $2)", id, searchVersion).Scan(&stale); err != nil {
				return translate(err, "index session "+id)
			}
			if !stale {
				return nil // another node indexed it meanwhile
			}
			_, err := t.reindex(ctx, id)
			return err
		})
	})
}

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

// pgSearch is a query in SQL: the tsquery of its words ("" when it has
// none to rank by) and the conditions on search_docs d and sessions s.
type pgSearch struct {
	match string
	where []string
	args  []any
}

// arg adds a parameter and returns its placeholder.
func (s *pgSearch) arg(v any) string {
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
func (s *pgSearch) filterSQL(t search.Term) string {
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
func compileSearch(q *search.Query) pgSearch {
	var s pgSearch
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

// hitCols are a hit's columns. A card's ordinal among the cards of its
// call id is counted here, for the hits shown, rather than at append.
const hitCols = `d.id, d.session_id, d.seq, d.kind, COALESCE(d.call_id, ''),
	CASE WHEN d.call_id IS NULL THEN 0 ELSE (SELECT count(*) FROM search_docs x
		WHERE x.session_id = d.session_id AND x.call_id = d.call_id AND x.seq <= d.seq) END,
	COALESCE(d.tool, ''), COALESCE(d.result_seq, -1), d.error, d.time, s.title, s.status`

// hitRow is one matched document and its sort key.
type hitRow struct {
	hit store.SearchHit
	doc int64
	key float64
}

// Search runs a parsed query over the index and returns a page of hits
// with their snippets, read in one snapshot: every hit is a committed
// document whose events exist. Words are ranked by ts_rank (the SQLite
// store ranks by BM25: the orders of equally good hits may differ).
func (st *Store) Search(ctx context.Context, q *search.Query, o store.SearchOptions) (store.SearchPage, error) {
	s := compileSearch(q)
	plan, err := store.PlanSearch(o, s.match != "")
	if err != nil {
		return store.SearchPage{}, err
	}
	conds := s.where
	key := "d.time::float8"
	var sb strings.Builder
	if s.match != "" {
		m := s.arg(s.match)
		conds = append([]string{"d.terms @@ " + m + "::tsquery"}, conds...)
		if plan.Order == store.OrderRank {
			key = "ts_rank(" + rankWeights + ", d.terms, " + m + "::tsquery)::float8"
		}
	}
	sb.WriteString("WITH m AS (SELECT d.id, " + key + " AS key FROM search_docs d JOIN sessions s ON s.id = d.session_id")
	if len(conds) > 0 {
		sb.WriteString(" WHERE " + strings.Join(conds, " AND "))
	}
	sb.WriteString(") SELECT " + hitCols + ", m.key FROM m JOIN search_docs d ON d.id = m.id JOIN sessions s ON s.id = d.session_id")
	if a := plan.After; a != nil {
		k := s.arg(a.Key)
		sb.WriteString(" WHERE (m.key < " + k + " OR (m.key = " + k + " AND d.id < " + s.arg(a.Doc) + "))")
	}
	sb.WriteString(" ORDER BY m.key DESC, d.id DESC LIMIT " + s.arg(plan.Limit+1))
	var page store.SearchPage
	err = pgx.BeginTxFunc(ctx, st.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sb.String(), s.args...)
		if err != nil {
			return err
		}
		found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hitRow, error) {
			var x hitRow
			h := &x.hit
			var code *string
			err := r.Scan(&x.doc, &h.SessionID, &h.Seq, &h.Kind, &h.CallID, &h.Card, &h.Tool, &h.ResultSeq, &code, &h.Time, &h.SessionTitle, &h.SessionStatus, &x.key)
			if code != nil {
				h.Failed, h.ErrorCode = true, *code
			}
			return x, err
		})
		if err != nil {
			return err
		}
		page = store.SearchPage{Hits: make([]store.SearchHit, 0, min(len(found), plan.Limit))}
		if len(found) > plan.Limit {
			last := found[plan.Limit-1]
			page.NextCursor = store.SearchCursor{Order: plan.Order, Key: last.key, Doc: last.doc}.Encode()
			found = found[:plan.Limit]
		}
		hl := q.Highlights()
		for _, r := range found {
			secs, err := hitSections(ctx, tx, &r.hit)
			if err != nil {
				return fmt.Errorf("snippet of session %s: %w", r.hit.SessionID, err)
			}
			r.hit.Snippet = search.MakeSnippet(secs, hl)
			page.Hits = append(page.Hits, r.hit)
		}
		return nil
	})
	if err != nil {
		return store.SearchPage{}, translate(err, "search")
	}
	return page, nil
}

// hitSections re-reads what a hit's document was built from.
func hitSections(ctx context.Context, tx pgx.Tx, h *store.SearchHit) ([]search.Section, error) {
	var header string
	var events []core.Event
	if seqs := store.HitSeqs(h); len(seqs) == 0 {
		if err := tx.QueryRow(ctx, "SELECT header FROM sessions WHERE id = $1", h.SessionID).Scan(&header); err != nil {
			return nil, err
		}
	} else {
		var err error
		if events, err = queryEvents(ctx, tx, 2, eventsSQL+" WHERE session_id = $1 AND seq = ANY($2) ORDER BY seq", h.SessionID, seqs); err != nil {
			return nil, err
		}
	}
	return store.HitSections(h, header, events)
}
