package db

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"

	"prism/core"
	"prism/core/search"
)

// An import that files its own search documents (ImportOptions.FileIndex)
// prepares them in the importing goroutine, before its transaction:
// each event's eventDoc (its part, terms and snippet parts), and, for a
// session the file starts from its first event, the session's document
// rows as the index ends up holding them once every event is filed
// (planDocs). The writer inserts those rows as they are — each card's
// search_docs row and FTS row written once, whole, a few rows a
// statement — when the session is new to the index (created or replaced
// by the import); otherwise it files the prepared documents one by one
// as an index transaction does (catchUp).

// docRow is a search_docs row and its search_fts terms, as filed.
type docRow struct {
	seq       int64
	kind      string
	callID    any // a card's call id (string), else nil
	tool      any
	resultSeq any
	errCol    any
	time      int64
	snip      any
	card      int64
	cols      columns // the FTS row's terms
	// While planned: the card's call plain and whether it still waits for
	// its result.
	plain   search.Plain
	waiting bool
}

// planDocs returns the document rows of a session whose events (from its
// first, in seq order, docs[i] being events[i]'s) are all filed into an
// index that holds none of them: what indexDoc files, event by event, in
// one index transaction (cards paired by call id with the latest one still
// waiting, numbered by call id; a card's FTS row its call's name and body
// with its result's more and err; its snippet its call's and then its
// result's, reduced; a card still waiting keeps its whole snippet).
func planDocs(events []core.Event, docs []eventDoc) []docRow {
	rows := make([]docRow, 0, len(events))
	cards := map[string][]int{} // a call id's cards, as rows indices, in seq order
	for i := range events {
		e, d := &events[i], &docs[i]
		p := &d.part
		errCol := nullable(p.Code, p.IsError)
		switch p.Role {
		case search.RoleNone:
			continue
		case search.RoleCall:
			cards[p.CallID] = append(cards[p.CallID], len(rows))
			rows = append(rows, docRow{seq: e.Seq, kind: search.KindCall, callID: p.CallID, tool: p.Tool, time: e.Time,
				card: int64(len(cards[p.CallID])), cols: d.cols, plain: d.plain, waiting: true})
			continue
		case search.RoleResult:
			ids := cards[p.CallID]
			open := -1
			for k := len(ids) - 1; k >= 0; k-- {
				if rows[ids[k]].waiting {
					open = ids[k]
					break
				}
			}
			switch {
			case open >= 0:
				r := &rows[open]
				r.waiting, r.resultSeq, r.errCol = false, e.Seq, errCol
				r.snip = r.plain.Then(d.plain).Reduced().Encode()
				r.cols[search.ColMore], r.cols[search.ColErr] = d.cols[search.ColMore], d.cols[search.ColErr]
			case len(ids) > 0:
				// A second result for a call: a row of its own.
				rows = append(rows, docRow{seq: e.Seq, kind: search.KindEvent, errCol: errCol, time: e.Time,
					snip: d.plain.Reduced().Encode(), cols: d.cols})
			default:
				// The call was never logged: the card is the result alone.
				cards[p.CallID] = append(ids, len(rows))
				rows = append(rows, docRow{seq: e.Seq, kind: search.KindCall, callID: p.CallID, resultSeq: e.Seq, errCol: errCol,
					time: e.Time, snip: d.plain.Reduced().Encode(), card: int64(len(ids) + 1), cols: d.cols})
			}
			continue
		}
		rows = append(rows, docRow{seq: e.Seq, kind: p.Kind, errCol: errCol, time: e.Time, snip: d.plain.Reduced().Encode(), cols: d.cols})
	}
	for i := range rows {
		if r := &rows[i]; r.waiting {
			r.snip = r.plain.Encode()
		}
		rows[i].plain = search.Plain{}
	}
	return rows
}

// docsPerInsert is how many rows one INSERT of planned documents holds.
const docsPerInsert = 32

// insertPlanned files session id's planned document rows (planDocs), its
// events through last, and moves its watermark to last. Their ids follow
// the largest in search_docs, as an INSERT without one would give them.
// ok false (nothing written): the index already holds documents of the
// session's events, or its watermark is not before its first event — the
// caller files the events one by one instead.
func (t *wtx) insertPlanned(id string, rows []docRow, last int64) (ok bool, err error) {
	ix := t.index()
	var through, stored int64
	switch err := ix.watermark.QueryRow(id).Scan(&through, &stored); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, translate(err, "search index: read the watermark of session "+id)
	}
	if through != -1 || stored != last {
		return false, nil
	}
	var base int64
	var held int
	if err := t.tx.QueryRow(`SELECT coalesce(max(id), 0), EXISTS (SELECT 1 FROM search_docs WHERE session_id = ? AND seq >= 0) FROM search_docs`, id).Scan(&base, &held); err != nil {
		return false, translate(err, "search index: read the last document id")
	}
	if held != 0 || base > math.MaxInt64-int64(len(rows)) {
		return false, nil
	}
	const docCols, ftsCols = 11, 5
	// The statements of a full chunk and of the last one, prepared once.
	stmts := map[string]*sql.Stmt{}
	defer func() {
		for _, s := range stmts {
			s.Close()
		}
	}()
	exec := func(q string, args []any) error {
		s := stmts[q]
		if s == nil {
			var err error
			if s, err = t.tx.Prepare(q); err != nil {
				return err
			}
			stmts[q] = s
		}
		_, err := s.Exec(args...)
		return err
	}
	docArgs := make([]any, 0, docsPerInsert*docCols)
	ftsArgs := make([]any, 0, docsPerInsert*ftsCols)
	var idArg any = id
	for from := 0; from < len(rows); from += docsPerInsert {
		chunk := rows[from:min(from+docsPerInsert, len(rows))]
		docArgs, ftsArgs = docArgs[:0], ftsArgs[:0]
		for i := range chunk {
			r := &chunk[i]
			doc := base + int64(from+i) + 1
			docArgs = append(docArgs, doc, idArg, r.seq, r.kind, r.callID, r.tool, r.resultSeq, r.errCol, r.time, r.snip, r.card)
			ftsArgs = append(ftsArgs, doc, r.cols[0], r.cols[1], r.cols[2], r.cols[3])
		}
		if err := exec(valuesSQL(insPlannedDocsSQL, docCols, len(chunk)), docArgs); err != nil {
			return false, translate(err, fmt.Sprintf("search index: file seqs %d–%d of session %s", chunk[0].seq, chunk[len(chunk)-1].seq, id))
		}
		if err := exec(valuesSQL(insPlannedFTSSQL, ftsCols, len(chunk)), ftsArgs); err != nil {
			return false, translate(err, fmt.Sprintf("search index: file the terms of seqs %d–%d of session %s", chunk[0].seq, chunk[len(chunk)-1].seq, id))
		}
	}
	if _, err := ix.setWatermark.Exec(last, id); err != nil {
		return false, translate(err, "search index: move the watermark of session "+id)
	}
	return true, nil
}

// The INSERTs of planned rows, followed by their VALUES tuples.
const (
	insPlannedDocsSQL = `INSERT INTO search_docs (id, session_id, seq, kind, call_id, tool, result_seq, error, time, snip, card) VALUES `
	insPlannedFTSSQL  = `INSERT INTO search_fts (docid, name, body, more, err) VALUES `
)

// valuesSQL is prefix followed by rows tuples of cols placeholders.
func valuesSQL(prefix string, cols, rows int) string {
	tuple := "(" + strings.Repeat("?, ", cols-1) + "?)"
	var b strings.Builder
	b.Grow(len(prefix) + rows*(len(tuple)+2))
	b.WriteString(prefix)
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(tuple)
	}
	return b.String()
}
