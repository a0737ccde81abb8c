package codex_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"prism/core"
	"prism/db"
)

// TestDecodedLogsImport imports every decoded fixture into a real SQLite
// store through prism's JSONL import (its checks and crash repair), and
// reads it back: the store keeps each event, source/raw included, and the
// list row's title is the prompt, never the environment context.
func TestDecodedLogsImport(t *testing.T) {
	ctx := context.Background()
	st, err := db.Open(ctx, filepath.Join(t.TempDir(), "prism.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, name := range []string{"plain", "parallel", "apply_patch", "aborted", "malformed", "legacy"} {
		r := decodeFile(t, name)
		var buf bytes.Buffer
		hdr, err := json.Marshal(r.Header)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString(`{"type":"session",` + string(hdr[1:]) + "\n")
		for _, e := range r.Events {
			b, err := e.MarshalJSON() // json.Marshal would escape <, > and &
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(b)
			buf.WriteByte('\n')
		}
		res, err := st.Import(ctx, name+".jsonl", &buf, int64(buf.Len()))
		if err != nil {
			t.Fatalf("%s: import: %v", name, err)
		}
		if len(res) != 1 || res[0].SessionID != r.Header.ID {
			t.Fatalf("%s: import results %+v", name, res)
		}
		l, err := st.LoadSession(ctx, r.Header.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(l.Events), len(r.Events)+res[0].Repaired; got != want {
			t.Errorf("%s: stored %d events, want %d", name, got, want)
		}
		for i, e := range r.Events {
			if g := l.Events[i]; g.Type != e.Type || !bytes.Equal(g.Data, e.Data) || g.Ignorable != e.Ignorable {
				t.Errorf("%s: seq %d stored as %s %s", name, i, g.Type, g.Data)
				break
			}
		}
		if name == "plain" && l.Info.Title != "Why does TestParse fail?" {
			t.Errorf("stored title %q", l.Info.Title)
		}
		if name == "malformed" && (res[0].Repaired == 0 || l.Events[len(l.Events)-1].Type != core.EventTurnEnd) {
			t.Errorf("the open turn was not closed by import's repair (%d closers)", res[0].Repaired)
		}
	}
}
