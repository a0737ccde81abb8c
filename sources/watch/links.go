package watch

import (
	"context"
	"encoding/json"
	"fmt"

	"prism/core"
	"prism/core/notes"
	"prism/store"
)

// linkData is the data of a link note (the subagents issue's shape).
type linkData struct {
	Child      string `json:"child"`
	Background bool   `json:"background"`
	Inferred   bool   `json:"inferred"`
}

// sourceInfoReader is a store that keeps sessions' source info.
type sourceInfoReader interface {
	SourceInfo(ctx context.Context, id string) (core.SourceInfo, bool, error)
}

// LinkChild writes the link note on the call of parent that spawned child
// (kind link, {child, background, inferred}, at the call's seq), unless it
// is there already. It reports false when the parent's call is not stored
// yet (a watcher tries again later).
func LinkChild(ctx context.Context, st store.Store, parent, child string, sp core.Spawn) (bool, error) {
	l, err := st.LoadSession(ctx, parent)
	if err != nil {
		if core.ErrorCode(err) == core.CodeNotFound {
			return false, nil
		}
		return false, fmt.Errorf("link subagent %s to %s: %w", child, parent, err)
	}
	seq := int64(-1)
	for _, e := range l.Events {
		if e.Type != core.EventToolCall {
			continue
		}
		var c core.ToolCall
		if json.Unmarshal(e.Data, &c) == nil && c.CallID == sp.CallID {
			seq = e.Seq
			break
		}
	}
	if seq < 0 {
		return false, nil
	}
	have, err := st.Notes(ctx, parent, notes.Query{Kind: notes.KindLink})
	if err != nil {
		return false, fmt.Errorf("link subagent %s to %s: %w", child, parent, err)
	}
	for _, n := range have {
		var d linkData
		if n.CallID == sp.CallID && json.Unmarshal(n.Data, &d) == nil && d.Child == child {
			return true, nil
		}
	}
	data, err := json.Marshal(linkData{Child: child, Background: sp.Background, Inferred: sp.Inferred})
	if err != nil {
		return false, err
	}
	if _, err := st.PutNote(ctx, notes.Input{Session: parent, Kind: notes.KindLink, CallID: sp.CallID, AtSeq: &seq, Data: data}); err != nil {
		return false, fmt.Errorf("link subagent %s to %s: %w", child, parent, err)
	}
	return true, nil
}

// LinkImported writes the link notes of the imported sessions ids whose
// source info names the call that spawned them (their parent must be
// stored); it returns what failed.
func LinkImported(ctx context.Context, st store.Store, ids []string) []error {
	r, ok := st.(sourceInfoReader)
	if !ok {
		return nil
	}
	var errs []error
	for _, id := range ids {
		info, found, err := r.SourceInfo(ctx, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !found || info.SpawnedBy == nil {
			continue
		}
		s, err := st.LoadSession(ctx, id)
		if err != nil || s.Info.ParentID == "" {
			continue
		}
		if _, err := LinkChild(ctx, st, s.Info.ParentID, id, *info.SpawnedBy); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
