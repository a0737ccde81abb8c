package watch

import (
	"context"
	"fmt"
	"strings"

	"prism/core"
	"prism/core/notes"
	"prism/store"
)

// sourceInfoReader is a store that keeps sessions' source info.
type sourceInfoReader interface {
	SourceInfo(ctx context.Context, id string) (core.SourceInfo, bool, error)
}

// callEvents returns the stored events of call callID of session parent,
// read by the call's id (the store's index of a call's events, not the
// whole log); none when the session is not stored.
func callEvents(ctx context.Context, st store.Store, parent, callID string) ([]core.Event, error) {
	events, err := st.CallEvents(ctx, parent, callID)
	if core.ErrorCode(err) == core.CodeNotFound {
		return nil, nil
	}
	return events, err
}

// callSig sums up a call's stored events (seq, type and size of each):
// it changes when the call's result lands or is rewritten.
func callSig(events []core.Event) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "%d:%s:%d;", e.Seq, e.Type, len(e.Data))
	}
	return b.String()
}

// LinkChild writes the link note on the call of parent that spawned child
// (kind link, {child, background, inferred}, at the call's seq), unless it
// is there already. The call is looked up by its id (CallEvents), never by
// reading the parent's log. A link to child written before from a match
// by prompt (inferred) is upgraded once sp names the call exactly: the
// note on the same call has its data replaced, one on another call is
// removed; an exact link is never replaced by an inferred one. It reports
// false when the parent's call is not stored yet (a watcher tries again
// later).
func LinkChild(ctx context.Context, st store.Store, parent, child string, sp core.Spawn) (bool, error) {
	events, err := callEvents(ctx, st, parent, sp.CallID)
	if err != nil {
		return false, fmt.Errorf("link subagent %s to %s: %w", child, parent, err)
	}
	seq := int64(-1)
	for _, e := range events {
		if e.Type == core.EventToolCall {
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
	want := notes.LinkData{Child: child, Background: sp.Background, Inferred: sp.Inferred}
	replace := ""
	for _, n := range have {
		d, err := notes.ParseLink(n.Data)
		if err != nil || d.Child != child {
			continue
		}
		switch {
		case n.CallID == sp.CallID && (d == want || !d.Inferred && want.Inferred):
			return true, nil // there already (or exact already)
		case n.CallID == sp.CallID:
			replace = n.ID
		case !d.Inferred && want.Inferred:
			return true, nil // linked exactly to another call: keep it
		case d.Inferred && !want.Inferred:
			// Matched by prompt to another call: the exact call wins.
			if _, err := st.RemoveNote(ctx, parent, n.ID); err != nil {
				return false, fmt.Errorf("link subagent %s to %s: remove the inferred link on %s: %w", child, parent, n.CallID, err)
			}
		}
	}
	in, err := notes.Link(parent, sp.CallID, seq, want)
	if err != nil {
		return false, fmt.Errorf("link subagent %s to %s: %w", child, parent, err)
	}
	in.ID = replace
	if _, err := st.PutNote(ctx, in); err != nil {
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
