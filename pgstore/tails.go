package pgstore

import (
	"context"
	"fmt"

	"prism/core"
)

// eventsAfterEachSQL reads the events of many sessions after a seq each,
// the sessions and seqs as two arrays: one range of the events key per
// session.
const eventsAfterEachSQL = `SELECT u.id, e.seq, e.type, e.time, e.data, e.ignorable, e.surface_op, e.source_event_seqs
	FROM unnest($1::text[], $2::bigint[]) AS u(id, after)
	JOIN events e ON e.session_id = u.id AND e.seq > u.after
	ORDER BY u.id, e.seq`

// EventsAfterEach returns, in one query, each session's events with seq >
// after[id], in seq order; a session that does not exist is absent from
// the result.
func (st *Store) EventsAfterEach(ctx context.Context, after map[string]int64) (map[string][]core.Event, error) {
	out := make(map[string][]core.Event, len(after))
	if len(after) == 0 {
		return out, nil
	}
	ids, seqs := make([]string, 0, len(after)), make([]int64, 0, len(after))
	for id, seq := range after {
		ids, seqs = append(ids, id), append(seqs, seq)
	}
	what := fmt.Sprintf("events after seqs of %d sessions", len(after))
	rows, err := st.pool.Query(ctx, eventsAfterEachSQL, ids, seqs)
	if err != nil {
		return nil, translate(err, what)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		e, err := scanEvent(rows, &id)
		if err != nil {
			return nil, translate(err, what)
		}
		out[id] = append(out[id], e)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, what)
	}
	return out, nil
}
