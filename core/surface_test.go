package core_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
)

// messagesJSON renders messages for comparison.
func messagesJSON(t *testing.T, ms []core.Message) []string {
	t.Helper()
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		b, err := core.MarshalNoEscape(m)
		if err != nil {
			t.Fatalf("marshal message %s: %v", m.ID, err)
		}
		out = append(out, string(b))
	}
	return out
}

var (
	wantU1 = `{"id":"u1","role":"user","content":[{"type":"text","text":"hello"}],"source":{"kind":"user"}}`
	wantA1 = `{"id":"a1","role":"assistant","content":[{"type":"text","text":"calling"},{"type":"tool-call","id":"c1","name":"read","arguments":"{\"p\":1}"}],"source":{"kind":"model","provider":"deepseek","model":"deepseek-chat"}}`
	wantR1 = `{"id":"r1","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"file body"}],"isError":true}],"source":{"kind":"tool","callId":"c1"}}`
)

func TestDeriveMessagesProjection(t *testing.T) {
	log := transcriptLog()
	// tool/call, chunks and boundaries are absent; the result's meta and
	// error are not part of its message; the empty assistant message is
	// skipped.
	want := []string{wantU1, wantA1, wantR1}
	if diff := cmp.Diff(want, messagesJSON(t, core.DeriveMessages(log))); diff != "" {
		t.Errorf("DeriveMessages (-want +got):\n%s", diff)
	}
	s, err := core.OpenSession(header("s1"), log, core.SessionOptions{})
	if err != nil {
		t.Fatalf("OpenSession: %v", err)
	}
	if diff := cmp.Diff(want, messagesJSON(t, s.DeriveMessages())); diff != "" {
		t.Errorf("Session.DeriveMessages (-want +got):\n%s", diff)
	}
}

func TestDeriveMessagesReplaceSplicesSurface(t *testing.T) {
	s := newMemSession(t)
	for _, e := range transcriptLog()[:7] {
		mustAppend(t, s, e.Type, e.Data, core.AppendOptions{SurfaceOp: e.SurfaceOp, SourceEventSeqs: e.SourceEventSeqs})
	}
	if diff := cmp.Diff([]string{wantU1, wantA1, wantR1}, messagesJSON(t, s.DeriveMessages())); diff != "" {
		t.Fatalf("before replace (-want +got):\n%s", diff)
	}

	// A compaction summary replaces u1..a1; a pruned rewrite replaces r1.
	mustAppend(t, s, core.EventUserMessage, json.RawMessage(userMsg("sum", "summary of u1 and a1")),
		core.AppendOptions{SurfaceOp: replaceOp(2, 4), SourceEventSeqs: []int64{2, 4}})
	wantSum := `{"id":"sum","role":"user","content":[{"type":"text","text":"summary of u1 and a1"}],"source":{"kind":"user"}}`
	if diff := cmp.Diff([]string{wantSum, wantR1}, messagesJSON(t, s.DeriveMessages())); diff != "" {
		t.Errorf("after summary (-want +got):\n%s", diff)
	}
	mustAppend(t, s, core.EventToolResult, json.RawMessage(toolResult(1, 1, "r1", "c1", "fi[...]dy", true, `,"error":{"name":"FsError","code":"FS_X"},"meta":{"bytes":9}`)),
		core.AppendOptions{SurfaceOp: replaceOp(6, 6), SourceEventSeqs: []int64{6}})
	mustAppend(t, s, core.EventUserMessage, json.RawMessage(userMsg("u2", "next")), appendOp)
	wantPruned := `{"id":"r1","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"fi[...]dy"}],"isError":true}],"source":{"kind":"tool","callId":"c1"}}`
	wantU2 := `{"id":"u2","role":"user","content":[{"type":"text","text":"next"}],"source":{"kind":"user"}}`
	want := []string{wantSum, wantPruned, wantU2}
	if diff := cmp.Diff(want, messagesJSON(t, s.DeriveMessages())); diff != "" {
		t.Errorf("after rewrite (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, messagesJSON(t, core.DeriveMessages(s.Events()))); diff != "" {
		t.Errorf("package DeriveMessages over the same log (-want +got):\n%s", diff)
	}

	// The human transcript keeps what was shown: append-origin events only.
	var seqs []int64
	for _, e := range core.HumanTranscript(s.Events()) {
		seqs = append(seqs, e.Seq)
	}
	if diff := cmp.Diff([]int64{2, 4, 6, 9}, seqs); diff != "" {
		t.Errorf("HumanTranscript seqs (-want +got):\n%s", diff)
	}
}

func TestDeriveMessagesReturnsFreshSlice(t *testing.T) {
	s := newMemSession(t)
	mustAppend(t, s, core.EventUserMessage, core.NewUserMessage("u1", "a"), appendOp)
	first := s.DeriveMessages()
	mustAppend(t, s, core.EventUserMessage, core.NewUserMessage("u2", "b"), appendOp)
	second := s.DeriveMessages()
	if len(first) != 1 || len(second) != 2 {
		t.Fatalf("lengths %d, %d; want 1, 2", len(first), len(second))
	}
	first[0].ID = "changed"
	if got := s.DeriveMessages()[0].ID; got != "u1" {
		t.Errorf("cache changed through a returned slice: %q", got)
	}
}

func TestHumanTranscriptFiltersNonSurface(t *testing.T) {
	log := []core.Event{
		ev(0, core.EventTurnStart, turnStart(1)),
		sev(1, core.EventUserMessage, userMsg("u", "x")),
		rev(2, core.EventUserMessage, userMsg("s", "y"), 1, 1, 1),
		ev(3, "future/thing", `{}`),
	}
	got := core.HumanTranscript(log)
	if len(got) != 1 || got[0].Seq != 1 {
		t.Errorf("HumanTranscript = %v, want only seq 1", got)
	}
}
