package store

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"prism/core/notes"
	"prism/sources/dsh"
)

// ZipSource is what ExportZip reads of a store (every Store is one).
type ZipSource interface {
	Session(ctx context.Context, id string) (SessionInfo, error)
	ListSessions(ctx context.Context, o ListOptions) (SessionPage, error)
	Export(ctx context.Context, id string, w io.Writer) error
	Notes(ctx context.Context, session string, q notes.Query) ([]notes.Note, error)
}

// ExportZip writes session id and every subagent session under it as one
// zip in dsh's export layout — the root log as session.jsonl, each
// descendant's as subagents/<id>/session.jsonl, each the bare log Export
// writes — plus notes.jsonl (dsh.NotesEntry): every note beside those
// logs, removed ones included, one JSON object per line. The zip is
// written in one pass (w need not seek); import reads it back, notes
// included.
func ExportZip(ctx context.Context, st ZipSource, id string, w io.Writer) error {
	ids, err := descendants(ctx, st, id)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	zw := zip.NewWriter(bw)
	for i, sid := range ids {
		name := "session.jsonl"
		if i > 0 {
			name = "subagents/" + sid + "/session.jsonl"
		}
		f, err := zw.Create(name)
		if err != nil {
			return fmt.Errorf("export %s: zip entry %s: %w", id, name, err)
		}
		if err := st.Export(ctx, sid, f); err != nil {
			return fmt.Errorf("export %s: session %s: %w", id, sid, err)
		}
	}
	f, err := zw.Create(dsh.NotesEntry)
	if err != nil {
		return fmt.Errorf("export %s: zip entry %s: %w", id, dsh.NotesEntry, err)
	}
	enc := json.NewEncoder(f)
	enc.SetEscapeHTML(false)
	for _, sid := range ids {
		ns, err := st.Notes(ctx, sid, notes.Query{Removed: true})
		if err != nil {
			return fmt.Errorf("export %s: notes of session %s: %w", id, sid, err)
		}
		for _, n := range ns {
			if err := enc.Encode(n); err != nil {
				return fmt.Errorf("export %s: note %s: %w", id, n.ID, err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("export %s: close the zip: %w", id, err)
	}
	return bw.Flush()
}

// descendants returns id, then every session under it (children before
// their own children), as the list's ParentID filter finds them.
func descendants(ctx context.Context, st ZipSource, id string) ([]string, error) {
	if _, err := st.Session(ctx, id); err != nil {
		return nil, err
	}
	out := []string{id}
	seen := map[string]bool{id: true}
	for i := 0; i < len(out); i++ {
		o := ListOptions{ParentID: out[i], Limit: 1000, Sort: SortCreated}
		for {
			page, err := st.ListSessions(ctx, o)
			if err != nil {
				return nil, fmt.Errorf("export %s: children of %s: %w", id, out[i], err)
			}
			for _, s := range page.Sessions {
				if !seen[s.ID] {
					seen[s.ID] = true
					out = append(out, s.ID)
				}
			}
			if page.NextCursor == "" {
				break
			}
			o.Cursor = page.NextCursor
		}
	}
	return out, nil
}
