package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"prism/core"
	"prism/store"
)

// eventsAfterEachSQL reads the events of many sessions after a seq each:
// the sessions and seqs come as one JSON object (json_each's key and
// value), which drives the join, so each session is a range of the
// events key.
const eventsAfterEachSQL = `SELECT e.session_id, e.seq, e.type, e.time, e.data, e.ignorable, e.surface_op, e.source_event_seqs
	FROM json_each(?) AS j CROSS JOIN events AS e ON e.session_id = j.key AND e.seq > j.value
	ORDER BY e.session_id, e.seq`

// EventsAfterEach returns, in one query, each session's events with seq >
// after[id], in seq order; a session that does not exist is absent from
// the result.
func (st *Store) EventsAfterEach(ctx context.Context, after map[string]int64) (map[string][]core.Event, error) {
	out := make(map[string][]core.Event, len(after))
	if len(after) == 0 {
		return out, nil
	}
	arg, err := json.Marshal(after)
	if err != nil {
		return nil, fmt.Errorf("events after seqs of %d sessions: %w", len(after), err)
	}
	what := fmt.Sprintf("events after seqs of %d sessions", len(after))
	rows, err := st.rdb.QueryContext(ctx, eventsAfterEachSQL, string(arg))
	if err != nil {
		return nil, translate(err, what)
	}
	defer rows.Close()
	var id, data string
	var surface, sources sql.NullString
	for rows.Next() {
		var e core.Event
		if err := rows.Scan(&id, &e.Seq, &e.Type, &e.Time, &data, &e.Ignorable, &surface, &sources); err != nil {
			return nil, translate(err, what)
		}
		e.Data = []byte(data)
		if surface.Valid {
			if e.SurfaceOp, err = store.DecodeSurfaceOp(surface.String); err != nil {
				return nil, fmt.Errorf("%s: session %s event %d: stored surfaceOp: %w", what, id, e.Seq, err)
			}
		}
		if sources.Valid {
			if e.SourceEventSeqs, err = store.DecodeSeqs(sources.String); err != nil {
				return nil, fmt.Errorf("%s: session %s event %d: stored sourceEventSeqs: %w", what, id, e.Seq, err)
			}
		}
		out[id] = append(out[id], e)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, what)
	}
	return out, nil
}
