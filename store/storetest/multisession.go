package storetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/sources/dsh"
	"prism/store"
)

// MultiSessionJSONL writes n sessions into one prism JSONL text, as
// concatenated exports: session i has the id fmt.Sprintf("%s-%05d", prefix,
// i) and one complete turn (TurnEvents). mutate, when not nil, may change
// each session's header and events before they are written, and append
// raw lines after them (a torn line, say).
func MultiSessionJSONL(t testing.TB, prefix string, n int, mutate func(i int, h *core.SessionHeader, events *[]core.Event) (extra string)) []byte {
	t.Helper()
	var buf bytes.Buffer
	for i := range n {
		h := Header(fmt.Sprintf("%s-%05d", prefix, i))
		zero := int64(0)
		h.DelegationDepth = &zero
		events := TurnEvents(0, 1, false)
		extra := ""
		if mutate != nil {
			extra = mutate(i, &h, &events)
		}
		if err := dsh.WriteJSONL(&buf, h, events); err != nil {
			t.Fatal(err)
		}
		buf.WriteString(extra)
	}
	return buf.Bytes()
}

// testImportManySessionsJSONL: a prism JSONL file holding many sessions
// imports each of them, in the file's order — a torn tail in the middle
// of the file ends only its own session and is reported, an open last turn
// is repaired and reported, a subagent may come before its parent — and
// importing it again leaves all of them unchanged.
func testImportManySessionsJSONL(t *testing.T, e Engine) {
	const n = 2_000
	ctx := context.Background()
	const (
		torn     = 7
		crashed  = 11
		child    = 20
		parentOf = 21
	)
	data := MultiSessionJSONL(t, "many", n, func(i int, h *core.SessionHeader, events *[]core.Event) string {
		switch i {
		case torn:
			return "{\"type\":\"turn/start\",\"seq\":8,\"ti\n" // a torn write, then the next session's header
		case crashed:
			*events = (*events)[:5] // the turn is open: call made, no result
		case child:
			h.ParentSession = fmt.Sprintf("many-%05d", parentOf) // its parent comes later in the file
			h.Origin = "subagent"
			one := int64(1)
			h.DelegationDepth = &one
		}
		return ""
	})
	st := e.open(t)
	res, err := st.Import(ctx, "many.jsonl", bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("Import of %d sessions: %v", n, err)
	}
	if len(res) != n {
		t.Fatalf("Import reported %d sessions, want all %d", len(res), n)
	}
	for i, r := range res {
		want := fmt.Sprintf("many-%05d", i)
		if r.SessionID != want || r.Outcome != store.ImportCreated {
			t.Fatalf("result %d = %s %s, want %s created", i, r.SessionID, r.Outcome, want)
		}
		wantEvents := 8
		if i == crashed {
			wantEvents = 5 + r.Repaired
			if r.Repaired == 0 {
				t.Errorf("session %s's open turn was not repaired", r.SessionID)
			}
		}
		if r.Events != wantEvents {
			t.Errorf("session %s: %d events, want %d", r.SessionID, r.Events, wantEvents)
		}
		if (r.Torn != "") != (i == torn) {
			t.Errorf("session %s: torn tail %q", r.SessionID, r.Torn)
		}
	}
	if notes := strings.Join(res[torn].Notes(), "\n"); !strings.Contains(notes, "torn tail ignored") || !strings.Contains(notes, "line ") {
		t.Errorf("the torn session's notes say %q, want the torn tail and its line", notes)
	}
	if notes := strings.Join(res[crashed].Notes(), "\n"); !strings.Contains(notes, "crash-repair events") {
		t.Errorf("the crashed session's notes say %q, want its repair", notes)
	}
	if got := e.Count(t, st, "SELECT count(*) FROM sessions"); got != n {
		t.Errorf("%d sessions stored, want %d", got, n)
	}
	info, err := st.Session(ctx, fmt.Sprintf("many-%05d", n-1))
	if err != nil || info.Summary.Events != 8 {
		t.Errorf("the file's last session: %+v, %v", info.Summary, err)
	}
	again, err := st.Import(ctx, "many.jsonl", bytes.NewReader(data), int64(len(data)))
	if err != nil || len(again) != n {
		t.Fatalf("importing the file again: %d results, %v", len(again), err)
	}
	for _, r := range again {
		if r.Outcome != store.ImportUnchanged {
			t.Fatalf("importing again: session %s %s, want unchanged", r.SessionID, r.Outcome)
		}
	}
	// Under another id it is refused, naming a few of its sessions.
	path := filepath.Join(t.TempDir(), "many.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = st.ImportFileWith(ctx, path, store.ImportOptions{As: "copy"})
	if want := fmt.Sprintf("many.jsonl: importing under another id (--as, ?as=) needs a file holding exactly one session; it holds %d (many-00000, many-00001, many-00002, many-00003, many-00004, …); nothing was imported", n); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("import --as of the file = %v, want %q", err, want)
	}
}

// testImportManySessionsFailureLeavesNothing: a file of several sessions
// is one transaction — any bad session fails the whole file with an error
// naming the line and what is wrong, and nothing of it is stored; a later
// session header is never taken for a torn tail.
func testImportManySessionsFailureLeavesNothing(t *testing.T, e Engine) {
	ctx := context.Background()
	tests := []struct {
		name   string
		mutate func(i int, h *core.SessionHeader, events *[]core.Event) string
		want   []string
	}{
		{"duplicate seq", func(i int, h *core.SessionHeader, events *[]core.Event) string {
			if i == 2 {
				(*events)[4].Seq = 3 // seq 3 twice; a turn/end follows, so not a torn tail
			}
			return ""
		}, []string{"bad.jsonl: line 24: duplicate seq: seq 3 appears again (expected seq 4)"}},
		{"seq gap", func(i int, h *core.SessionHeader, events *[]core.Event) string {
			if i == 2 {
				(*events)[4].Seq = 9
			}
			return ""
		}, []string{"bad.jsonl: line 24: seq gap: expected seq 4, got 9"}},
		{"same id twice", func(i int, h *core.SessionHeader, events *[]core.Event) string {
			if i == 2 {
				h.ID = "dup-00000"
			}
			return ""
		}, []string{"bad.jsonl: line 19: session dup-00000 appears a second time (its first header is on line 1)"}},
		{"bad later header", func(i int, h *core.SessionHeader, events *[]core.Event) string {
			if i == 2 {
				h.Version = 7
			}
			return ""
		}, []string{"bad.jsonl: line 19: unsupported session format version 7"}},
		{"invalid later session", func(i int, h *core.SessionHeader, events *[]core.Event) string {
			if i == 2 {
				r := &(*events)[5] // the result's source names another call than its block
				r.Data = []byte(strings.ReplaceAll(string(r.Data), `"kind":"tool","callId":"call_1"`, `"kind":"tool","callId":"call_9"`))
			}
			return ""
		}, []string{"bad.jsonl: session dup-00002 (header on line 19): invalid session log"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := e.open(t)
			data := MultiSessionJSONL(t, "dup", 4, tt.mutate)
			_, err := st.Import(ctx, "bad.jsonl", bytes.NewReader(data), int64(len(data)))
			if err == nil {
				t.Fatal("Import succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if core.ErrorCode(err) != core.CodeInvalid {
				t.Errorf("error code %s, want %s", core.ErrorCode(err), core.CodeInvalid)
			}
			if got := e.Count(t, st, "SELECT count(*) FROM sessions"); got != 0 {
				t.Errorf("%d sessions stored after a failed import, want 0", got)
			}
		})
	}
}
