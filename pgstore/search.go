package pgstore

import (
	"context"
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
// Version 2 keeps each document's query-free snippet (search_docs.snip);
// version 3 its sections (search_docs.secs, searchsecs.go).
const searchVersion = 3

// tsvector's limits: a position is at most maxPos (later words share it),
// and a term keeps at most maxPositions positions.
const (
	maxPos       = 16383
	maxPositions = 256
)

// colWeight is the tsvector weight of each search.Col.
var colWeight = [search.NumCols]byte{'A', 'B', 'C', 'D'}

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
	plain                       search.Plain // what its query-free snippet is made from
	// secs are its sections (a card's call's, then its result's): what
	// its snippet is made from when a query has words to mark.
	secs []search.Section
	// ord is a card's ordinal among this transaction's cards of its call
	// id (0 for any other document): insertDocsSQL adds the cards filed
	// before.
	ord int32
}

// resultOp is a tool result whose card is not among this transaction's
// documents: the database pairs it (see pairResultSQL).
type resultOp struct {
	session, callID string
	seq, time       int64
	failed          bool
	code            string
	terms           string
	plain           string // its search.Plain as JSON, merged after its card's
	secs            []byte // its sections (encodeSections), appended to its card's
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
		d := &docRow{session: id, seq: e.Seq, kind: search.KindCall, callID: p.CallID, tool: p.Tool, resultSeq: -1, time: e.Time, terms: vectorOf(p.Sections),
			plain: search.PlainOf(p.Sections), secs: p.Sections}
		x.docs = append(x.docs, d)
		if x.cards == nil {
			x.cards = map[cardKey][]*docRow{}
		}
		k := cardKey{id, p.CallID}
		d.ord = int32(len(x.cards[k]) + 1)
		x.cards[k] = append(x.cards[k], d)
		return
	case search.RoleResult:
		cs := x.cards[cardKey{id, p.CallID}]
		for i := len(cs) - 1; i >= 0; i-- {
			if c := cs[i]; c.resultSeq < 0 {
				c.resultSeq, c.failed, c.code = e.Seq, p.IsError, p.Code
				c.terms.add(p.Sections)
				c.plain = c.plain.Then(search.PlainOf(p.Sections))
				c.secs = append(c.secs[:len(c.secs):len(c.secs)], p.Sections...)
				return
			}
		}
		// The card, if any, is an earlier transaction's: every card of
		// this one with a smaller seq is complete by now.
		r := vectorOf(nil)
		r.pos = 1 // a gap after the card's terms it is appended to
		r.add(p.Sections)
		x.results = append(x.results, resultOp{session: id, callID: p.CallID, seq: e.Seq, time: e.Time, failed: p.IsError, code: p.Code, terms: r.String(),
			plain: search.PlainOf(p.Sections).Encode(), secs: encodeSections(p.Sections)})
		return
	}
	x.docs = append(x.docs, &docRow{session: id, seq: e.Seq, kind: p.Kind, resultSeq: -1, time: e.Time, failed: p.IsError, code: p.Code, terms: vectorOf(p.Sections),
		plain: search.PlainOf(p.Sections), secs: p.Sections})
}

func (x *searchIndex) empty() bool { return len(x.docs) == 0 && len(x.results) == 0 }

// insertDocsSQL inserts documents column by column. A card's number (its
// ordinal among its session's cards of its call id) is its ordinal among
// this transaction's (o) after the cards filed before it: the statement's
// snapshot holds those, not the rows it inserts.
const insertDocsSQL = `INSERT INTO search_docs (session_id, seq, kind, call_id, tool, result_seq, error, time, terms, snip, card, secs)
	SELECT s, q, k, CASE WHEN k = 'call' THEN c END, NULLIF(tl, ''), NULLIF(r, -1), CASE WHEN f THEN e END, ti, v::tsvector, sn::jsonb,
		CASE WHEN k = 'call' THEN o + (SELECT count(*) FROM search_docs x WHERE x.session_id = u.s AND x.call_id = u.c)::int ELSE 0 END, sc
	FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::boolean[], $8::text[], $9::bigint[], $10::text[], $11::text[], $12::int[],
		$13::bytea[])
		AS u(s, q, k, c, tl, r, f, e, ti, v, sn, o, sc)`

// queueDocs queues the insert of the documents.
func (x *searchIndex) queueDocs(b *pgx.Batch) {
	n := len(x.docs)
	session, kind, call, tool, code, terms, plain := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	seq, result, at := make([]int64, n), make([]int64, n), make([]int64, n)
	failed := make([]bool, n)
	ord := make([]int32, n)
	secs := make([][]byte, n)
	for i, d := range x.docs {
		secs[i] = encodeSections(d.secs)
		session[i], kind[i], call[i], tool[i], code[i], terms[i] = d.session, d.kind, d.callID, d.tool, d.code, d.terms.String()
		seq[i], result[i], at[i], failed[i], ord[i] = d.seq, d.resultSeq, d.time, d.failed, d.ord
		// A card that waits for its result keeps its call's snippet
		// whole (pairResultSQL merges the result's in); any other
		// document only the part it shows.
		if d.kind == search.KindCall && d.resultSeq < 0 {
			plain[i] = d.plain.Encode()
		} else {
			plain[i] = d.plain.Reduced().Encode()
		}
	}
	b.Queue(insertDocsSQL, session, seq, kind, call, tool, result, failed, code, at, terms, plain, ord, secs)
}

// pairResultSQL files a tool result whose card an earlier transaction
// wrote, by the transcript's rule: it completes the latest card of its
// call id still waiting (before it in the log); with no such card, a call
// id that has cards gets a row of its own (a second result), and one that
// has none a card of the result alone (its call was never logged): card 1,
// and the later cards of its call id (this transaction's, inserted before
// it by insertDocsSQL) one more.
const pairResultSQL = `WITH open AS (
		SELECT id FROM search_docs WHERE session_id = $1 AND call_id = $2 AND seq < $3 AND result_seq IS NULL
		ORDER BY seq DESC LIMIT 1),
	done AS (
		UPDATE search_docs d SET result_seq = $3, error = $4, terms = d.terms || $5::tsvector, snip = $7::jsonb || d.snip, secs = d.secs || $8::bytea
		FROM open WHERE d.id = open.id RETURNING d.id),
	cards AS (
		SELECT EXISTS (SELECT 1 FROM search_docs WHERE session_id = $1 AND call_id = $2 AND seq < $3) AS any),
	ins AS (
		INSERT INTO search_docs (session_id, seq, kind, call_id, result_seq, error, time, terms, snip, card, secs)
		SELECT $1, $3, CASE WHEN cards.any THEN 'event' ELSE 'call' END, CASE WHEN cards.any THEN NULL ELSE $2 END,
			CASE WHEN cards.any THEN NULL ELSE $3::bigint END, $4, $6, $5::tsvector, $7::jsonb, CASE WHEN cards.any THEN 0 ELSE 1 END, $8::bytea
		FROM cards WHERE NOT EXISTS (SELECT 1 FROM open)
		RETURNING kind)
	UPDATE search_docs d SET card = d.card + 1
	WHERE EXISTS (SELECT 1 FROM ins WHERE ins.kind = 'call') AND d.session_id = $1 AND d.call_id = $2 AND d.seq > $3`

// queueResults queues the results the database pairs, in log order.
func (x *searchIndex) queueResults(b *pgx.Batch) {
	for _, r := range x.results {
		var code *string
		if r.failed {
			code = &r.code
		}
		b.Queue(pairResultSQL, r.session, r.callID, r.seq, code, r.terms, r.time, r.plain, r.secs)
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
		return st.write(ctx, func(t *wtx) error {
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
