package core_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/tools"
)

// TestFinalizeContent checks dsh's finalizeContent: exactly once for every
// normalized outcome (post-execute or not), after post-execute, replacing
// only the content; nil keeps it.
func TestFinalizeContent(t *testing.T) {
	type seen struct {
		IsError bool
		Text    string // the content it was given
	}
	tests := []struct {
		name  string
		raw   string
		body  func(context.Context, noteArgs, *core.Run) (note, error)
		setup func(*core.Registry, context.CancelFunc)
		// keep makes the finalizer return nil.
		keep bool
		want outcome
		seen seen
	}{
		{
			name: "success",
			raw:  `{"title":"Demo"}`,
			want: outcome{Text: "final", Value: noteValue, Meta: noteMetaJ, Contexts: []string{"kept"}, Posted: true},
			seen: seen{Text: noteText},
		},
		{
			name: "nil keeps the content",
			raw:  `{"title":"Demo"}`,
			keep: true,
			want: outcome{Text: noteText, Value: noteValue, Meta: noteMetaJ, Contexts: []string{"kept"}, Posted: true},
			seen: seen{Text: noteText},
		},
		{
			name: "INVALID_ARGS",
			raw:  `{}`,
			want: outcome{IsError: true, Text: "final", Message: `invalid arguments: missing required property "title"`,
				Info: info("ToolArgsError", "INVALID_ARGS"), Contexts: []string{"kept"}, Posted: true},
			seen: seen{IsError: true, Text: `Error: invalid arguments: missing required property "title"`},
		},
		{
			name: "body error",
			raw:  `{"title":"Demo"}`,
			body: func(context.Context, noteArgs, *core.Run) (note, error) { return note{}, errors.New("disk full") },
			want: outcome{IsError: true, Text: "final", Message: "disk full", Contexts: []string{"kept"}, Posted: true},
			seen: seen{IsError: true, Text: "Error: disk full"},
		},
		{
			name: "blocked result, after post-execute",
			raw:  `{"title":"Demo"}`,
			setup: func(reg *core.Registry, _ context.CancelFunc) {
				reg.UsePostExecute(func(context.Context, *core.Execution, core.Result, func() (core.PostDecision, error)) (core.PostDecision, error) {
					return core.Block(core.Text("blocked by policy")), nil
				})
			},
			want: outcome{IsError: true, Text: "final", Message: "blocked by policy", Contexts: []string{"kept"}, Posted: true},
			seen: seen{IsError: true, Text: "blocked by policy"},
		},
		{
			name: "execute middleware error bypasses post-execute, not finalize",
			raw:  `{"title":"Demo"}`,
			setup: func(reg *core.Registry, _ context.CancelFunc) {
				reg.UseExecute(func(context.Context, *core.Execution, func(context.Context) core.Result) (core.Result, error) {
					return nil, errors.New("limiter broken")
				})
			},
			want: outcome{IsError: true, Text: "final", Message: "limiter broken"},
			seen: seen{IsError: true, Text: "Error: limiter broken"},
		},
		{
			name:  "caller cancelled on entry",
			raw:   `{"title":"Demo"}`,
			setup: func(_ *core.Registry, cancel context.CancelFunc) { cancel() },
			want: outcome{IsError: true, Text: "final", Message: "tool call aborted before dispatch",
				Info: info("AbortError", "ABORTED_BEFORE_DISPATCH")},
			seen: seen{IsError: true, Text: "Error: tool call aborted before dispatch"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []seen
			def := tools.NoteDefinition()
			def.IsConcurrencySafe = nil
			if tt.body != nil {
				def.Execute = tt.body
			}
			def.FinalizeContent = func(exec *core.Execution, r core.Result) core.Content {
				if exec.Name != "note" {
					t.Errorf("finalize saw exec %q", exec.Name)
				}
				calls = append(calls, seen{IsError: r.IsError(), Text: r.Projection().Content.PlainText()})
				if tt.keep {
					return nil
				}
				return core.Text("final")
			}
			reg := core.NewRegistry(nil)
			reg.MustRegister(core.MustDefine(def))
			posted := false
			reg.UsePostExecute(func(_ context.Context, _ *core.Execution, _ core.Result, next func() (core.PostDecision, error)) (core.PostDecision, error) {
				posted = true
				d, err := next()
				return d.WithContexts(ctxMsg("kept")), err
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.setup != nil {
				tt.setup(reg, cancel)
			}
			got := summarize(reg.Execute(ctx, core.Call{CallID: "c1", Name: "note", RawArguments: tt.raw}), posted)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]seen{tt.seen}, calls); diff != "" {
				t.Errorf("finalizeContent calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFinalizeContentFailures: a panicking finalizer or a non-lossless
// content fails the call with "Error: …", and the finalizer still ran once.
func TestFinalizeContentFailures(t *testing.T) {
	tests := []struct {
		name string
		fn   core.FinalizeFunc
		want string
	}{
		{"panic", func(*core.Execution, core.Result) core.Content { panic("finalizer bug") }, "finalizer bug"},
		{"not lossless", func(*core.Execution, core.Result) core.Content {
			return core.Content{&core.UnknownBlock{Type: "x", Raw: []byte(`{"type":"x","n":-0}`)}}
		}, "tool result must be losslessly JSON-serializable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			def := tools.NoteDefinition()
			def.FinalizeContent = func(e *core.Execution, r core.Result) core.Content { n++; return tt.fn(e, r) }
			reg := core.NewRegistry(nil)
			reg.MustRegister(core.MustDefine(def))
			got := summarize(reg.Execute(context.Background(), core.Call{Name: "note", RawArguments: `{"title":"Demo"}`}), true)
			want := outcome{IsError: true, Text: "Error: " + tt.want, Message: tt.want, Posted: true}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if n != 1 {
				t.Errorf("finalizer ran %d times, want 1", n)
			}
		})
	}
}

// TestNewFailure: the helper for execute middleware authors dsh's
// toolErrorResult, and the pipeline keeps it as the wrapper wrote it.
func TestNewFailure(t *testing.T) {
	reg := core.NewRegistry(nil)
	reg.MustRegister(noteTool(nil))
	reg.UseExecute(func(ctx context.Context, _ *core.Execution, next func(context.Context) core.Result) (core.Result, error) {
		return core.NewFailure(core.NewError("QuotaError", "QUOTA", "quota of %d calls spent", 3)), nil
	})
	got := summarize(reg.Execute(context.Background(), core.Call{Name: "note", RawArguments: `{"title":"Demo"}`}), true)
	want := outcome{IsError: true, Text: "Error: quota of 3 calls spent", Message: "quota of 3 calls spent", Info: info("QuotaError", "QUOTA"), Posted: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	plain := core.NewFailure(errors.New("plain"))
	if plain.Error.Info != nil || plain.Content.PlainText() != "Error: plain" {
		t.Errorf("NewFailure(plain) = %+v", plain)
	}
}

// TestPostDecisionConstructors: each constructor makes exactly one kind, and
// contexts come as an option.
func TestPostDecisionConstructors(t *testing.T) {
	m := ctxMsg("a")
	if d := core.Accept(core.WithContexts(m)); d.Kind() != core.PostAccept || len(d.Contexts()) != 1 {
		t.Errorf("Accept = %+v", d)
	}
	if d := core.ReplaceContent(nil); d.Kind() != core.PostReplaceContent {
		t.Errorf("ReplaceContent(nil) kind = %v", d.Kind())
	} else if c, ok := d.Content(); !ok || c == nil {
		t.Errorf("ReplaceContent(nil) content = %v, %v; want an empty replacement", c, ok)
	}
	if _, ok := core.ReplaceValue(1).Content(); ok {
		t.Error("ReplaceValue carries a content")
	}
	if v, ok := core.ReplaceValue(1).Value(); !ok || v != 1 {
		t.Errorf("ReplaceValue value = %v, %v", v, ok)
	}
	if f, ok := core.Block(core.Text("no")).Feedback(); !ok || f.PlainText() != "no" {
		t.Errorf("Block feedback = %v, %v", f, ok)
	}
	d := core.Block(core.Text("no"), core.WithContexts(ctxMsg("b"))).PrependContexts(m)
	if got := len(d.Contexts()); got != 2 || d.Contexts()[0].ID != m.ID {
		t.Errorf("PrependContexts = %+v", d.Contexts())
	}
	if (core.PostDecision{}).Kind() != core.PostAccept {
		t.Error("the zero decision is not an accept")
	}
}
