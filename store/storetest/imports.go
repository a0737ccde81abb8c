package storetest

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/sources/dsh"
	"prism/store"
)

// The ids of the fixture sessions (ParentID and ChildID: the session and
// its subagent in the export zip).
const (
	basicID   = "0b1c6d2e-5f4a-4e3b-9c8d-7a6b5c4d3e2f"
	crashedID = "7d0e1f2a-3b4c-4d5e-8f60-718293a4b5c6"
	ParentID  = "5a9e2c41-6b7d-4f80-9a1b-2c3d4e5f6a7b"
	ChildID   = "c4f1b2a3-d5e6-4789-8abc-def012345678"
)

// transcript is the human transcript: the append-origin surface events.
func transcript(t testing.TB, events []core.Event) []string {
	t.Helper()
	var out []string
	for _, e := range events {
		if !e.IsAppendOrigin() {
			continue
		}
		var d struct {
			Content []json.RawMessage `json:"content"`
			Message struct {
				Content []json.RawMessage `json:"content"`
				Source  struct {
					CallID string `json:"callId"`
				} `json:"source"`
			} `json:"message"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		var parts []string
		blocks := d.Message.Content
		if e.Type == core.EventUserMessage {
			blocks = d.Content
		}
		for _, raw := range blocks {
			var b struct {
				Type, Text, Name string
				Content          []struct{ Text string }
			}
			json.Unmarshal(raw, &b)
			switch b.Type {
			case "text", "reasoning":
				parts = append(parts, b.Type+":"+b.Text)
			case "tool-call":
				parts = append(parts, "call:"+b.Name)
			case "tool-result":
				for _, c := range b.Content {
					parts = append(parts, "result:"+c.Text)
				}
			}
		}
		out = append(out, e.Type+" "+strings.Join(parts, " | "))
	}
	return out
}

// MustImport imports the file at path into st or fails t.
func MustImport(t testing.TB, st Store, path string) []store.ImportResult {
	t.Helper()
	res, err := st.ImportFile(context.Background(), path)
	if err != nil {
		t.Fatalf("ImportFile(%s): %v", path, err)
	}
	return res
}

func testImportDshFixtures(t *testing.T, e Engine) {
	wantTranscript := []string{
		"user/message text:Count the lines of the Go files <here> & now.",
		"assistant/message reasoning:The user wants line counts; wc -l will do. | text:I'll count them with `wc`. | call:bash",
		"tool/result result:  120 main.go\n   80 db.go\n  200 total\n",
		"assistant/message text:There are 200 lines in total.",
	}
	for _, name := range []string{"basic/session.jsonl", "basic/session.jsonl.zstd"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := e.open(t)
			res := MustImport(t, st, filepath.Join(Fixtures, name))
			want := []store.ImportResult{{SessionID: basicID, Outcome: store.ImportCreated, Events: 39, Added: 39}}
			if diff := cmp.Diff(want, res); diff != "" {
				t.Errorf("ImportFile (-want +got):\n%s", diff)
			}
			l, err := st.LoadSession(ctx, basicID)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Events) != 39 {
				t.Fatalf("%d events, want 39", len(l.Events))
			}
			if diff := cmp.Diff(wantTranscript, transcript(t, l.Events)); diff != "" {
				t.Errorf("transcript (-want +got):\n%s", diff)
			}
			info := l.Info
			if info.Title != "Count Go lines" || info.Status != core.StatusIdle || info.Calls != 1 || info.Errors != 0 ||
				info.Source != store.SourceImport || info.CreatedAt != 1764500000000 || info.UpdatedAt != l.Events[38].Time || info.Header.Cwd != "/home/alice/src/app" {
				t.Errorf("session row = %+v", info)
			}
			calls, err := st.CallEvents(ctx, basicID, "call_00_a")
			if err != nil || len(calls) != 2 || calls[0].Type != core.EventToolCall || calls[1].Type != core.EventToolResult {
				t.Errorf("CallEvents = %d events, %v", len(calls), err)
			}
		})
	}
}

func testImportSameSessionTwice(t *testing.T, e Engine) {
	st := e.open(t)
	MustImport(t, st, filepath.Join(Fixtures, "basic/session.jsonl"))
	for _, name := range []string{"basic/session.jsonl", "basic/session.jsonl.zstd"} {
		res := MustImport(t, st, filepath.Join(Fixtures, name))
		if len(res) != 1 || res[0].Outcome != store.ImportUnchanged || res[0].Added != 0 || res[0].SessionID != basicID {
			t.Errorf("re-import of %s = %+v, want unchanged", name, res)
		}
	}
	page, _ := st.ListSessions(context.Background(), store.ListOptions{})
	if len(page.Sessions) != 1 || page.Sessions[0].Events != 39 {
		t.Errorf("after re-imports: %d sessions, first with %d events", len(page.Sessions), page.Sessions[0].Events)
	}
}

func testImportPrefixExtendsAndDivergenceConflicts(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	logs, _, err := dsh.ReadFile(filepath.Join(Fixtures, "basic/session.jsonl"), dsh.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	l := logs[0]
	dir := t.TempDir()
	write := func(name string, events []core.Event) string {
		var buf bytes.Buffer
		if err := dsh.WriteJSONL(&buf, l.Header, events); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		os.WriteFile(p, buf.Bytes(), 0o644)
		return p
	}
	MustImport(t, st, write("prefix.jsonl", l.Events[:38])) // up to turn/end: nothing to repair
	res := MustImport(t, st, filepath.Join(Fixtures, "basic/session.jsonl.zstd"))
	if res[0].Outcome != store.ImportExtended || res[0].Added != 1 {
		t.Errorf("import of the longer log = %+v, want extended by 1", res[0])
	}
	changed := append([]core.Event(nil), l.Events...)
	changed[3].Data = json.RawMessage(`{"provider":"other","model":"m"}`)
	_, err = st.ImportFile(ctx, write("changed.jsonl", changed))
	if core.ErrorCode(err) != core.CodeConflict || !strings.Contains(err.Error(), "differ at seq 3") {
		t.Errorf("import of a diverging log = %v, want a conflict at seq 3", err)
	}
	info, _ := st.Session(ctx, basicID)
	if info.LastSeq != 38 {
		t.Errorf("after the conflict LastSeq = %d, want 38", info.LastSeq)
	}
}

func testImportExportZipWithSubagent(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	res := MustImport(t, st, filepath.Join(Fixtures, "export/session-export.zip"))
	if len(res) != 2 || res[0].SessionID != ParentID || res[1].SessionID != ChildID || res[1].ParentID != ParentID {
		t.Fatalf("ImportFile(zip) = %+v", res)
	}
	child, _ := st.Session(ctx, ChildID)
	if child.ParentID != ParentID || child.Status != core.StatusEnded || child.Header.Origin != "subagent" {
		t.Errorf("child row = %+v, want parent %s and status ended (one-shot)", child, ParentID)
	}
	kids, _ := st.ListSessions(ctx, store.ListOptions{ParentID: ParentID})
	top, _ := st.ListSessions(ctx, store.ListOptions{TopLevel: true})
	if len(kids.Sessions) != 1 || len(top.Sessions) != 1 || top.Sessions[0].ID != ParentID {
		t.Errorf("children %d, top-level %d", len(kids.Sessions), len(top.Sessions))
	}
	var buf bytes.Buffer
	if err := st.Export(ctx, ParentID, &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `{"type":"x-vendor/note","seq":11,"time":`) || !strings.Contains(buf.String(), `"ignorable":true}`) {
		t.Errorf("the unknown ignorable event is not kept verbatim:\n%s", buf.String())
	}
}

func testImportBadInputLeavesNothing(t *testing.T, e Engine) {
	dir := t.TempDir()
	// A good root with a bad subagent: the root must not be stored either.
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	root, _ := os.ReadFile(filepath.Join(Fixtures, "basic/session.jsonl"))
	bad, _ := os.ReadFile(filepath.Join(Fixtures, "bad/seq-gap.jsonl"))
	w, _ := zw.Create("session.jsonl")
	w.Write(root)
	w, _ = zw.Create("subagents/x/session.jsonl")
	w.Write(bad)
	zw.Close()
	badChild := filepath.Join(dir, "bad-child.zip")
	os.WriteFile(badChild, zbuf.Bytes(), 0o644)

	tests := []struct {
		path string
		want []string
	}{
		{filepath.Join(Fixtures, "bad/seq-gap.jsonl"), []string{"seq-gap.jsonl: line 5: seq gap: expected seq 3, got 4"}},
		{filepath.Join(Fixtures, "bad/non-json.jsonl"), []string{"non-json.jsonl: line 5: not valid JSON"}},
		{filepath.Join(Fixtures, "bad/unknown-type.jsonl"), []string{"unknown-type.jsonl: line 4: unknown required event type \"mystery/event\" (seq 2)"}},
		{filepath.Join(Fixtures, "bad/version.jsonl"), []string{"version.jsonl: line 1: unsupported session format version 7"}},
		{filepath.Join(Fixtures, "bad/corrupt-frame.jsonl.zstd"), []string{"corrupt-frame.jsonl.zstd: frame 2 (byte ", "corrupt zstd frame"}},
		{filepath.Join(Fixtures, "bad/truncated-header.jsonl.zstd"), []string{"truncated-header.jsonl.zstd: frame 0 (byte 0): truncated"}},
		{filepath.Join(Fixtures, "bad/truncated.zip"), []string{"truncated.zip: not a readable zip archive"}},
		{filepath.Join(Fixtures, "bad/zip-bomb.zip"), []string{"zip-bomb.zip: subagents/", "(a zip bomb?)"}},
		{badChild, []string{"bad-child.zip: subagents/x/session.jsonl: line 5: seq gap"}},
	}
	st := e.open(t)
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			_, err := st.ImportFile(context.Background(), tt.path)
			if err == nil {
				t.Fatal("ImportFile succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if core.ErrorCode(err) != core.CodeInvalid {
				t.Errorf("error code %s, want %s", core.ErrorCode(err), core.CodeInvalid)
			}
			page, _ := st.ListSessions(context.Background(), store.ListOptions{})
			if len(page.Sessions) != 0 {
				t.Errorf("%d sessions stored after a failed import, want 0", len(page.Sessions))
			}
		})
	}
}

func testExportRoundTripsByteForByte(t *testing.T, e Engine) {
	ctx := context.Background()
	for _, name := range []string{"basic/session.jsonl.zstd", "export/session-export.zip"} {
		t.Run(name, func(t *testing.T) {
			st1, st2 := e.open(t), e.open(t)
			res := MustImport(t, st1, filepath.Join(Fixtures, name))
			for _, r := range res {
				var a, b bytes.Buffer
				if err := st1.Export(ctx, r.SessionID, &a); err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(t.TempDir(), "export.jsonl")
				os.WriteFile(p, a.Bytes(), 0o644)
				if again := MustImport(t, st1, p); again[0].Outcome != store.ImportUnchanged {
					t.Errorf("re-importing the export into its store: %s, want unchanged", again[0].Outcome)
				}
				MustImport(t, st2, p)
				if err := st2.Export(ctx, r.SessionID, &b); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a.Bytes(), b.Bytes()) {
					t.Errorf("%s: export → import → export differs:\n%s\n---\n%s", r.SessionID, a.Bytes(), b.Bytes())
				}
			}
		})
	}
	// A live session with whitespace in its data and an unset delegationDepth.
	st1, st2 := e.open(t), e.open(t)
	MustCreate(t, st1, "live")
	events := TurnEvents(0, 1, false)
	events[0].Data = json.RawMessage("{ \"turn\": 1 }")
	if err := st1.AppendEvents(ctx, "live", events); err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	st1.Export(ctx, "live", &a)
	p := filepath.Join(t.TempDir(), "live.jsonl")
	os.WriteFile(p, a.Bytes(), 0o644)
	if again := MustImport(t, st1, p); again[0].Outcome != store.ImportUnchanged {
		t.Errorf("re-importing a live export: %s, want unchanged", again[0].Outcome)
	}
	MustImport(t, st2, p)
	st2.Export(ctx, "live", &b)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("live session: export → import → export differs:\n%s\n---\n%s", a.Bytes(), b.Bytes())
	}
}

// CheckRepair verifies closers appended to an open log the way dsh's crash
// repair writes them: one synthetic result per pending call (TOOL_OUTCOME_UNKNOWN
// citing the call seq if a tool/call was logged, else TOOL_NOT_STARTED
// without sourceEventSeqs), message ids interrupted-tool-result-<callId>-…,
// isError, then step/end if a step was open, then turn/end{interrupted}, all
// at the last event's time; and that they are exactly
// core.InterruptedTurnClosers of the log before repair.
func CheckRepair(t testing.TB, before, after []core.Event, pending map[string]int64, stepOpen bool) {
	t.Helper()
	closers := after[len(before):]
	want := store.Closers(before)
	if diff := cmp.Diff(EventJSON(want), EventJSON(closers)); diff != "" {
		t.Errorf("stored closers differ from core.InterruptedTurnClosers (-want +got):\n%s", diff)
	}
	lastTime := before[len(before)-1].Time
	n := len(pending)
	if stepOpen {
		n++
	}
	if len(closers) != n+1 {
		t.Fatalf("%d closers, want %d", len(closers), n+1)
	}
	for i, c := range closers {
		if c.Seq != int64(len(before)+i) || c.Time != lastTime {
			t.Errorf("closer %d: seq %d time %d, want seq %d time %d", i, c.Seq, c.Time, len(before)+i, lastTime)
		}
	}
	for _, c := range closers[:len(pending)] {
		var d core.ToolResultData
		if err := json.Unmarshal(c.Data, &d); err != nil || c.Type != core.EventToolResult {
			t.Fatalf("closer %d is %s (%v), want tool/result", c.Seq, c.Type, err)
		}
		callSeq, ok := pending[d.CallID()]
		if !ok {
			t.Errorf("synthetic result for unexpected call %q", d.CallID())
			continue
		}
		wantCode, wantSrc := core.CodeToolOutcomeUnknown, []int64{callSeq}
		if callSeq < 0 {
			wantCode, wantSrc = core.CodeToolNotStarted, nil
		}
		if d.Error == nil || d.Error.Code != wantCode || !d.Projection().IsError ||
			!strings.HasPrefix(d.Message.ID, "interrupted-tool-result-"+d.CallID()+"-") || !cmp.Equal(c.SourceEventSeqs, wantSrc) {
			t.Errorf("synthetic result for %s: error %+v id %q sources %v; want %s, sources %v", d.CallID(), d.Error, d.Message.ID, c.SourceEventSeqs, wantCode, wantSrc)
		}
	}
	if stepOpen && closers[len(closers)-2].Type != core.EventStepEnd {
		t.Errorf("closer before last is %s, want step/end", closers[len(closers)-2].Type)
	}
	last := closers[len(closers)-1]
	var te core.TurnEnd
	json.Unmarshal(last.Data, &te)
	if last.Type != core.EventTurnEnd || te.Reason.Kind != core.TurnInterrupted {
		t.Errorf("last closer = %s %s, want turn/end{interrupted}", last.Type, last.Data)
	}
}

// EventJSON is each event's envelope as JSON (for diffs).
func EventJSON(events []core.Event) []string {
	var out []string
	for _, e := range events {
		b, _ := e.MarshalJSON()
		out = append(out, string(b))
	}
	return out
}

func testImportCrashedLogIsRepaired(t *testing.T, e Engine) {
	tests := []struct {
		file     string
		id       string
		before   int
		pending  map[string]int64
		stepOpen bool
	}{
		{"crashed/session.jsonl", crashedID, 5, map[string]int64{"call_00_x": 4, "call_01_y": -1}, true},
		{"torn/session.jsonl.zstd", basicID, 30, map[string]int64{}, true}, // step 2 had just started
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ctx := context.Background()
			st := e.open(t)
			res := MustImport(t, st, filepath.Join(Fixtures, tt.file))
			if res[0].Repaired == 0 || res[0].Torn == "" {
				t.Errorf("store.ImportResult = %+v, want repaired with a torn tail noted", res[0])
			}
			logs, _, _ := dsh.ReadFile(filepath.Join(Fixtures, tt.file), dsh.Limits{})
			l, err := st.LoadSession(ctx, tt.id)
			if err != nil {
				t.Fatal(err)
			}
			if len(logs[0].Events) != tt.before {
				t.Fatalf("decoded %d events, want %d", len(logs[0].Events), tt.before)
			}
			CheckRepair(t, logs[0].Events, l.Events, tt.pending, tt.stepOpen)
			if l.Info.Status != core.StatusInterrupted {
				t.Errorf("status %s, want interrupted", l.Info.Status)
			}
			// Importing the crashed file again changes nothing.
			if again := MustImport(t, st, filepath.Join(Fixtures, tt.file)); again[0].Outcome != store.ImportUnchanged {
				t.Errorf("re-import: %s, want unchanged", again[0].Outcome)
			}
		})
	}
}

func testImportPlaceholderSafe(t *testing.T, e Engine) {
	// Whatever the state of core's repair, importing a crashed log succeeds
	// and keeps every decoded event.
	st := e.open(t)
	res := MustImport(t, st, filepath.Join(Fixtures, "crashed/session.jsonl"))
	if res[0].Events < 5 || !strings.Contains(res[0].Torn, "line 7") {
		t.Errorf("store.ImportResult = %+v", res[0])
	}
}

// TestImport_validateLogRefuses depends on core.ValidateLog (the session
// work): a log that decodes but breaks dsh's seed rules is refused whole.
func testImportValidateLogRefuses(t *testing.T, e Engine) {
	path := filepath.Join(Fixtures, "bad/mismatched-tool-result.jsonl")
	logs, _, err := dsh.ReadFile(path, dsh.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if core.ValidateLog(logs[0].Header, logs[0].Events) == nil {
		t.Fatal("core.ValidateLog accepts a tool/result whose callId differs from its toolCallId")
	}
	st := e.open(t)
	_, err = st.ImportFile(context.Background(), path)
	if err == nil || core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "mismatched-tool-result.jsonl: invalid session log: ") {
		t.Fatalf("ImportFile = %v, want a %s error naming the file", err, core.CodeInvalid)
	}
	if page, _ := st.ListSessions(context.Background(), store.ListOptions{}); len(page.Sessions) != 0 {
		t.Errorf("%d sessions stored, want 0", len(page.Sessions))
	}
}

func testImportFromReader(t *testing.T, e Engine) {
	st := e.open(t)
	data, _ := os.ReadFile(filepath.Join(Fixtures, "basic/session.jsonl.zstd"))
	res, err := st.Import(context.Background(), "upload.zst", bytes.NewReader(data), int64(len(data)))
	if err != nil || len(res) != 1 || res[0].Events != 39 {
		t.Fatalf("Import = %+v, %v", res, err)
	}
	bad, _ := os.ReadFile(filepath.Join(Fixtures, "bad/version.jsonl"))
	if _, err := st.Import(context.Background(), "upload.jsonl", bytes.NewReader(bad), -1); err == nil || !strings.HasPrefix(err.Error(), "upload.jsonl: line 1: ") {
		t.Errorf("Import(bad) = %v, want an error naming the upload", err)
	}
}
