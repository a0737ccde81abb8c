package db

import (
	"context"
	"encoding/json"
	"fmt"

	"prism/core"
)

// eventsAfterEachSQL reads the events of many sessions after a seq each:
// the sessions and seqs come as one JSON object (json_each's key and
// value), which drives the join, so each session is a range of the
// events key.
var eventsAfterEachSQL = "SELECT e.session_id, " + eventColumns("e.") + `
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
	what := fmt.Sprintf("events after seqs of %d sessions", len(after))
	arg, err := json.Marshal(after)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	rows, err := st.rdb.QueryContext(ctx, eventsAfterEachSQL, string(arg))
	if err != nil {
		return nil, translate(err, what)
	}
	defer rows.Close()
	var id string
	sc := newEventScanner(64, &id)
	for rows.Next() {
		e, err := sc.scan(rows)
		if err != nil {
			return nil, translate(fmt.Errorf("session %s: %w", id, err), what)
		}
		out[id] = append(out[id], e)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, what)
	}
	return out, nil
}
