package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"prism/core"
	"prism/core/search"
	"prism/store"
)

// searchVersion numbers the rules of the search index (core/search's
// tokenizer and Extract, and how this file files their output). Open
// reindexes the sessions indexed under another version.
// Version 2 keeps each document's query-free snippet (search_docs.snip);
// version 3 its text (search_text, searchtext.go).
const searchVersion = 3

// The index's statements, prepared once on the writer's connection.
const (
	// A card's number (its ordinal among its session's cards of its call
	// id) is counted as it is filed: a session's documents are filed in
	// seq order, so the cards of its call id already filed are the ones
	// before it (migration 0018).
	insDocSQL = `INSERT INTO search_docs (session_id, seq, kind, call_id, tool, result_seq, error, time, snip, card)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, CASE WHEN ?4 IS NULL THEN 0 ELSE (SELECT count(*) + 1 FROM search_docs x
			WHERE x.session_id = ?1 AND x.call_id = ?4 AND x.call_id IS NOT NULL) END)`
	insFTSSQL     = `INSERT INTO search_fts (docid, name, body, more, err) VALUES (?, ?, ?, ?, ?)`
	openCardSQL   = `SELECT id, result_seq IS NULL, snip FROM search_docs WHERE session_id = ? AND call_id = ? AND call_id IS NOT NULL ORDER BY seq DESC`
	updCardSQL    = `UPDATE search_docs SET result_seq = ?, error = ?, snip = ? WHERE id = ?`
	updResultSQL  = `UPDATE search_fts SET more = ?, err = ? WHERE docid = ?`
	sessionDocSQL = `SELECT id FROM search_docs WHERE session_id = ? AND seq = -1`
	updSessFTSSQL = `UPDATE search_fts SET name = ?, body = ? WHERE docid = ?`
	indexedSQL    = `INSERT INTO search_sessions (session_id, version) VALUES (?, ?)
		ON CONFLICT (session_id) DO UPDATE SET version = excluded.version`
	watermarkSQL    = `SELECT x.through, s.last_seq FROM search_sessions x JOIN sessions s ON s.id = x.session_id WHERE x.session_id = ?`
	setWatermarkSQL = `UPDATE search_sessions SET through = ? WHERE session_id = ?`
	// A document's text (searchtext.go): written with it, a card's
	// result's added to its call's (not when its call's was filed without
	// one: its snippet is then made from its events).
	insTextSQL    = `INSERT INTO search_text (id, secs, result_secs) VALUES (?, ?, ?)`
	appendTextSQL = `UPDATE search_text SET result_secs = ? WHERE id = ?`
)

// indexStmts are the index's prepared statements.
type indexStmts struct {
	insDoc, insFTS, openCard, updCard, updResult, sessionDoc, updSessFTS, indexed *sql.Stmt
	watermark, setWatermark, insText, appendText                                  *sql.Stmt
}

func prepareIndex(prep func(string) (*sql.Stmt, error)) (*indexStmts, error) {
	var s indexStmts
	for _, p := range []struct {
		dst **sql.Stmt
		q   string
	}{{&s.insDoc, insDocSQL}, {&s.insFTS, insFTSSQL}, {&s.openCard, openCardSQL}, {&s.updCard, updCardSQL},
		{&s.updResult, updResultSQL}, {&s.sessionDoc, sessionDocSQL}, {&s.updSessFTS, updSessFTSSQL}, {&s.indexed, indexedSQL},
		{&s.watermark, watermarkSQL}, {&s.setWatermark, setWatermarkSQL}, {&s.insText, insTextSQL}, {&s.appendText, appendTextSQL}} {
		st, err := prep(p.q)
		if err != nil {
			return nil, err
		}
		*p.dst = st
	}
	return &s, nil
}

func (s *indexStmts) all() []*sql.Stmt {
	return []*sql.Stmt{s.insDoc, s.insFTS, s.openCard, s.updCard, s.updResult, s.sessionDoc, s.updSessFTS, s.indexed, s.watermark, s.setWatermark,
		s.insText, s.appendText}
}

// bind returns the statements bound to tx.
func (s *indexStmts) bind(tx *connTx) *indexStmts {
	b := *s
	for _, p := range []**sql.Stmt{&b.insDoc, &b.insFTS, &b.openCard, &b.updCard, &b.updResult, &b.sessionDoc, &b.updSessFTS, &b.indexed, &b.watermark, &b.setWatermark,
		&b.insText, &b.appendText} {
		*p = tx.Stmt(*p)
	}
	return &b
}

// index returns the transaction's index statements (bound on first use).
func (t *wtx) index() *indexStmts {
	if t.parent != nil {
		return t.parent.index()
	}
	if t.idx == nil {
		t.idx = t.w.idx.bind(t.tx)
	}
	return t.idx
}

// columns are a document's terms, by column.
type columns [search.NumCols]string

func termColumns(secs []search.Section) columns {
	var b [search.NumCols]strings.Builder
	for _, s := range secs {
		w := &b[s.Col]
		search.EachToken(s.Text, func(tok search.Token) bool {
			if w.Len() > 0 {
				w.WriteByte(' ')
			}
			w.WriteString(tok.Term)
			return true
		})
	}
	var c columns
	for i := range b {
		c[i] = b[i].String()
	}
	return c
}

func nullable(s string, ok bool) any {
	if !ok {
		return nil
	}
	return s
}

// eventDoc is what one event contributes to the index, ready to file:
// its part (search.ExtractFacts), its terms by column and what its
// snippet is made from. The writer prepares it as it files the event
// (indexEvent); an import prepares its events' before its transaction,
// in the importing goroutine (importDocs), so the writer only inserts.
type eventDoc struct {
	part  search.Part
	cols  columns
	plain search.Plain
}

// prepareDoc returns event e's eventDoc (facts: its facts, nil when
// unknown).
func prepareDoc(e *core.Event, facts *core.EventFacts) eventDoc {
	p := search.ExtractFacts(e, facts)
	if p.Role == search.RoleNone {
		return eventDoc{part: p}
	}
	return eventDoc{part: p, cols: termColumns(p.Sections), plain: search.PlainOf(p.Sections)}
}

// indexEvent files one event of session id in the index (an index
// transaction, searchlag.go, files a session's events in seq order): a
// document of its own, a new card, or the result that completes a card
// (paired as the transcript pairs it: with the latest card of its call id
// still waiting for a result).
func (t *wtx) indexEvent(id string, e *core.Event, facts *core.EventFacts) error {
	if t.w.noIndex {
		return nil
	}
	d := prepareDoc(e, facts)
	return t.indexDoc(id, e, &d)
}

// indexDoc is indexEvent for an event whose document is prepared.
func (t *wtx) indexDoc(id string, e *core.Event, d *eventDoc) error {
	if t.w.noIndex {
		return nil
	}
	p := &d.part
	if p.Role == search.RoleNone {
		return nil
	}
	ix := t.index()
	errCol := nullable(p.Code, p.IsError)
	switch p.Role {
	case search.RoleCall:
		// Its number among the cards of its call id is counted as it is
		// filed (insDocSQL).
		return t.insertDoc(id, e.Seq, search.KindCall, p.CallID, nullable(p.Tool, true), nil, nil, e.Time, d.cols, d.plain, p.Sections)
	case search.RoleResult:
		n, open, ok := 1, int64(0), false
		var call *search.Plain
		var ref *cardRef
		if t.batchCards != nil {
			ref, ok = t.openCard(id, p.CallID)
			if ok {
				open, call = ref.doc, &ref.plain
			}
		}
		if !ok {
			var err error
			if n, open, call, ok, err = t.cards(id, p.CallID); err != nil {
				return err
			}
		}
		switch {
		case ok:
			cols := &d.cols
			// The card's snippet: its call's and then its result's (none
			// when its call's was filed without one).
			var snip any
			if call != nil {
				snip = call.Then(d.plain).Reduced().Encode()
			}
			if _, err := ix.updCard.Exec(e.Seq, errCol, snip, open); err != nil {
				return translate(err, "index the result seq "+fmt.Sprint(e.Seq)+" of session "+id)
			}
			if ref != nil && ref.unfiled {
				// Its call's terms and text wait (insertDoc): the card's
				// FTS row and text are written once, whole.
				ref.unfiled = false
				if _, err := ix.insFTS.Exec(open, ref.cols[search.ColName], ref.cols[search.ColBody], cols[search.ColMore], cols[search.ColErr]); err != nil {
					return translate(err, "index the result seq "+fmt.Sprint(e.Seq)+" of session "+id)
				}
				call, result := encodeText(ref.secs), encodeText(p.Sections)
				ref.secs = nil
				if call != nil || result != nil {
					if _, err := ix.insText.Exec(open, call, result); err != nil {
						return translate(err, "index the text of result seq "+fmt.Sprint(e.Seq)+" of session "+id)
					}
				}
				return nil
			}
			if _, err := ix.updResult.Exec(cols[search.ColMore], cols[search.ColErr], open); err != nil {
				return translate(err, "index the result seq "+fmt.Sprint(e.Seq)+" of session "+id)
			}
			if text := encodeText(p.Sections); text != nil {
				if _, err := ix.appendText.Exec(text, open); err != nil {
					return translate(err, "index the text of result seq "+fmt.Sprint(e.Seq)+" of session "+id)
				}
			}
			return nil
		case n > 0:
			// A second result for a call: a row of its own.
			return t.insertDoc(id, e.Seq, search.KindEvent, "", nil, nil, errCol, e.Time, d.cols, d.plain, p.Sections)
		default:
			// The call was never logged: the card is the result alone.
			return t.insertDoc(id, e.Seq, search.KindCall, p.CallID, nil, e.Seq, errCol, e.Time, d.cols, d.plain, p.Sections)
		}
	}
	return t.insertDoc(id, e.Seq, p.Kind, "", nil, nil, errCol, e.Time, d.cols, d.plain, p.Sections)
}

// cards returns how many cards of callID session id has, and the latest
// one still waiting for its result (ok false when none is) with what its
// call's snippet is made from (nil when it was filed without it): the
// result that answers a call completes it, as the transcript pairs them.
func (t *wtx) cards(id, callID string) (n int, open int64, call *search.Plain, ok bool, err error) {
	rows, err := t.index().openCard.Query(id, callID)
	if err != nil {
		return 0, 0, nil, false, translate(err, "read the cards of call "+callID)
	}
	defer rows.Close()
	for rows.Next() {
		var doc int64
		var waiting bool
		var snip sql.NullString
		if err := rows.Scan(&doc, &waiting, &snip); err != nil {
			return 0, 0, nil, false, translate(err, "read the cards of call "+callID)
		}
		if waiting && !ok {
			open, ok = doc, true
			if snip.Valid {
				if p, err := search.DecodePlain(snip.String); err == nil {
					call = &p
				} // else none: its card's snippet is read from the log
			}
		}
		n++
	}
	return n, open, call, ok, translate(rows.Err(), "read the cards of call "+callID)
}

// insertDoc files a document of session id: c are its terms, plain what
// its snippet is made from (PlainOf its sections; unused for a session's
// own document, seq -1), secs its sections (its text; nil for a session's
// own document).
func (t *wtx) insertDoc(id string, seq int64, kind, callID string, tool, resultSeq, errCol any, at int64, c columns, plain search.Plain, secs []search.Section) error {
	ix := t.index()
	var call any
	if kind == search.KindCall {
		call = callID
	}
	// Its query-free snippet: whole for a card that waits for its result,
	// else only what it shows; none for a session's own document (its
	// title changes).
	var snip any
	if seq >= 0 {
		if kind == search.KindCall && resultSeq == nil {
			snip = plain.Encode()
		} else {
			snip = plain.Reduced().Encode()
		}
	}
	res, err := ix.insDoc.Exec(id, seq, kind, call, tool, resultSeq, errCol, at, snip)
	if err != nil {
		return translate(err, fmt.Sprintf("index seq %d of session %s", seq, id))
	}
	doc, err := res.LastInsertId()
	if err != nil {
		return translate(err, fmt.Sprintf("index seq %d of session %s", seq, id))
	}
	if t.batchCards != nil && kind == search.KindCall {
		// A card waiting for its result in an index transaction keeps
		// its terms until the result comes (or its session's filing
		// ends, fileUnfiled): an FTS4 UPDATE of the row would re-read and
		// delete its terms and, its docid not being the newest, flush
		// FTS4's pending terms into a segment of their own every time.
		ref := &cardRef{doc: doc, waiting: resultSeq == nil, plain: plain}
		k := cardKey{id, callID}
		t.batchCards[k] = append(t.batchCards[k], ref)
		if ref.waiting {
			ref.unfiled, ref.cols, ref.secs = true, c, secs
			t.unfiled = append(t.unfiled, ref)
			return nil
		}
	}
	if _, err := ix.insFTS.Exec(doc, c[0], c[1], c[2], c[3]); err != nil {
		return translate(err, fmt.Sprintf("index seq %d of session %s", seq, id))
	}
	if text := encodeText(secs); text != nil {
		if _, err := ix.insText.Exec(doc, text, nil); err != nil {
			return translate(err, fmt.Sprintf("index the text of seq %d of session %s", seq, id))
		}
	}
	return nil
}

// indexSession writes a session's own document (its title and cwd) and
// marks it indexed under the current rules.
func (t *wtx) indexSession(id string, s *sessState) error {
	if t.w.noIndex {
		return nil
	}
	ix := t.index()
	var h struct {
		Cwd string `json:"cwd"`
	}
	_ = json.Unmarshal([]byte(s.header), &h)
	c := termColumns(search.SessionSections(s.sum.Title, h.Cwd))
	var doc int64
	switch err := ix.sessionDoc.QueryRow(id).Scan(&doc); {
	case errors.Is(err, sql.ErrNoRows):
		if err := t.insertDoc(id, -1, search.KindSession, "", nil, nil, nil, s.createdAt, c, search.Plain{}, nil); err != nil {
			return err
		}
	case err != nil:
		return translate(err, "index session "+id)
	default:
		if _, err := ix.updSessFTS.Exec(c[search.ColName], c[search.ColBody], doc); err != nil {
			return translate(err, "index session "+id)
		}
	}
	if _, err := ix.indexed.Exec(id, searchVersion); err != nil {
		return translate(err, "index session "+id)
	}
	return nil
}

// unindexEvents removes the documents of a session's events (its own
// document stays) and moves its watermark back before the first event:
// its log is being replaced.
func (t *wtx) unindexEvents(id string) error {
	if _, err := t.index().setWatermark.Exec(-1, id); err != nil {
		return translate(err, "unindex session "+id)
	}
	if _, err := t.tx.Exec("DELETE FROM search_fts WHERE docid IN (SELECT id FROM search_docs WHERE session_id = ? AND seq >= 0)", id); err != nil {
		return translate(err, "unindex session "+id)
	}
	if _, err := t.tx.Exec("DELETE FROM search_docs WHERE session_id = ? AND seq >= 0", id); err != nil {
		return translate(err, "unindex session "+id)
	}
	return nil
}

// reindex rebuilds a session's documents from its stored log.
func (t *wtx) reindex(id string) (events int, err error) {
	s, err := t.state(id)
	if err != nil || !s.exists {
		return 0, err
	}
	if err := t.unindexEvents(id); err != nil {
		return 0, err
	}
	if err := t.indexSession(id, s); err != nil {
		return 0, err
	}
	return t.catchUp(id, nil)
}

// reindexSearch indexes the sessions not indexed under the current rules:
// every session of a database written before the index existed (once), or
// all of them when the rules change. It logs its progress every few
// seconds, so the terminal shows how a large database is getting on. Open
// calls it.
func (st *Store) reindexSearch(ctx context.Context) error {
	rows, err := st.rdb.QueryContext(ctx, `SELECT s.id, s.last_seq + 1 FROM sessions s
		LEFT JOIN search_sessions x ON x.session_id = s.id WHERE x.version IS NULL OR x.version <> ? ORDER BY s.id`, searchVersion)
	if err != nil {
		return translate(err, "list sessions to index")
	}
	var list []store.Unindexed
	for rows.Next() {
		var x store.Unindexed
		if err := rows.Scan(&x.ID, &x.Events); err != nil {
			rows.Close()
			return translate(err, "list sessions to index")
		}
		list = append(list, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return translate(err, "list sessions to index")
	}
	return store.ReindexSessions(st.log, list, func(id string) error {
		return st.write(ctx, func(t *wtx) error { _, err := t.reindex(id); return err })
	})
}
