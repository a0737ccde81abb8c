package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/core/share"
	"prism/sources/dsh"
	"prism/store"
)

// testImportAsAndReplace is the table of import --as / --replace: what
// each answers per session, and that a refused import leaves the store as
// it was (same sessions, same events, same links).
func testImportAsAndReplace(t *testing.T, e Engine) {
	logs, _, err := dsh.ReadFile(filepath.Join(Fixtures, "basic/session.jsonl"), dsh.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	l := logs[0]
	dir := t.TempDir()
	write := func(name string, h core.SessionHeader, events []core.Event) string {
		var buf bytes.Buffer
		if err := dsh.WriteJSONL(&buf, h, events); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	original := filepath.Join(Fixtures, "basic/session.jsonl")
	changed := append([]core.Event(nil), l.Events...)
	changed[3].Data = json.RawMessage(`{"provider":"other","model":"m"}`)
	diverging := write("changed.jsonl", l.Header, changed)
	otherHeader := l.Header
	otherHeader.Cwd = "/elsewhere"
	reheaded := write("reheaded.jsonl", otherHeader, l.Events)
	zipFile := filepath.Join(Fixtures, "export/session-export.zip")

	type want struct {
		id, outcome string
		events      int
		revoked     int
	}
	tests := []struct {
		name    string
		file    string
		opts    store.ImportOptions
		want    []want
		wantErr string // a substring; "" = success
		code    string
	}{
		{name: "same file again", file: original, want: []want{{basicID, store.ImportUnchanged, 39, 0}}},
		{name: "diverging log refused, hints at the options", file: diverging, code: core.CodeConflict,
			wantErr: "differ at seq 3; stored 39 events, file 39); import it under another id (--as NEW_ID, ?as=NEW_ID) or replace the stored one (--replace, ?replace=1)"},
		{name: "other header refused", file: reheaded, code: core.CodeConflict, wantErr: "already exists with a different header"},
		{name: "diverging log as a new id", file: diverging, opts: store.ImportOptions{As: "copy-1"}, want: []want{{"copy-1", store.ImportCreated, 39, 0}}},
		{name: "diverging log replaces", file: diverging, opts: store.ImportOptions{Replace: true}, want: []want{{basicID, store.ImportReplaced, 39, 1}}},
		{name: "other header replaces", file: reheaded, opts: store.ImportOptions{Replace: true}, want: []want{{basicID, store.ImportReplaced, 39, 1}}},
		{name: "replace of an equal log is unchanged", file: original, opts: store.ImportOptions{Replace: true}, want: []want{{basicID, store.ImportUnchanged, 39, 0}}},
		{name: "as onto an existing id with another log", file: diverging, opts: store.ImportOptions{As: basicID}, code: core.CodeConflict, wantErr: "differ at seq 3"},
		{name: "as and replace together", file: diverging, opts: store.ImportOptions{As: basicID, Replace: true}, want: []want{{basicID, store.ImportReplaced, 39, 1}}},
		{name: "as with several sessions", file: zipFile, opts: store.ImportOptions{As: "x"}, code: core.CodeInvalid,
			wantErr: "(--as, ?as=) needs a file holding exactly one session; it holds 2 (" + ParentID + ", " + ChildID + "); nothing was imported"},
		{name: "as with a bad id", file: diverging, opts: store.ImportOptions{As: "a/b"}, code: core.CodeInvalid, wantErr: `import as "a/b": a session id may hold only`},
		{name: "as with a long id", file: diverging, opts: store.ImportOptions{As: strings.Repeat("a", 129)}, code: core.CodeInvalid, wantErr: "at most 128 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st := e.open(t)
			MustImport(t, st, original)
			if _, _, err := st.CreateShare(ctx, share.Spec{SessionID: basicID}); err != nil {
				t.Fatal(err)
			}
			before := e.snapshot(t, st)
			res, err := st.ImportFileWith(ctx, tt.file, tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || core.ErrorCode(err) != tt.code {
					t.Fatalf("ImportFileWith = %+v, %v; want a %s error containing %q", res, err, tt.code, tt.wantErr)
				}
				if after := e.snapshot(t, st); after != before {
					t.Errorf("a refused import changed the store:\nbefore %s\nafter  %s", before, after)
				}
				return
			}
			if err != nil {
				t.Fatalf("ImportFileWith: %v", err)
			}
			var got []want
			for _, r := range res {
				got = append(got, want{r.SessionID, r.Outcome, r.Events, r.Revoked})
			}
			if len(got) != len(tt.want) || got[0] != tt.want[0] {
				t.Fatalf("results = %+v, want %+v", got, tt.want)
			}
			// What the store holds now is the file's log under the answered id.
			stored, err := st.LoadSession(ctx, tt.want[0].id)
			if err != nil {
				t.Fatal(err)
			}
			fileLogs, _, _ := dsh.ReadFile(tt.file, dsh.Limits{})
			if len(stored.Events) != len(fileLogs[0].Events) || string(stored.Events[3].Data) != string(fileLogs[0].Events[3].Data) {
				t.Errorf("stored log of %s is not the file's", tt.want[0].id)
			}
			shares, _ := st.Shares(ctx, basicID)
			live := 0
			for _, s := range shares {
				if s.RevokedAt == 0 {
					live++
				}
			}
			if wantLive := 1 - tt.want[0].revoked; tt.want[0].id == basicID && live != wantLive {
				t.Errorf("%d live share links of %s, want %d", live, basicID, wantLive)
			}
		})
	}
}

// testImportReplaceFailureLeavesAll: a file whose second session fails
// leaves the first one's replacement undone too (one transaction).
func testImportReplaceFailureLeavesAll(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	MustImport(t, st, filepath.Join(Fixtures, "export/session-export.zip"))
	logs, _, err := dsh.ReadFile(filepath.Join(Fixtures, "export/session-export.zip"), dsh.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// The parent changed (it would be replaced), the child names a session
	// running here (refused inside the transaction).
	parent := *logs[0]
	parent.Events = append([]core.Event(nil), parent.Events...)
	parent.Events[1].Data = json.RawMessage(`{"provider":"other","model":"m"}`)
	child := *logs[1]
	child.Header.ID = "running-live"
	MustCreate(t, st, "running-live")
	if err := st.AppendEvents(ctx, "running-live", []core.Event{Ev(0, core.EventTurnStart, `{"turn":1}`)}); err != nil {
		t.Fatal(err)
	}
	before := e.snapshot(t, st)
	_, err = e.ImportLogs(st, "family.zip", []*dsh.Log{&parent, &child}, store.ImportOptions{Replace: true})
	if err == nil || !strings.Contains(err.Error(), "running-live is running here") {
		t.Fatalf("import = %v, want the child's header refused", err)
	}
	if after := e.snapshot(t, st); after != before {
		t.Errorf("a failed import changed the store:\nbefore %s\nafter  %s", before, after)
	}
}

// testImportReplaceRefusesRunningLive: a session prism is running is never
// replaced under it.
func testImportReplaceRefusesRunningLive(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	logs, _, err := dsh.ReadFile(filepath.Join(Fixtures, "basic/session.jsonl"), dsh.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	h := logs[0].Header
	if err := st.CreateSession(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, h.ID, []core.Event{Ev(0, core.EventTurnStart, `{"turn":1}`)}); err != nil {
		t.Fatal(err)
	}
	_, err = st.ImportFileWith(ctx, filepath.Join(Fixtures, "basic/session.jsonl"), store.ImportOptions{Replace: true})
	if core.ErrorCode(err) != core.CodeConflict || !strings.Contains(err.Error(), "is running here") {
		t.Fatalf("replace of a running session = %v, want a conflict saying it runs", err)
	}
}

// snapshot describes everything the store holds, for before/after checks.
func (e Engine) snapshot(t testing.TB, st Store) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		"SELECT id || ' ' || header || ' ' || source || ' ' || status || ' ' || CAST(last_seq AS TEXT) FROM sessions ORDER BY id",
		"SELECT session_id || ' ' || CAST(seq AS TEXT) || ' ' || data FROM events ORDER BY session_id, seq",
		"SELECT id || ' ' || COALESCE(CAST(revoked_at AS TEXT), 'live') FROM shares ORDER BY id",
	} {
		for _, s := range e.Strings(t, st, q) {
			b.WriteString(s + "\n")
		}
	}
	return b.String()
}
