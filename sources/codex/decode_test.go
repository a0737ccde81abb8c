package codex_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/sources/codex"
)

var update = flag.Bool("update", false, "rewrite the golden files of the decoder tests")

// decodeFile decodes testdata/name.jsonl and checks that the log is valid
// the way import checks it: core.ValidateLog, and core.CheckRelations on
// the log closed by crash repair.
func decodeFile(t *testing.T, name string) *codex.Rollout {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := codex.Decode(f, codex.Options{})
	if err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	checkValid(t, r)
	return r
}

func checkValid(t testing.TB, r *codex.Rollout) {
	t.Helper()
	if err := core.ValidateLog(r.Header, r.Events); err != nil {
		t.Fatalf("ValidateLog: %v", err)
	}
	closed := append(append([]core.Event(nil), r.Events...), core.InterruptedTurnClosers(r.Events)...)
	if err := core.CheckRelations(closed); err != nil {
		t.Fatalf("CheckRelations: %v", err)
	}
	// The log survives its own round trip through the envelope decoder.
	for i := range r.Events {
		b, err := json.Marshal(r.Events[i])
		if err != nil {
			t.Fatalf("event %d: marshal: %v", i, err)
		}
		var back core.Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("event %d does not decode back: %v\n%s", i, err, b)
		}
	}
}

// golden renders a rollout as JSONL: the header line, then one event per
// line.
func golden(t *testing.T, r *codex.Rollout) []byte {
	t.Helper()
	var buf bytes.Buffer
	h, err := json.Marshal(r.Header)
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(h)
	buf.WriteByte('\n')
	for _, e := range r.Events {
		b, err := e.MarshalJSON() // json.Marshal would escape <, > and &
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// TestDecodeGolden compares every fixture's decoded header and events,
// byte for byte, with its golden file (rewritten with -update, then read).
func TestDecodeGolden(t *testing.T) {
	for _, name := range []string{"plain", "parallel", "apply_patch", "aborted", "malformed", "legacy"} {
		t.Run(name, func(t *testing.T) {
			got := golden(t, decodeFile(t, name))
			path := filepath.Join("testdata", name+".golden.jsonl")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
				for i := 0; i < len(gl) || i < len(wl); i++ {
					var g, w string
					if i < len(gl) {
						g = gl[i]
					}
					if i < len(wl) {
						w = wl[i]
					}
					if g != w {
						t.Fatalf("%s differs at line %d:\n got  %s\n want %s", path, i+1, g, w)
					}
				}
			}
		})
	}
}

// events returns the events of type typ, with their data decoded into T.
func events[T any](t *testing.T, r *codex.Rollout, typ string) []T {
	t.Helper()
	var out []T
	for _, e := range r.Events {
		if e.Type != typ {
			continue
		}
		var v T
		if err := json.Unmarshal(e.Data, &v); err != nil {
			t.Fatalf("seq %d: %v", e.Seq, err)
		}
		out = append(out, v)
	}
	return out
}

func types(r *codex.Rollout) []string {
	var out []string
	for _, e := range r.Events {
		out = append(out, e.Type)
	}
	return out
}

func TestDecodePlain(t *testing.T) {
	r := decodeFile(t, "plain")
	h := r.Header
	if h.ID != "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" || h.Cwd != "/home/ada/repo" || h.CreatedAt != 1777629600000 {
		t.Errorf("header = %+v", h)
	}
	if r.Originator != "codex_cli_rs" || r.CLIVersion != "0.50.0" || r.Provider != "openai" || string(r.Source) != `"cli"` {
		t.Errorf("rollout meta = %q %q %q %s", r.Originator, r.CLIVersion, r.Provider, r.Source)
	}
	want := []string{"user/message", "turn/start", "request/context", "user/message", "source/raw",
		"step/start", "assistant/message", "tool/call", "tool/result", "step/end",
		"step/start", "assistant/message", "step/end", "turn/end", "source/raw"}
	if got := types(r); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("types:\n got  %v\n want %v", got, want)
	}
	// The arguments are the rollout's string, byte for byte.
	calls := events[core.ToolCall](t, r, core.EventToolCall)
	wantArgs := `{"command":["bash","-lc","go test ./...  -run TestParse"], "workdir":"/home/ada/repo","note":"caf\u00e9"}`
	if calls[0].Arguments != wantArgs || calls[0].CallID != "call_A" || calls[0].Name != "shell" {
		t.Errorf("tool/call = %+v", calls[0])
	}
	// The environment context is a context message, and the title is the prompt.
	msgs := events[core.Message](t, r, core.EventUserMessage)
	if msgs[0].Source.Kind != core.SourcePlugin || msgs[0].Source.Form != "snapshot" || msgs[1].Source.Kind != core.SourceUser {
		t.Errorf("user messages' sources = %+v, %+v", msgs[0].Source, msgs[1].Source)
	}
	var sum core.Summary
	for i := range r.Events {
		sum.Apply(&r.Events[i])
	}
	if sum.Title != "Why does TestParse fail?" {
		t.Errorf("title = %q", sum.Title)
	}
	// Usage comes from token_count's last usage, cached tokens apart.
	am := events[core.AssistantMessage](t, r, core.EventAssistantMessage)
	if u := am[0].Usage; u == nil || *u != (core.TokenUsage{InputTokens: 1000, OutputTokens: 120, CacheReadTokens: 4000, ReasoningTokens: 64}) {
		t.Errorf("step 1 usage = %+v", u)
	}
	if am[0].Message.Source.Model != "gpt-5-codex" || am[0].Message.Source.Provider != "openai" {
		t.Errorf("model source = %+v", am[0].Message.Source)
	}
	// Exit code 1: a completed call whose error is inferred.
	res := events[core.ToolResultData](t, r, core.EventToolResult)
	inf := codex.InferredErrorOf(res[0].Meta)
	if inf == nil || inf.Kind != codex.InferExitCode || inf.ExitCode == nil || *inf.ExitCode != 1 {
		t.Fatalf("inferred error = %+v (meta %s)", inf, res[0].Meta)
	}
	if res[0].Projection().IsError {
		t.Error("a non-zero exit is flagged isError; prism shows it as a completed call with its exit pill")
	}
	ends := events[core.TurnEnd](t, r, core.EventTurnEnd)
	if ends[0].Reason.Kind != core.TurnCompleted {
		t.Errorf("turn end = %+v", ends[0])
	}
}

func TestDecodeParallel(t *testing.T) {
	r := decodeFile(t, "parallel")
	want := []string{"turn/start", "request/context", "user/message",
		"step/start", "assistant/message", "tool/call", "tool/call", "tool/result", "tool/result", "step/end",
		"step/start", "assistant/message", "step/end", "turn/end"}
	if got := types(r); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("types:\n got  %v\n want %v", got, want)
	}
	am := events[core.AssistantMessage](t, r, core.EventAssistantMessage)
	var ids []string
	for _, b := range am[0].Message.Content {
		if c, ok := b.(*core.ToolCallBlock); ok {
			ids = append(ids, c.ID)
		}
	}
	if strings.Join(ids, ",") != "call_1,call_2" {
		t.Errorf("one response's calls = %v", ids)
	}
	res := events[core.ToolResultData](t, r, core.EventToolResult)
	if res[0].CallID() != "call_2" || res[1].CallID() != "call_1" {
		t.Errorf("results pair by call_id in arrival order: %s, %s", res[0].CallID(), res[1].CallID())
	}
	if inf := codex.InferredErrorOf(res[0].Meta); inf == nil || *inf.ExitCode != 2 {
		t.Errorf("call_2's inferred error = %+v", inf)
	}
	if inf := codex.InferredErrorOf(res[1].Meta); inf != nil {
		t.Errorf("call_1 exited 0 yet has an inferred error %+v", inf)
	}
}

func TestDecodeApplyPatchAndCustomTools(t *testing.T) {
	r := decodeFile(t, "apply_patch")
	calls := events[core.ToolCall](t, r, core.EventToolCall)
	wantInput := "*** Begin Patch\n*** Update File: hello.go\n@@ func main() {\n-\tfmt.Println(\"hello, moon\")\n+\tfmt.Println(\"hello, world\")\n }\n*** Add File: NOTES.md\n+# Notes\n+greets the world\n*** End Patch\n"
	if calls[0].Name != "apply_patch" || calls[0].Arguments != wantInput {
		t.Errorf("custom tool input not kept as is: %+v", calls[0])
	}
	if calls[2].Name != "exec" || !strings.HasPrefix(calls[2].Arguments, "const r = await") {
		t.Errorf("code-mode call = %+v", calls[2])
	}
	res := events[core.ToolResultData](t, r, core.EventToolResult)
	if inf := codex.InferredErrorOf(res[0].Meta); inf != nil || res[0].Projection().IsError {
		t.Errorf("a successful patch has an error: %+v", inf)
	}
	inf := codex.InferredErrorOf(res[1].Meta)
	if inf == nil || inf.Kind != codex.InferExplicit || !strings.HasPrefix(inf.Text, "apply_patch verification failed") || !res[1].Projection().IsError {
		t.Errorf("failed patch: inferred %+v, isError %v", inf, res[1].Projection().IsError)
	}
	if got := res[2].Projection().Content.PlainText(); !strings.Contains(got, "vet: ok") || !strings.Contains(got, "[image]") {
		t.Errorf("array output = %q", got)
	}
}

func TestDecodeAborted(t *testing.T) {
	r := decodeFile(t, "aborted")
	res := events[core.ToolResultData](t, r, core.EventToolResult)
	if len(res) != 2 {
		t.Fatalf("%d results, want a synthetic one per unanswered call", len(res))
	}
	if inf := codex.InferredErrorOf(res[0].Meta); inf == nil || inf.Kind != codex.InferTurnAborted ||
		res[0].Error == nil || res[0].Error.Code != core.CodeAborted || !res[0].Projection().IsError || res[0].CallID() != "call_S" {
		t.Errorf("aborted call's result = %+v (inferred %+v)", res[0], inf)
	}
	if inf := codex.InferredErrorOf(res[1].Meta); inf == nil || inf.Kind != codex.InferUnanswered ||
		res[1].Error == nil || res[1].Error.Code != core.CodeToolOutcomeUnknown {
		t.Errorf("unanswered call's result = %+v (inferred %+v)", res[1], inf)
	}
	ends := events[core.TurnEnd](t, r, core.EventTurnEnd)
	if len(ends) != 2 || ends[0].Reason.Kind != core.TurnAborted || ends[0].Reason.Reason == nil || ends[0].Reason.Reason.Reason != "interrupted" {
		t.Fatalf("turn ends = %+v", ends)
	}
	if e := ends[1].Reason; e.Kind != core.TurnError || e.Error == nil || e.Error.Message != "stream disconnected before completion" {
		t.Errorf("task_complete.error → %+v", e)
	}
	am := events[core.AssistantMessage](t, r, core.EventAssistantMessage)
	if am[0].Message.Source.Provider != "azure" {
		t.Errorf("provider = %q, want session_meta's model_provider", am[0].Message.Source.Provider)
	}
}

func TestDecodeMalformed(t *testing.T) {
	r := decodeFile(t, "malformed")
	var lines []int
	for _, m := range r.Malformed {
		lines = append(lines, m.Line)
		if !strings.HasPrefix(m.Error(), "codex rollout line ") {
			t.Errorf("error does not name its line: %v", m)
		}
	}
	if len(lines) != 2 || lines[0] != 3 || lines[1] != 4 {
		t.Fatalf("malformed lines = %v, want [3 4]", lines)
	}
	if r.Lines != 8 {
		t.Errorf("lines read = %d", r.Lines)
	}
	if r.Header.Cwd != "" {
		t.Errorf("a relative cwd reached the header: %q", r.Header.Cwd)
	}
	// The rest decodes: the call after the broken lines is pending (no
	// output came), the orphan output is kept raw, and the usage is the
	// step's.
	calls := events[core.ToolCall](t, r, core.EventToolCall)
	if len(calls) != 1 || calls[0].CallID != "call_M" {
		t.Fatalf("calls = %+v", calls)
	}
	if n := len(events[core.ToolResultData](t, r, core.EventToolResult)); n != 0 {
		t.Errorf("%d results for a call whose output never came", n)
	}
	raws := events[struct {
		Source string          `json:"source"`
		Line   int             `json:"line"`
		Record json.RawMessage `json:"record"`
		Error  string          `json:"error"`
	}](t, r, codex.EventRaw)
	if len(raws) != 3 || raws[0].Line != 3 || raws[0].Error == "" || raws[1].Record[0] != '"' || raws[2].Line != 7 || raws[2].Source != "codex" {
		t.Errorf("raw events = %+v", raws)
	}
	for _, e := range r.Events {
		if e.Type == codex.EventRaw && !e.Ignorable {
			t.Errorf("seq %d: source/raw without ignorable", e.Seq)
		}
	}
	am := events[core.AssistantMessage](t, r, core.EventAssistantMessage)
	if len(am) != 1 || am[0].Usage == nil || am[0].Usage.OutputTokens != 5 {
		t.Errorf("assistant messages = %+v", am)
	}
	// The open step and turn stay open: import's repair closes them.
	if last := r.Events[len(r.Events)-1].Type; last == core.EventTurnEnd || last == core.EventStepEnd {
		t.Errorf("the unfinished turn was closed (%s)", last)
	}
}

func TestDecodeLegacy(t *testing.T) {
	r := decodeFile(t, "legacy")
	if r.Header.ID != "0199a1b2-0000-7000-8000-000000000006" {
		t.Errorf("flat header not read: %+v", r.Header)
	}
	starts := events[core.TurnStart](t, r, core.EventTurnStart)
	if len(starts) != 2 {
		t.Errorf("a rollout without turn markers: %d turns, want one per prompt", len(starts))
	}
	calls := events[core.ToolCall](t, r, core.EventToolCall)
	if len(calls) != 2 || calls[1].Name != codex.ToolLocalShell ||
		calls[1].Arguments != `{"type":"exec","command":["cat","a"],"working_directory":"/w"}` {
		t.Errorf("calls = %+v", calls)
	}
}

func TestDecodeNoSessionID(t *testing.T) {
	in := `{"timestamp":"2026-05-01T10:00:00Z","type":"event_msg","payload":{"type":"task_started"}}` + "\n"
	if _, err := codex.Decode(strings.NewReader(in), codex.Options{}); !errors.Is(err, codex.ErrNoSessionID) {
		t.Fatalf("err = %v, want ErrNoSessionID", err)
	}
	r, err := codex.Decode(strings.NewReader(in), codex.Options{ID: "from-the-name"})
	if err != nil || r.Header.ID != "from-the-name" {
		t.Fatalf("with Options.ID: %v, %+v", err, r)
	}
	checkValid(t, r)
}

func TestIDFromFileName(t *testing.T) {
	for name, want := range map[string]string{
		"/h/.codex/sessions/2026/05/01/rollout-2026-05-01T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
		"rollout-2026-05-01T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl.zst":                           "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
		"session.jsonl": "",
		"rollout-2026-05-01T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5z.jsonl": "",
	} {
		if got := codex.IDFromFileName(name); got != want {
			t.Errorf("IDFromFileName(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestDecodeHugeUsage: token counts beyond JavaScript's safe integers are
// clamped, so the log stays lossless JSON.
func TestDecodeHugeUsage(t *testing.T) {
	in := `{"timestamp":"2026-05-01T10:00:00Z","type":"session_meta","payload":{"id":"s"}}
{"timestamp":"2026-05-01T10:00:01Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}}
{"timestamp":"2026-05-01T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":9223372036854775807,"cached_input_tokens":-5,"output_tokens":9007199254740993,"reasoning_output_tokens":0,"total_tokens":0}}}}
`
	r, err := codex.Decode(strings.NewReader(in), codex.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkValid(t, r)
	am := events[core.AssistantMessage](t, r, core.EventAssistantMessage)
	if u := am[0].Usage; u == nil || u.InputTokens != 1<<53-1 || u.OutputTokens != 1<<53-1 || u.CacheReadTokens != 0 {
		t.Errorf("usage = %+v", u)
	}
}

// TestDecodeTurnCutShort: a turn that a new task_started cuts short (its
// task_complete never written) ends interrupted, its unanswered call
// answered with an outcome-unknown result whose error is inferred.
func TestDecodeTurnCutShort(t *testing.T) {
	in := `{"timestamp":"2026-05-01T10:00:00Z","type":"session_meta","payload":{"id":"s"}}
{"timestamp":"2026-05-01T10:00:01Z","type":"event_msg","payload":{"type":"task_started"}}
{"timestamp":"2026-05-01T10:00:02Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c"}}
{"timestamp":"2026-05-01T10:00:03Z","type":"event_msg","payload":{"type":"task_started"}}
{"timestamp":"2026-05-01T10:00:04Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"again"}]}}
`
	r, err := codex.Decode(strings.NewReader(in), codex.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkValid(t, r)
	want := "turn/start step/start assistant/message tool/call tool/result step/end turn/end turn/start user/message"
	if got := strings.Join(types(r), " "); got != want {
		t.Fatalf("types:\n got  %s\n want %s", got, want)
	}
	ends := events[core.TurnEnd](t, r, core.EventTurnEnd)
	res := events[core.ToolResultData](t, r, core.EventToolResult)
	if ends[0].Reason.Kind != core.TurnInterrupted || codex.InferredErrorOf(res[0].Meta).Kind != codex.InferUnanswered {
		t.Errorf("turn end %+v, result meta %s", ends[0], res[0].Meta)
	}
}

func TestSniff(t *testing.T) {
	for _, name := range []string{"plain", "parallel", "apply_patch", "aborted", "malformed", "legacy"} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := bytes.Cut(b, []byte("\n"))
		if !codex.Sniff(first) {
			t.Errorf("%s: not recognised as a rollout", name)
		}
	}
	for _, line := range []string{
		`{"type":"session","version":0,"id":"s","createdAt":1}`,                               // prism's own JSONL
		`{"type":"user","uuid":"u1","sessionId":"s1","timestamp":"2026-05-01T10:00:00.000Z"}`, // Claude Code
		`{"timestamp":"2026-05-01T10:00:00Z","type":"session_meta","payload":{}}`,
		`not json`, ``,
	} {
		if codex.Sniff([]byte(line)) {
			t.Errorf("Sniff(%s) = true", line)
		}
	}
}
