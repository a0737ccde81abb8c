package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"prism/core"
)

// PutSourceInfo records what session id's source is, beside its header
// (replacing what was recorded). The session must be stored.
func (st *Store) PutSourceInfo(ctx context.Context, id string, info core.SourceInfo) error {
	return st.write(ctx, func(t *wtx) error { return t.putSource(id, info) })
}

// putSource records source info in t.
func (t *wtx) putSource(id string, info core.SourceInfo) error {
	b, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("encode the source info of session %s: %w", id, err)
	}
	if _, err := t.tx.Exec(`INSERT INTO session_sources (session_id, info) VALUES (?, ?)
		ON CONFLICT (session_id) DO UPDATE SET info = excluded.info`, id, string(b)); err != nil {
		return translate(err, "record the source of session "+id)
	}
	return nil
}

// SourceInfo returns what session id's source is, and false when nothing
// was recorded (a session of prism's own, or dsh's).
func (st *Store) SourceInfo(ctx context.Context, id string) (core.SourceInfo, bool, error) {
	var text string
	err := st.rdb.QueryRowContext(ctx, "SELECT info FROM session_sources WHERE session_id = ?", id).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		return core.SourceInfo{}, false, nil
	}
	if err != nil {
		return core.SourceInfo{}, false, translate(err, "read the source of session "+id)
	}
	var info core.SourceInfo
	if err := json.Unmarshal([]byte(text), &info); err != nil {
		return core.SourceInfo{}, false, fmt.Errorf("decode the source info of session %s: %w", id, err)
	}
	return info, true, nil
}
