package redact_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/redact"
)

// log builds a session log event by event, with typed data.
type log struct {
	t      testing.TB
	events []core.Event
}

func (l *log) add(typ string, data any) {
	l.t.Helper()
	b, err := core.MarshalNoEscape(data)
	if err != nil {
		l.t.Fatal(err)
	}
	e := core.Event{Type: typ, Seq: int64(len(l.events)), Time: 1000 + int64(len(l.events)), Data: b}
	if core.IsSurfaceType(typ) {
		e.SurfaceOp = &core.SurfaceOp{}
	}
	l.events = append(l.events, e)
}

func (l *log) chunk(typ, text string) {
	idx := 0
	l.add(core.EventAssistantChunk, core.AssistantChunk{Turn: 1, Step: 1, Chunk: core.StreamChunk{Type: typ, Index: &idx, Text: &text}})
}

func (l *log) call(id, name, args string) {
	l.add(core.EventToolCall, core.ToolCall{Turn: 1, Step: 1, CallID: id, Name: name, Arguments: args})
}

func (l *log) result(id, text string, meta any) {
	m, _ := json.Marshal(meta)
	l.add(core.EventToolResult, core.ToolResultData{Turn: 1, Step: 1,
		Message: core.NewToolResultMessage("m-"+id, id, core.Text(text), false), Meta: m})
}

// secretSession seeds a session with every kind of secret in every place a
// link reveals: the header's cwd, a user message, streamed reasoning and
// text split across chunks, tool arguments, tool content, meta, and a .env
// file read through a tool.
func secretSession(t testing.TB) (core.SessionHeader, []core.Event, []string) {
	h := core.SessionHeader{ID: "s1", CreatedAt: 1, Cwd: "/work/" + awsKeyID}
	l := &log{t: t}
	l.add(core.EventTurnStart, core.TurnStart{Turn: 1})
	l.add(core.EventUserMessage, core.NewUserMessage("u1", "deploy with password=hunter2 and "+deepseekKey))
	l.add(core.EventStepStart, core.StepBoundary{Turn: 1, Step: 1})
	// The GitHub token is split across three chunks.
	l.chunk(core.ChunkReasoningDelta, "I will use "+githubPAT[:10])
	l.chunk(core.ChunkReasoningDelta, githubPAT[10:25])
	l.chunk(core.ChunkReasoningDelta, githubPAT[25:]+" to push.")
	l.chunk(core.ChunkTextDelta, "Calling the tools.")
	l.add(core.EventAssistantMessage, core.AssistantMessage{Turn: 1, Step: 1, Message: core.Message{ID: "a1", Role: core.RoleAssistant,
		Content: core.Content{&core.ReasoningBlock{Text: "I will use " + githubPAT + " to push."}, &core.TextBlock{Text: "Calling the tools."}},
		Source:  core.Source{Kind: core.SourceModel}}})
	l.call("c-bash", "bash", `{"command":"curl -H 'Authorization: Bearer `+bearerValue+`' https://api"}`)
	l.call("c-env", "read", `{"path":"app/.env"}`)
	l.result("c-bash", "response: "+jwtToken, map[string]any{"exitCode": 0, "headers": map[string]string{"Set-Cookie": "sid=abc123"}})
	l.result("c-env", "<content>\n1: DEBUG=true\n2: DB_HOST=db.internal\n3: ANTHROPIC_API_KEY="+anthropicKey+"\n</content>", map[string]any{"lines": 3})
	l.add(core.EventStepEnd, core.StepBoundary{Turn: 1, Step: 1})
	l.add(core.EventTurnEnd, core.TurnEnd{Turn: 1, Reason: core.TurnEndReason{Kind: core.TurnCompleted}})
	secrets := []string{awsKeyID, "hunter2", deepseekKey, githubPAT, githubPAT[10:25], bearerValue, jwtToken, "abc123", "db.internal", anthropicKey}
	return h, l.events, secrets
}

func TestSessionRedactsEveryPlace(t *testing.T) {
	r := newRedactor(t)
	h, events, secrets := secretSession(t)
	stored := make([]core.Event, len(events))
	for i, e := range events {
		e.Data = slices.Clone(e.Data)
		stored[i] = e
	}

	rh, out, rep := r.Session(h, events)

	all, _ := json.Marshal(rh)
	for _, e := range out {
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("event %d: %v", e.Seq, err)
		}
		if !json.Valid(e.Data) {
			t.Fatalf("event %d: invalid data %s", e.Seq, e.Data)
		}
		all = append(all, b...)
	}
	for _, s := range secrets {
		if strings.Contains(string(all), s) {
			t.Errorf("redacted session still holds %q", s)
		}
	}
	if diff := cmp.Diff(stored, events); diff != "" {
		t.Errorf("the input events changed (-before +after):\n%s", diff)
	}
	if len(out) != len(events) {
		t.Fatalf("got %d events, want %d", len(out), len(events))
	}
	for i := range out {
		if out[i].Seq != events[i].Seq || out[i].Type != events[i].Type {
			t.Errorf("event %d: envelope changed", i)
		}
	}

	// The chunks carry the redacted stream, cut where the stream was cut.
	var reasoning []string
	for _, e := range out {
		if e.Type != core.EventAssistantChunk {
			continue
		}
		var c core.AssistantChunk
		if err := e.DecodeData(&c); err != nil {
			t.Fatal(err)
		}
		if c.Chunk.Type == core.ChunkReasoningDelta {
			reasoning = append(reasoning, *c.Chunk.Text)
		}
	}
	if diff := cmp.Diff([]string{"I will use [redacted:github-token]", "", " to push."}, reasoning); diff != "" {
		t.Errorf("reasoning chunks (-want +got):\n%s", diff)
	}

	want := redact.Report{Total: 9}
	want.Kinds = []redact.KindReport{
		{Kind: redact.KindAnthropicKey, Count: 1, CallIDs: []string{"c-env"}},
		{Kind: redact.KindAWSAccessKey, Count: 1, Header: true},
		{Kind: redact.KindBearer, Count: 1, CallIDs: []string{"c-bash"}},
		{Kind: redact.KindDeepSeekKey, Count: 1, Seqs: []int64{1}},
		{Kind: redact.KindEnv, Count: 1, CallIDs: []string{"c-env"}},
		{Kind: redact.KindGitHubToken, Count: 1, Seqs: []int64{7}},
		{Kind: redact.KindJWT, Count: 1, CallIDs: []string{"c-bash"}},
		{Kind: redact.KindPassword, Count: 1, Seqs: []int64{1}},
		{Kind: redact.KindToken, Count: 1, CallIDs: []string{"c-bash"}},
	}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

// TestOpenStreamWithheld: chunks of a stream that is not finalized in the
// batch — or that began in an earlier batch — carry no text.
func TestOpenStreamWithheld(t *testing.T) {
	r := newRedactor(t)
	_, events, _ := secretSession(t)
	const firstChunk, message = 3, 7
	text := func(e core.Event) string {
		var c core.AssistantChunk
		if err := e.DecodeData(&c); err != nil {
			t.Fatal(err)
		}
		return *c.Chunk.Text
	}
	w := r.Walker()
	head := w.Events(events[:firstChunk+2]) // ends inside the stream
	for _, e := range head[firstChunk:] {
		if got := text(e); got != "" {
			t.Errorf("seq %d: open stream leaked %q", e.Seq, got)
		}
	}
	tail := w.Events(events[firstChunk+2:]) // the stream's end and its message
	for _, e := range tail[:message-firstChunk-2] {
		if got := text(e); got != "" {
			t.Errorf("seq %d: a stream begun in an earlier batch leaked %q", e.Seq, got)
		}
	}
	var m core.AssistantMessage
	if err := tail[message-firstChunk-2].DecodeData(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.Message.Content[0].(*core.ReasoningBlock).Text; got != "I will use [redacted:github-token] to push." {
		t.Errorf("message reasoning = %q", got)
	}
}

// TestEnvFileOnlyForItsCall: every line of a .env file is hidden, but only
// in the calls that touch one.
func TestEnvFileOnlyForItsCall(t *testing.T) {
	r := newRedactor(t)
	l := &log{t: t}
	l.call("c1", "bash", `{"command":"cat .env.local"}`)
	l.result("c1", "HOST=db.internal\nPORT=5432", nil)
	l.call("c2", "bash", `{"command":"cat settings.ini"}`)
	l.result("c2", "HOST=db.internal\nPORT=5432", nil)
	_, out, _ := r.Session(core.SessionHeader{ID: "s"}, l.events)
	content := func(e core.Event) string {
		var d core.ToolResultData
		if err := e.DecodeData(&d); err != nil {
			t.Fatal(err)
		}
		return d.Projection().Content[0].(*core.TextBlock).Text
	}
	if got := content(out[1]); got != "HOST=[redacted:env]\nPORT=[redacted:env]" {
		t.Errorf(".env output = %q", got)
	}
	if got := content(out[3]); got != "HOST=db.internal\nPORT=5432" {
		t.Errorf("other output = %q", got)
	}
}
