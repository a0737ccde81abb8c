package core

import (
	"context"
	"encoding/json"
	"testing"
)

// TestUnknownPostDecisionKindAccepts: as in dsh, a decision kind the
// pipeline does not know is an accept — the result is kept, the decision's
// contexts still join it — never a failure.
func TestUnknownPostDecisionKindAccepts(t *testing.T) {
	reg := NewRegistry(nil)
	reg.MustRegister(MustDefine(Definition[struct{}, string]{
		Name:    "t",
		Output:  Output[struct{}, string]{Schema: `{"type":"string"}`, Render: func(_ struct{}, v string) (Content, error) { return Text(v), nil }},
		Execute: func(context.Context, struct{}, *Run) (string, error) { return "ok", nil },
	}))
	ctxMsg := NewContextMessage("m1", "test", "remember")
	reg.UsePostExecute(func(context.Context, *Execution, Result, func() (PostDecision, error)) (PostDecision, error) {
		return PostDecision{kind: PostKind(42), content: Text("ignored"), contexts: []Message{ctxMsg}}, nil
	})
	r := reg.Execute(context.Background(), Call{CallID: "c", Name: "t"})
	s, ok := r.(*Success)
	if !ok {
		t.Fatalf("result = %#v, want a success", r)
	}
	if got := s.Content.PlainText(); got != "ok" {
		t.Errorf("content = %q, want the tool's own", got)
	}
	if string(s.Value) != `"ok"` {
		t.Errorf("value = %s", s.Value)
	}
	if len(s.AdditionalContexts) != 1 || s.AdditionalContexts[0].ID != "m1" {
		t.Errorf("contexts = %+v, want the decision's", s.AdditionalContexts)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Fatal(err)
	}
}
