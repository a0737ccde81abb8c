package claudecode_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/sources/claudecode"
	"prism/sources/dsh"
)

var update = flag.Bool("update", false, "rewrite the golden event files")

func readFixture(t *testing.T, name string) *dsh.Log {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := claudecode.ReadLog(bufio.NewReader(f), dsh.Limits{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return l
}

// encode writes the header and events as prism's JSONL export does.
func encode(t *testing.T, l *dsh.Log) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := dsh.WriteJSONL(&buf, l.Header, l.Events); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecodeGolden decodes each fixture and compares the header and every
// event, byte for byte, with its golden file; each log must also be valid
// (core.ValidateLog) and keep dsh's relations (core.CheckRelations).
func TestDecodeGolden(t *testing.T) {
	for _, name := range []string{"plain", "parallel", "errors", "compaction", "unknown", "tools"} {
		t.Run(name, func(t *testing.T) {
			l := readFixture(t, name+".jsonl")
			if err := core.ValidateLog(l.Header, l.Events); err != nil {
				t.Fatalf("ValidateLog: %v", err)
			}
			if err := core.CheckRelations(l.Events); err != nil {
				t.Fatalf("CheckRelations: %v", err)
			}
			got := encode(t, l)
			golden := filepath.Join("testdata", name+".events.jsonl")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
				for i := range max(len(gl), len(wl)) {
					var g, w string
					if i < len(gl) {
						g = gl[i]
					}
					if i < len(wl) {
						w = wl[i]
					}
					if g != w {
						t.Fatalf("line %d differs:\n got %s\nwant %s", i+1, g, w)
					}
				}
			}
		})
	}
}

// typed is one event with its data decoded generically, for assertions.
type typed struct {
	Type      string
	Ignorable bool
	Data      map[string]any
}

func typedEvents(t *testing.T, l *dsh.Log) []typed {
	t.Helper()
	out := make([]typed, len(l.Events))
	for i, e := range l.Events {
		out[i] = typed{Type: e.Type, Ignorable: e.Ignorable}
		if err := json.Unmarshal(e.Data, &out[i].Data); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	return out
}

func types(es []typed) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Type)
	}
	return strings.Join(s, " ")
}

func TestPlainSession(t *testing.T) {
	l := readFixture(t, "plain.jsonl")
	want := core.SessionHeader{ID: "7d3e0c1a-0000-4000-8000-00000000c0de", CreatedAt: 1793610000000, Cwd: "/home/dev/app"}
	if l.Header != want {
		t.Fatalf("header = %+v, want %+v", l.Header, want)
	}
	es := typedEvents(t, l)
	wantTypes := "source/raw user/message turn/start step/start user/message assistant/message tool/call tool/result " +
		"step/end step/start assistant/message step/end turn/end source/raw"
	if got := types(es); got != wantTypes {
		t.Fatalf("types:\n got %s\nwant %s", got, wantTypes)
	}
	// The isMeta line is a context message: no turn, not the title.
	if src := es[1].Data["source"].(map[string]any); src["kind"] != core.SourcePlugin {
		t.Errorf("isMeta line source = %v, want plugin", src)
	}
	sum := core.NewSummary()
	for i := range l.Events {
		sum.Apply(&l.Events[i])
	}
	if sum.Title != "What does main.go print?" {
		t.Errorf("title = %q, want the first real prompt", sum.Title)
	}
	// One message.id = one assistant message: thinking, text, tool-call in
	// order, with the last line's usage (counted once).
	var am core.AssistantMessage
	if err := l.Events[5].DecodeData(&am); err != nil {
		t.Fatal(err)
	}
	if len(am.Message.Content) != 3 || am.Message.Content[0].BlockType() != core.BlockReasoning ||
		am.Message.Content[1].BlockType() != core.BlockText || am.Message.Content[2].BlockType() != core.BlockToolCall {
		t.Fatalf("assistant content = %+v", am.Message.Content)
	}
	if *am.Usage != (core.TokenUsage{InputTokens: 4, OutputTokens: 40, CacheReadTokens: 100, CacheWriteTokens: 50}) {
		t.Errorf("usage = %+v, want the last line's", *am.Usage)
	}
	if sum.OutputTokens != 47 {
		t.Errorf("summary output tokens = %d, want 40+7 (usage once per message.id)", sum.OutputTokens)
	}
	var call core.ToolCall
	if err := l.Events[6].DecodeData(&call); err != nil {
		t.Fatal(err)
	}
	if call.CallID != "toolu_read" || call.Name != "Read" || call.Arguments != `{"file_path":"/home/dev/app/main.go"}` {
		t.Errorf("call = %+v", call)
	}
	var res core.ToolResultData
	if err := l.Events[7].DecodeData(&res); err != nil {
		t.Fatal(err)
	}
	p := res.Projection()
	if p.IsError || res.CallID() != "toolu_read" || !strings.Contains(string(res.Meta), `"numLines":2`) {
		t.Errorf("result = %+v meta %s", p, res.Meta)
	}
	if got := l.Events[7].SourceEventSeqs; len(got) != 1 || got[0] != 6 {
		t.Errorf("result sourceEventSeqs = %v, want [6]", got)
	}
	// The turn ends with the end_turn message; turn_duration after it is
	// kept raw.
	if es[12].Data["reason"].(map[string]any)["kind"] != core.TurnCompleted {
		t.Errorf("turn/end = %v", es[12].Data)
	}
	if !es[0].Ignorable || es[0].Data["source"] != claudecode.Source || es[0].Data["line"] != 1.0 {
		t.Errorf("raw = %+v", es[0])
	}
	if rec := es[0].Data["record"].(map[string]any); rec["type"] != "file-history-snapshot" {
		t.Errorf("raw record = %v", rec)
	}
}

func TestParallelCallsAreOneStep(t *testing.T) {
	l := readFixture(t, "parallel.jsonl")
	es := typedEvents(t, l)
	want := "turn/start step/start user/message assistant/message tool/call tool/call tool/result tool/result " +
		"step/end step/start assistant/message step/end turn/end"
	if got := types(es); got != want {
		t.Fatalf("types:\n got %s\nwant %s", got, want)
	}
	for i := 3; i <= 7; i++ {
		if es[i].Data["step"] != 1.0 {
			t.Errorf("event %d (%s) in step %v, want 1", i, es[i].Type, es[i].Data["step"])
		}
	}
	// Results in file order (glob first), each pointing at its own call.
	if l.Events[6].SourceEventSeqs[0] != 5 || l.Events[7].SourceEventSeqs[0] != 4 {
		t.Errorf("result sources = %v %v, want [5] [4]", l.Events[6].SourceEventSeqs, l.Events[7].SourceEventSeqs)
	}
	var am core.AssistantMessage
	if err := l.Events[3].DecodeData(&am); err != nil {
		t.Fatal(err)
	}
	if am.Usage.OutputTokens != 55 || am.Usage.InputTokens != 10 {
		t.Errorf("usage = %+v, want the group's last line once", am.Usage)
	}
}

func TestErrorsAndUnansweredCalls(t *testing.T) {
	l := readFixture(t, "errors.jsonl")
	sum := core.NewSummary()
	for i := range l.Events {
		sum.Apply(&l.Events[i])
	}
	var results []core.ToolResultData
	for _, e := range l.Events {
		if e.Type == core.EventToolResult {
			var r core.ToolResultData
			if err := e.DecodeData(&r); err != nil {
				t.Fatal(err)
			}
			results = append(results, r)
		}
	}
	if len(results) != 2 {
		t.Fatalf("results = %d, want 2 (the last call is still pending)", len(results))
	}
	p := results[0].Projection()
	if !p.IsError || p.Content[0].(*core.TextBlock).Text != "File does not exist." {
		t.Errorf("first result = %+v, want an unwrapped error", p)
	}
	if string(results[0].Meta) != `"Error: File does not exist."` {
		t.Errorf("meta = %s", results[0].Meta)
	}
	if !results[1].Projection().IsError {
		t.Errorf("second result is not an error")
	}
	// The second prompt closes turn 1; the last turn is left open with its
	// call pending (import's crash repair closes it).
	last := l.Events[len(l.Events)-1]
	if last.Type != core.EventToolCall {
		t.Errorf("last event = %s, want the pending tool/call", last.Type)
	}
	if got := len(core.InterruptedTurnClosers(l.Events)); got != 3 {
		t.Errorf("closers = %d, want result, step/end, turn/end", got)
	}
	var am core.AssistantMessage
	for _, e := range l.Events {
		if e.Type == core.EventAssistantMessage {
			am = core.AssistantMessage{}
			if err := e.DecodeData(&am); err != nil {
				t.Fatal(err)
			}
		}
	}
	if am.Message.ID != "a3" || am.Message.Source.Model != "unknown" || am.Usage != nil {
		t.Errorf("SDK-style message without id/model/usage = %+v", am)
	}
}

func TestCompaction(t *testing.T) {
	l := readFixture(t, "compaction.jsonl")
	es := typedEvents(t, l)
	want := "turn/start step/start user/message assistant/message step/end turn/end " +
		"compaction/start compaction/summary compaction/end turn/start step/start user/message assistant/message step/end turn/end"
	if got := types(es); got != want {
		t.Fatalf("types:\n got %s\nwant %s", got, want)
	}
	start, summary := es[6].Data, es[7].Data
	if start["compactionId"] != "cb1" || start["trigger"] != "manual" || start["preTokens"] != 90006.0 || start["turn"] != nil {
		t.Errorf("compaction/start = %v", start)
	}
	if summary["compactionId"] != "cb1" || !strings.HasPrefix(summary["summary"].(string), "This session is being continued") {
		t.Errorf("compaction/summary = %v", summary)
	}
	sum := core.NewSummary()
	for i := range l.Events {
		sum.Apply(&l.Events[i])
	}
	if sum.Title != "Summarise the repo." || sum.Turns != 2 {
		t.Errorf("title %q turns %d: the summary must start no turn nor title", sum.Title, sum.Turns)
	}
}

func TestUnknownAndMalformedLines(t *testing.T) {
	l := readFixture(t, "unknown.jsonl")
	es := typedEvents(t, l)
	// The summary and custom-title lines are title lines: session/title,
	// the person's custom title winning.
	want := "session/title turn/start step/start user/message source/raw source/raw assistant/message step/end turn/end source/raw session/title source/raw"
	if got := types(es); got != want {
		t.Fatalf("types:\n got %s\nwant %s", got, want)
	}
	sum := core.NewSummary()
	for i := range l.Events {
		sum.Apply(&l.Events[i])
	}
	if sum.Title != "Greeting" {
		t.Errorf("title %q, want the custom title", sum.Title)
	}
	for _, e := range es {
		if e.Type == claudecode.EventSourceRaw && !e.Ignorable {
			t.Errorf("source/raw not ignorable: %v", e.Data)
		}
	}
	if es[5].Data["line"] != 4.0 || es[5].Data["text"] != "this is not json" || es[5].Data["error"] == nil {
		t.Errorf("malformed line = %v", es[5].Data)
	}
	wantNotes := []string{"line 4: not a JSON object (kept raw)", "line 6: not a JSON object (kept raw)"}
	if strings.Join(l.Notes, "|") != strings.Join(wantNotes, "|") {
		t.Errorf("notes = %q, want %q", l.Notes, wantNotes)
	}
	if rec := es[11].Data["record"].(map[string]any); rec["isSidechain"] != true {
		t.Errorf("sidechain line kept as %v", es[11].Data)
	}
	if l.Pos[5].Line != 4 {
		t.Errorf("pos of malformed = %+v", l.Pos[5])
	}
}

// TestGrownFile holds the decoder to append-only output: the events of a
// transcript cut after any line are a prefix of the whole file's, as long
// as the cut does not fall inside one message.id's lines.
func TestGrownFile(t *testing.T) {
	for _, name := range []string{"plain", "parallel", "compaction", "unknown"} {
		data, err := os.ReadFile(filepath.Join("testdata", name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		full := readBytes(t, data)
		lines := strings.SplitAfter(string(data), "\n")
		for cut := 1; cut < len(lines); cut++ {
			prefix, err := claudecode.ReadLog(bufio.NewReader(strings.NewReader(strings.Join(lines[:cut], ""))), dsh.Limits{})
			if err != nil && strings.Contains(err.Error(), "sessionId") {
				continue // no line so far names the session
			}
			if err != nil {
				t.Fatal(err)
			}
			if prefix.Header != full.Header {
				t.Fatalf("%s cut %d: header %+v, full %+v", name, cut, prefix.Header, full.Header)
			}
			if midGroup(lines[cut-1], lines[cut]) {
				continue
			}
			for i, e := range prefix.Events {
				a, _ := e.MarshalJSON()
				b, _ := full.Events[i].MarshalJSON()
				if !bytes.Equal(a, b) {
					t.Fatalf("%s cut after line %d: event %d\n got %s\nwant %s", name, cut, i, a, b)
				}
			}
		}
	}
}

// midGroup reports whether a and b are lines of one message.id, the first
// without its stop_reason.
func midGroup(a, b string) bool {
	var x, y struct {
		Message struct {
			ID         string  `json:"id"`
			StopReason *string `json:"stop_reason"`
		} `json:"message"`
	}
	_ = json.Unmarshal([]byte(a), &x)
	_ = json.Unmarshal([]byte(b), &y)
	return x.Message.ID != "" && x.Message.ID == y.Message.ID && x.Message.StopReason == nil
}

func readBytes(t *testing.T, data []byte) *dsh.Log {
	t.Helper()
	l, err := claudecode.ReadLog(bufio.NewReader(bytes.NewReader(data)), dsh.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestTornTailAndLimits(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "plain.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	torn := append(bytes.Clone(data), `{"type":"user","sessionId":"x","mess`...)
	l := readBytes(t, torn)
	if l.Torn == "" || !strings.HasPrefix(l.Torn, "line 10: incomplete last line") {
		t.Errorf("torn = %q", l.Torn)
	}
	if whole := readBytes(t, data); len(whole.Events) != len(l.Events) {
		t.Errorf("torn tail changed the events: %d vs %d", len(l.Events), len(whole.Events))
	}
	_, err = claudecode.ReadLog(bufio.NewReader(bytes.NewReader(data)), dsh.Limits{MaxLineBytes: 520})
	var fe *dsh.FormatError
	if !asFormat(err, &fe) || fe.Line != 4 || !strings.Contains(fe.Reason, "longer than the limit of 520 bytes") {
		t.Errorf("long line: %v", err)
	}
	_, err = claudecode.ReadLog(bufio.NewReader(bytes.NewReader(data)), dsh.Limits{MaxMemoryBytes: 2000})
	if !asFormat(err, &fe) || !strings.Contains(fe.Reason, "memory budget") {
		t.Errorf("memory budget: %v", err)
	}
	_, err = claudecode.ReadLog(bufio.NewReader(strings.NewReader(`{"type":"summary","summary":"x","leafUuid":"y"}`+"\n")), dsh.Limits{})
	if !asFormat(err, &fe) || !strings.Contains(fe.Reason, "sessionId") {
		t.Errorf("no session id: %v", err)
	}
}

func asFormat(err error, fe **dsh.FormatError) bool {
	e, ok := err.(*dsh.FormatError)
	*fe = e
	return ok
}

func TestMetaCap(t *testing.T) {
	big := strings.Repeat("x", claudecode.MaxMetaBytes)
	line := `{"type":"user","sessionId":"s","uuid":"r","timestamp":"2026-11-02T09:00:00Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"out"}]},"toolUseResult":{"stdout":"` + big + `"}}`
	d := claudecode.NewDecoder()
	if err := d.Line(1, []byte(line)); err != nil {
		t.Fatal(err)
	}
	var r core.ToolResultData
	for _, e := range d.Events() {
		if e.Type == core.EventToolResult {
			_ = e.DecodeData(&r)
		}
	}
	if want := `{"truncated":true,"bytes":65549}`; string(r.Meta) != want {
		t.Errorf("meta = %.80s, want %s", r.Meta, want)
	}
}

func TestDetect(t *testing.T) {
	for _, tt := range []struct {
		head string
		want bool
	}{
		{`{"type":"session","version":0,"id":"x","createdAt":1}` + "\n", false},
		{`{"type":"user","sessionId":"s","message":{}}` + "\n", true},
		{`{"type":"file-history-snapshot","messageId":"m"}` + "\n", true},
		{`{"type":"summary","summary":"x","leafUuid":"y"}` + "\n", true},
		{`{"type":"session","id":"x","createdAt":1,"sessionId":"y"`, false},
		{`{"type":"file-history-snapshot","sessionId":"s","snapshot":{"x":"` + strings.Repeat("y", 100), true},
		{`{"type":"turn/start","seq":0}` + "\n", false},
		{"not json\n", false},
		{"", false},
	} {
		if got := claudecode.Detect([]byte(tt.head)); got != tt.want {
			t.Errorf("Detect(%.60q) = %v, want %v", tt.head, got, tt.want)
		}
	}
}

func TestInterruptedByUser(t *testing.T) {
	env := `"sessionId":"s","cwd":"/w","isSidechain":false`
	lines := []string{
		`{"type":"user",` + env + `,"uuid":"u1","timestamp":"2026-11-02T09:00:00Z","message":{"role":"user","content":"Run it"}}`,
		`{"type":"assistant",` + env + `,"uuid":"a1","timestamp":"2026-11-02T09:00:01Z","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"sleep 9"}}],"stop_reason":"tool_use"}}`,
		`{"type":"user",` + env + `,"uuid":"x1","timestamp":"2026-11-02T09:00:05Z","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}`,
		`{"type":"user",` + env + `,"uuid":"u2","timestamp":"2026-11-02T09:00:09Z","message":{"role":"user","content":"Something else"}}`,
	}
	l := readBytes(t, []byte(strings.Join(lines, "\n")+"\n"))
	es := typedEvents(t, l)
	want := "turn/start step/start user/message assistant/message tool/call tool/result step/end turn/end user/message turn/start step/start user/message"
	if got := types(es); got != want {
		t.Fatalf("types:\n got %s\nwant %s", got, want)
	}
	if r := es[7].Data["reason"].(map[string]any); r["kind"] != core.TurnAborted || r["reason"].(map[string]any)["kind"] != "user" {
		t.Errorf("turn/end = %v", es[7].Data)
	}
	if e := es[5].Data["error"].(map[string]any); e["code"] != "TOOL_OUTCOME_UNKNOWN" {
		t.Errorf("unanswered call's result = %v", es[5].Data)
	}
	if src := es[8].Data["source"].(map[string]any); src["kind"] != core.SourcePlugin {
		t.Errorf("interrupt marker = %v", es[8].Data)
	}
	if err := core.CheckRelations(l.Events); err != nil {
		t.Error(err)
	}
}

// TestLossyNumbers: a result whose toolUseResult holds a number a log
// cannot carry (-0) keeps its result without meta; an unmapped line with
// one is kept as text and reported.
func TestLossyNumbers(t *testing.T) {
	lines := `{"type":"user","sessionId":"s","uuid":"r","timestamp":"2026-11-02T09:00:00Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"out"}]},"toolUseResult":{"x":-0}}` + "\n" +
		`{"type":"progress","sessionId":"s","data":{"n":1e400}}` + "\n"
	l := readBytes(t, []byte(lines))
	if err := core.ValidateLog(l.Header, l.Events); err != nil {
		t.Fatal(err)
	}
	var r core.ToolResultData
	if err := l.Events[2].DecodeData(&r); err != nil || r.Meta != nil || r.CallID() != "t" {
		t.Errorf("result = %+v (%v), want no meta", r, err)
	}
	if len(l.Notes) != 1 || !strings.HasPrefix(l.Notes[0], "line 2: not lossless JSON") {
		t.Errorf("notes = %q", l.Notes)
	}
}

// TestHeaderFromLaterLines: the session id can come before any timestamp;
// createdAt is then the first timestamp, and the untimed lines take it.
func TestHeaderFromLaterLines(t *testing.T) {
	lines := `{"type":"custom-title","customTitle":"x","sessionId":"s9"}` + "\n" +
		`{"type":"user","sessionId":"s9","cwd":"relative/dir","uuid":"u","timestamp":"2026-11-02T09:00:00Z","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"user","sessionId":"other","cwd":"/abs","uuid":"v","timestamp":"2026-11-02T09:00:01Z","message":{"role":"user","content":"again"}}` + "\n"
	l := readBytes(t, []byte(lines))
	want := core.SessionHeader{ID: "s9", CreatedAt: 1793610000000, Cwd: "/abs"}
	if l.Header != want {
		t.Errorf("header = %+v, want %+v", l.Header, want)
	}
	if l.Events[0].Time != 1793610000000 {
		t.Errorf("untimed first line at %d", l.Events[0].Time)
	}
}
