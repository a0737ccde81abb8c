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
	match string
	where []string
	args  []any
}

// arg adds a parameter and returns its placeholder.
func (s *searchSQL) arg(v any) string {
	s.args = append(s.args, v)
	return "$" + strconv.Itoa(len(s.args))
}

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
		return "s.status = " + s.arg(t.Value)
	case search.FieldSession:
		return "starts_with(d.session_id, " + s.arg(t.Value) + ")"
	case search.FieldKind:
		return "d.kind = " + s.arg(t.Value)
	case search.FieldAfter:
		return "d.time >= " + s.arg(t.Time)
	case search.FieldBefore:
		return "d.time < " + s.arg(t.Time)
	}
	return "false"
}

func likePrefix(v string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(v) + "%"
}

// compile translates a parsed query: clauses of words alone become
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
	s := compile(q)
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
