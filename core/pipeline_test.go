package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"prism/core"
)

// outcome is what a table row checks of a final result.
type outcome struct {
	IsError  bool
	Text     string // content[0].text ("" when there is no text block)
	Info     *core.ErrorInfo
	Message  string // failure message ("" for a success)
	Value    string // success value JSON ("" for none)
	Meta     string // meta JSON ("" for none)
	Contexts []string
	Posted   bool // post-execute ran
}

func summarize(r core.Result, posted bool) outcome {
	o := outcome{IsError: r.IsError(), Posted: posted}
	p := r.Projection()
	if len(p.Content) > 0 {
		if t, ok := p.Content[0].(*core.TextBlock); ok {
			o.Text = t.Text
		}
	}
	o.Meta = string(p.Meta)
	for _, c := range r.Contexts() {
		o.Contexts = append(o.Contexts, c.Content.PlainText())
	}
	switch x := r.(type) {
	case *core.Success:
		o.Value = string(x.Value)
	case *core.Failure:
		o.Info = x.Error.Info
		o.Message = x.Error.Message
	}
	return o
}

type approverFunc func(context.Context, core.ApprovalRequest) (core.ApprovalAnswer, error)

func (f approverFunc) Approve(ctx context.Context, r core.ApprovalRequest) (core.ApprovalAnswer, error) {
	return f(ctx, r)
}

const (
	noteValue = `{"title":"Demo","lines":["line one","line two"]}`
	noteMetaJ = `{"lineCount":2,"title":"Demo"}`
	noteText  = "# Demo\n- line one\n- line two"
)

func ctxMsg(text string) core.Message { return core.NewContextMessage("ctx-"+text, "test", text) }

func info(name, code string) *core.ErrorInfo { return &core.ErrorInfo{Name: name, Code: code} }

// TestPipelineFailureCatalog walks the rows of dsh's failure catalog that a Go
// registry can produce and checks content text, isError, failure identity,
// and whether value, meta and contexts survive and post-execute ran.
func TestPipelineFailureCatalog(t *testing.T) {
	fail := func(msg string, in *core.ErrorInfo) outcome {
		return outcome{IsError: true, Text: "Error: " + msg, Message: msg, Info: in, Posted: true}
	}
	noPost := func(o outcome) outcome { o.Posted = false; return o }
	// cancelCaller lets a tool body cancel its own caller mid-run.
	var cancelCaller context.CancelFunc
	tests := []struct {
		name  string
		call  core.Call
		tool  func(ctx context.Context, a noteArgs, run *core.Run) (note, error) // nil = the seed body
		setup func(t *testing.T, reg *core.Registry, cancel context.CancelFunc)
		// precancel cancels the caller before Execute.
		precancel bool
		want      outcome
	}{
		{
			name: "success",
			call: core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			want: outcome{Text: noteText, Value: noteValue, Meta: noteMetaJ, Posted: true},
		},
		{
			name: "unknown tool",
			call: core.Call{Name: "nope", RawArguments: `{}`},
			want: fail(`unknown tool "nope"`, info("ToolNotFoundError", "UNKNOWN_TOOL")),
		},
		{
			name: "invalid arguments: missing required property",
			call: core.Call{Name: "note", RawArguments: `{}`},
			want: fail(`invalid arguments: missing required property "title"`, info("ToolArgsError", "INVALID_ARGS")),
		},
		{
			name: "invalid arguments: malformed JSON is kept raw and refused",
			call: core.Call{Name: "note", RawArguments: `{"title":`},
			want: fail(`invalid arguments: "arguments" must be an object`, info("ToolArgsError", "INVALID_ARGS")),
		},
		{
			name: "invalid arguments: empty string is {}",
			call: core.Call{Name: "note", RawArguments: ``},
			want: fail(`invalid arguments: missing required property "title"`, info("ToolArgsError", "INVALID_ARGS")),
		},
		{
			name: "invalid arguments: wrong type",
			call: core.Call{Name: "note", RawArguments: `{"title":7}`},
			want: fail(`invalid arguments: "title" must be a string`, info("ToolArgsError", "INVALID_ARGS")),
		},
		{
			name: "arguments not lossless: negative zero",
			call: core.Call{Name: "note", RawArguments: `{"title":"x","n":-0}`},
			want: noPost(fail("tool execution arguments must be losslessly JSON-serializable", nil)),
		},
		{
			name: "arguments not lossless: overflow",
			call: core.Call{Name: "note", RawArguments: `{"title":"x","n":1e400}`},
			want: noPost(fail("tool execution arguments must be losslessly JSON-serializable", nil)),
		},
		{
			name: "arguments not lossless: in-process NaN",
			call: core.Call{Name: "note", Arguments: map[string]any{"title": "x", "n": math.NaN()}},
			want: noPost(fail("tool execution arguments must be losslessly JSON-serializable", nil)),
		},
		{
			name: "body returns a coded error",
			call: core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			tool: func(context.Context, noteArgs, *core.Run) (note, error) {
				return note{}, core.NewError("FsError", "FS_STALE_VERSION", "file changed since read")
			},
			want: fail("file changed since read", info("FsError", "FS_STALE_VERSION")),
		},
		{
			name: "body returns a plain error",
			call: core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			tool: func(context.Context, noteArgs, *core.Run) (note, error) { return note{}, errors.New("disk full") },
			want: fail("disk full", nil),
		},
		{
			name: "body panics",
			call: core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			tool: func(context.Context, noteArgs, *core.Run) (note, error) { panic("boom") },
			want: fail("boom", nil),
		},
		{
			name: "invalid output: schema violation",
			call: core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			tool: func(context.Context, noteArgs, *core.Run) (note, error) { return note{Title: "x"}, nil },
			want: fail(`tool "note" returned invalid output: "value.lines" must be an array`, info("ToolOutputError", "INVALID_TOOL_OUTPUT")),
		},
		{
			name: "pre-execute deny",
			call: core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: func(t *testing.T, reg *core.Registry, _ context.CancelFunc) {
				reg.UsePreExecute(func(context.Context, *core.Execution, func() (core.PreDecision, error)) (core.PreDecision, error) {
					return core.Deny("notes are read-only"), nil
				})
			},
			want: fail("notes are read-only", nil),
		},
		{
			name: "guard deny after allow",
			call: core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: func(t *testing.T, reg *core.Registry, _ context.CancelFunc) {
				reg.AddGuard(func(*core.Execution) (string, bool) { return "sandbox forbids notes", true })
			},
			want: fail("sandbox forbids notes", nil),
		},
		{
			name: "pre-execute hook error bypasses post-execute",
			call: core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: func(t *testing.T, reg *core.Registry, _ context.CancelFunc) {
				reg.UsePreExecute(func(context.Context, *core.Execution, func() (core.PreDecision, error)) (core.PreDecision, error) {
					return core.PreDecision{}, errors.New("policy store offline")
				})
			},
			want: noPost(fail("policy store offline", nil)),
		},
		{
			name:  "ask without an approver",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: askSetup(nil, ""),
			want:  fail(`tool "note" requires approval (not yet supported)`, nil),
		},
		{
			name:  "ask with a reason and no approver",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: askSetup(nil, "writes are reviewed"),
			want:  fail("writes are reviewed", nil),
		},
		{
			name:  "ask without an agent",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: askSetup(approve(core.ApprovalAllowedOnce), ""),
			want:  fail(`tool "note" requires approval, but the call has no agent to route it through`, nil),
		},
		{
			name:  "approval granted",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`, SessionID: "s1"},
			setup: askSetup(approve(core.ApprovalAllowedOnce), ""),
			want:  outcome{Text: noteText, Value: noteValue, Meta: noteMetaJ, Posted: true},
		},
		{
			name:  "approval rejected",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`, SessionID: "s1"},
			setup: askSetup(approve(core.ApprovalRejected), ""),
			want:  fail(`the user rejected tool "note"`, nil),
		},
		{
			name:  "approval cancelled while the caller is not",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`, SessionID: "s1"},
			setup: askSetup(approve(core.ApprovalCancelled), ""),
			want:  fail(`approval for tool "note" was cancelled`, nil),
		},
		{
			name:  "approval unavailable",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`, SessionID: "s1"},
			setup: askSetup(approve(core.ApprovalUnavailable), ""),
			want:  fail(`tool "note" requires approval, but no approval channel is available`, nil),
		},
		{
			name:  "approval rejected with the decider's note",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`, SessionID: "s1"},
			setup: askSetup(answer(core.ApprovalRejected, "use the wiki instead"), ""),
			want:  fail(`the user rejected tool "note": use the wiki instead`, nil),
		},
		{
			name:  "approval cancelled by a timeout",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`, SessionID: "s1"},
			setup: askSetup(answer(core.ApprovalCancelled, "nobody decided within 5m0s"), ""),
			want:  fail(`approval for tool "note" was cancelled: nobody decided within 5m0s`, nil),
		},
		{
			name:  "an outcome outside the vocabulary is unavailable",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`, SessionID: "s1"},
			setup: askSetup(approve("maybe"), ""),
			want:  fail(`tool "note" requires approval, but no approval channel is available`, nil),
		},
		{
			name: "the approver sees the call",
			call: core.Call{CallID: "c9", Name: "note", RawArguments: `{"title":"Demo"}`, SessionID: "s1"},
			setup: func(t *testing.T, reg *core.Registry, cancel context.CancelFunc) {
				askSetup(approverFunc(func(_ context.Context, r core.ApprovalRequest) (core.ApprovalAnswer, error) {
					want := core.ApprovalRequest{SessionID: "s1", ToolName: "note", CallID: "c9", Reason: "notes are reviewed", RawArguments: `{"title":"Demo"}`}
					if r != want {
						t.Errorf("approval request = %+v, want %+v", r, want)
					}
					return core.ApprovalAnswer{Outcome: core.ApprovalAllowedOnce}, nil
				}), "notes are reviewed")(t, reg, cancel)
			},
			want: outcome{Text: noteText, Value: noteValue, Meta: noteMetaJ, Posted: true},
		},
		{
			name: "the approver fails",
			call: core.Call{Name: "note", RawArguments: `{"title":"Demo"}`, SessionID: "s1"},
			setup: askSetup(approverFunc(func(context.Context, core.ApprovalRequest) (core.ApprovalAnswer, error) {
				return core.ApprovalAnswer{}, errors.New("approval service requires an open turn")
			}), ""),
			want: noPost(fail("approval service requires an open turn", nil)),
		},
		{
			name: "caller cancelled during approval",
			call: core.Call{Name: "note", RawArguments: `{"title":"Demo"}`, SessionID: "s1"},
			setup: func(t *testing.T, reg *core.Registry, cancel context.CancelFunc) {
				askSetup(approverFunc(func(context.Context, core.ApprovalRequest) (core.ApprovalAnswer, error) {
					cancel()
					return core.ApprovalAnswer{Outcome: core.ApprovalCancelled}, nil
				}), "")(t, reg, cancel)
			},
			want: fail("tool call aborted before dispatch", info("AbortError", "ABORTED_BEFORE_DISPATCH")),
		},
		{
			name:      "caller already cancelled on entry",
			call:      core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			precancel: true,
			want:      noPost(fail("tool call aborted before dispatch", info("AbortError", "ABORTED_BEFORE_DISPATCH"))),
		},
		{
			name: "caller cancelled after allow, before dispatch",
			call: core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: func(t *testing.T, reg *core.Registry, cancel context.CancelFunc) {
				reg.UsePreExecute(func(ctx context.Context, e *core.Execution, next func() (core.PreDecision, error)) (core.PreDecision, error) {
					cancel()
					return next()
				})
			},
			want: fail("tool call aborted before dispatch", info("AbortError", "ABORTED_BEFORE_DISPATCH")),
		},
		{
			name:  "caller cancelled while the body runs",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: func(t *testing.T, reg *core.Registry, cancel context.CancelFunc) { cancelCaller = cancel },
			tool: func(ctx context.Context, a noteArgs, _ *core.Run) (note, error) {
				cancelCaller()
				<-ctx.Done() // cooperative: the body sees the caller's cancellation
				return note{Title: a.Title, Lines: []string{}}, nil
			},
			want: fail("tool call aborted", info("AbortError", "ABORTED")),
		},
		{
			name:  "a tool failure is kept when the caller cancels",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: func(t *testing.T, reg *core.Registry, cancel context.CancelFunc) { cancelCaller = cancel },
			tool: func(ctx context.Context, a noteArgs, _ *core.Run) (note, error) {
				cancelCaller()
				<-ctx.Done()
				return note{}, core.NewError("FsError", "FS_BUSY", "busy")
			},
			want: fail("busy", info("FsError", "FS_BUSY")),
		},
		{
			name: "execute middleware error is final",
			call: core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: func(t *testing.T, reg *core.Registry, _ context.CancelFunc) {
				reg.UseExecute(func(ctx context.Context, e *core.Execution, next func(context.Context) core.Result) (core.Result, error) {
					return nil, errors.New("rate limiter broken")
				})
			},
			want: noPost(fail("rate limiter broken", nil)),
		},
		{
			name:  "post-execute block",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: postSetup(core.Block(core.Content{&core.TextBlock{Text: "no"}, &core.ReasoningBlock{Text: "why"}})),
			want:  outcome{IsError: true, Text: "no", Message: "no\n[reasoning content]", Posted: true},
		},
		{
			name:  "post-execute block with empty feedback",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: postSetup(core.Block(core.Content{})),
			want:  outcome{IsError: true, Message: "tool result blocked by post-execute policy", Posted: true},
		},
		{
			name:  "post-execute value replacement on a failure",
			call:  core.Call{Name: "nope", RawArguments: `{}`},
			setup: postSetup(core.ReplaceValue(note{Title: "y", Lines: []string{}})),
			want:  fail("tools/post-execute cannot replace the value of a failed result", nil),
		},
		{
			name:  "post-execute replacement value invalid",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: postSetup(core.ReplaceValue(map[string]any{"title": 1})),
			want: fail(`tool "note" returned invalid output: missing required property "value.lines"; "value.title" must be a string`,
				info("ToolOutputError", "INVALID_TOOL_OUTPUT")),
		},
		{
			name: "post-execute hook error",
			call: core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: func(t *testing.T, reg *core.Registry, _ context.CancelFunc) {
				reg.UsePostExecute(func(context.Context, *core.Execution, core.Result, func() (core.PostDecision, error)) (core.PostDecision, error) {
					return core.PostDecision{}, core.NewError("HookError", "HOOK_FAILED", "hook exited 2")
				})
			},
			want: fail("hook exited 2", info("HookError", "HOOK_FAILED")),
		},
		{
			name:  "result not lossless at materialization",
			call:  core.Call{Name: "note", RawArguments: `{"title":"Demo"}`},
			setup: postSetup(core.ReplaceContent(core.Content{&core.UnknownBlock{Type: "x", Raw: json.RawMessage(`{"type":"x","n":-0}`)}})),
			want:  fail("tool result must be losslessly JSON-serializable", nil),
		},
		{
			name: "timeout",
			call: core.Call{Name: "slow", RawArguments: `{}`},
			setup: func(t *testing.T, reg *core.Registry, _ context.CancelFunc) {
				reg.MustRegister(slowTool(t, 20*time.Millisecond))
			},
			want: fail("tool call timed out after 20ms", info("ToolTimeoutError", "TOOL_TIMEOUT")),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := core.NewRegistry(nil)
			reg.MustRegister(noteTool(tt.tool))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The outermost post hook records whether post-execute ran.
			posted := false
			reg.UsePostExecute(func(_ context.Context, _ *core.Execution, _ core.Result, next func() (core.PostDecision, error)) (core.PostDecision, error) {
				posted = true
				return next()
			})
			if tt.setup != nil {
				tt.setup(t, reg, cancel)
			}
			if tt.precancel {
				cancel()
			}
			got := summarize(reg.Execute(ctx, tt.call), posted)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Execute(%s %q) mismatch (-want +got):\n%s", tt.call.Name, tt.call.RawArguments, diff)
			}
		})
	}
}

func approve(o core.ApprovalOutcome) core.Approver { return answer(o, "") }

func answer(o core.ApprovalOutcome, detail string) core.Approver {
	return approverFunc(func(context.Context, core.ApprovalRequest) (core.ApprovalAnswer, error) {
		return core.ApprovalAnswer{Outcome: o, Detail: detail}, nil
	})
}

func askSetup(a core.Approver, reason string) func(*testing.T, *core.Registry, context.CancelFunc) {
	return func(t *testing.T, reg *core.Registry, _ context.CancelFunc) {
		if a != nil {
			reg.SetApprover(a)
		}
		reg.UsePreExecute(func(context.Context, *core.Execution, func() (core.PreDecision, error)) (core.PreDecision, error) {
			return core.Ask(reason), nil
		})
	}
}

func postSetup(d core.PostDecision) func(*testing.T, *core.Registry, context.CancelFunc) {
	return func(t *testing.T, reg *core.Registry, _ context.CancelFunc) {
		reg.UsePostExecute(func(context.Context, *core.Execution, core.Result, func() (core.PostDecision, error)) (core.PostDecision, error) {
			return d, nil
		})
	}
}

// slowTool waits for its context: only the timeout ends it.
func slowTool(t *testing.T, timeout time.Duration) *core.Tool {
	t.Helper()
	return core.MustDefine(core.Definition[struct{}, string]{
		Name:    "slow",
		Timeout: timeout,
		Output: core.Output[struct{}, string]{
			Schema: `{"type":"string"}`,
			Render: func(_ struct{}, v string) (core.Content, error) { return core.Text(v), nil },
		},
		Execute: func(ctx context.Context, _ struct{}, _ *core.Run) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		},
	})
}

// TestPostExecuteDecisions checks dsh's post-execute decisions: what each decision keeps of
// value, meta, error and contexts, including the tool's deferred contexts.
func TestPostExecuteDecisions(t *testing.T) {
	deferring := func(ctx context.Context, a noteArgs, run *core.Run) (note, error) {
		run.DeferContext(ctxMsg("deferred"))
		return note{Title: a.Title, Lines: []string{"line one", "line two"}}, nil
	}
	tests := []struct {
		name     string
		decision core.PostDecision
		tool     func(context.Context, noteArgs, *core.Run) (note, error)
		call     string
		want     outcome
	}{
		{
			name:     "plain accept combines deferred and decision contexts",
			decision: core.Accept().WithContexts(ctxMsg("hook")),
			want:     outcome{Text: noteText, Value: noteValue, Meta: noteMetaJ, Contexts: []string{"deferred", "hook"}, Posted: true},
		},
		{
			name:     "content replacement keeps value and meta",
			decision: core.ReplaceContent(core.Text("redacted")).WithContexts(ctxMsg("hook")),
			want:     outcome{Text: "redacted", Value: noteValue, Meta: noteMetaJ, Contexts: []string{"deferred", "hook"}, Posted: true},
		},
		{
			name:     "value replacement re-renders and recomputes meta",
			decision: core.ReplaceValue(note{Title: "R", Lines: []string{"x"}}).WithContexts(ctxMsg("hook")),
			want: outcome{Text: "# R\n- x", Value: `{"title":"R","lines":["x"]}`, Meta: `{"lineCount":1,"title":"R"}`,
				Contexts: []string{"deferred", "hook"}, Posted: true},
		},
		{
			name:     "block drops value, meta and deferred contexts",
			decision: core.Block(core.Text("blocked")).WithContexts(ctxMsg("hook")),
			want:     outcome{IsError: true, Text: "blocked", Message: "blocked", Contexts: []string{"hook"}, Posted: true},
		},
		{
			name:     "content replacement on a failure rewrites the text but stays failed",
			decision: core.ReplaceContent(core.Text("try again later")),
			tool: func(ctx context.Context, a noteArgs, run *core.Run) (note, error) {
				run.DeferContext(ctxMsg("deferred"))
				return note{}, core.NewError("FsError", "FS_BUSY", "busy")
			},
			want: outcome{IsError: true, Text: "try again later", Message: "busy", Info: info("FsError", "FS_BUSY"),
				Contexts: []string{"deferred"}, Posted: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := core.NewRegistry(nil)
			tool := tt.tool
			if tool == nil {
				tool = deferring
			}
			reg.MustRegister(noteTool(tool))
			postSetup(tt.decision)(t, reg, nil)
			got := summarize(reg.Execute(context.Background(), core.Call{Name: "note", RawArguments: `{"title":"Demo"}`}), true)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decision mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPostExecuteComposition checks middleware order: the first registered
// hook is outermost and only the outermost decision applies.
func TestPostExecuteComposition(t *testing.T) {
	reg := core.NewRegistry(nil)
	reg.MustRegister(noteTool(nil))
	var order []string
	reg.UsePostExecute(func(_ context.Context, _ *core.Execution, _ core.Result, next func() (core.PostDecision, error)) (core.PostDecision, error) {
		order = append(order, "outer:before")
		d, err := next()
		order = append(order, "outer:after")
		// Add a context onto whatever the inner hooks decided, even a block.
		return d.WithContexts(ctxMsg("outer")), err
	})
	reg.UsePostExecute(func(_ context.Context, _ *core.Execution, _ core.Result, next func() (core.PostDecision, error)) (core.PostDecision, error) {
		order = append(order, "inner")
		return core.Block(core.Text("inner blocks")), nil
	})
	reg.UsePostExecute(func(context.Context, *core.Execution, core.Result, func() (core.PostDecision, error)) (core.PostDecision, error) {
		t.Error("the innermost hook ran although the inner hook short-circuited")
		return core.Accept(), nil
	})
	got := summarize(reg.Execute(context.Background(), core.Call{Name: "note", RawArguments: `{"title":"Demo"}`}), true)
	want := outcome{IsError: true, Text: "inner blocks", Message: "inner blocks", Contexts: []string{"outer"}, Posted: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("composed result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"outer:before", "inner", "outer:after"}, order); diff != "" {
		t.Errorf("hook order (-want +got):\n%s", diff)
	}
}

// TestConcludeTurn checks that concludeTurn marks only successes.
func TestConcludeTurn(t *testing.T) {
	reg := core.NewRegistry(nil)
	reg.MustRegister(noteTool(func(ctx context.Context, a noteArgs, run *core.Run) (note, error) {
		run.ConcludeTurn()
		if a.Title == "fail" {
			return note{}, errors.New("failed")
		}
		return note{Title: a.Title, Lines: []string{}}, nil
	}))
	ok := reg.Execute(context.Background(), core.Call{Name: "note", RawArguments: `{"title":"x"}`})
	if s, isS := ok.(*core.Success); !isS || !s.ConcludesTurn {
		t.Errorf("success after ConcludeTurn = %#v, want ConcludesTurn", ok)
	}
	failed := reg.Execute(context.Background(), core.Call{Name: "note", RawArguments: `{"title":"fail"}`})
	if _, isF := failed.(*core.Failure); !isF {
		t.Errorf("failure after ConcludeTurn = %T, want *core.Failure (which cannot conclude a turn)", failed)
	}
}

// TestStagedExecutionMatchesExecute drives the stages separately, as the
// agent loop does, and compares with Execute.
func TestStagedExecutionMatchesExecute(t *testing.T) {
	reg := core.NewRegistry(nil)
	reg.MustRegister(noteTool(nil))
	call := core.Call{CallID: "c1", Name: "note", RawArguments: `{"title":"Demo"}`}
	p := reg.Prepare(context.Background(), call)
	if !p.NeedsDispatch() {
		t.Fatal("Prepare of an allowed call does not need dispatch")
	}
	p.Dispatch(context.Background())
	staged := p.Complete(context.Background())
	direct := reg.Execute(context.Background(), call)
	a, _ := json.Marshal(staged)
	b, _ := json.Marshal(direct)
	if string(a) != string(b) {
		t.Errorf("staged = %s, direct = %s", a, b)
	}
	if again := p.Complete(context.Background()); again != staged {
		t.Error("Complete is not idempotent")
	}
}

// TestExecutionModeAndPresenters checks the soft, never-failing classifiers.
func TestExecutionModeAndPresenters(t *testing.T) {
	reg := core.NewRegistry(nil)
	reg.MustRegister(core.MustDefine(core.Definition[noteArgs, string]{
		Name:       "par",
		Parameters: `{"title":{"type":"string","required":true}}`,
		Output: core.Output[noteArgs, string]{Schema: `{"type":"string"}`,
			Render: func(noteArgs, string) (core.Content, error) { return nil, nil }},
		Execute:           func(context.Context, noteArgs, *core.Run) (string, error) { return "", nil },
		IsConcurrencySafe: func(a noteArgs) bool { return a.Title != "exclusive" },
		PresentCall: func(a noteArgs) core.CallView {
			if a.Title == "panic" {
				panic("presenter bug")
			}
			return &core.TerminalCallView{Title: a.Title}
		},
	}))
	if m := reg.ExecutionMode("par", map[string]any{"title": "x"}); m != core.Parallel {
		t.Errorf("mode(valid) = %v, want Parallel", m)
	}
	for _, args := range []any{map[string]any{"title": "exclusive"}, map[string]any{}, "raw", nil} {
		if m := reg.ExecutionMode("par", args); m != core.Exclusive {
			t.Errorf("mode(%v) = %v, want Exclusive", args, m)
		}
	}
	if m := reg.ExecutionMode("nope", map[string]any{}); m != core.Exclusive {
		t.Errorf("mode(unknown tool) = %v, want Exclusive", m)
	}
	if v, ok := reg.PresentCall("par", `{"title":"ls"}`).(*core.TerminalCallView); !ok || v.Title != "ls" {
		t.Errorf("PresentCall(valid) = %#v, want the terminal view", v)
	}
	for _, raw := range []string{`{"title":"panic"}`, `{"title":1}`, `not json`} {
		v, ok := reg.PresentCall("par", raw).(*core.GenericCallView)
		if !ok || v.Title != "par" {
			t.Errorf("PresentCall(%q) = %#v, want the generic fallback titled with the tool name", raw, v)
		}
	}
	// Arguments that parse only lossily (1e400 is +Inf) fall back to the
	// raw text, so the view still encodes.
	for _, name := range []string{"par", "nope"} {
		raw := `{"title":1e400}`
		v, ok := reg.PresentCall(name, raw).(*core.GenericCallView)
		if !ok || v.RawInput != raw {
			t.Errorf("PresentCall(%s, %s) = %#v, want the generic view with the raw text", name, raw, v)
		}
		if _, err := json.Marshal(v); err != nil {
			t.Errorf("the fallback view does not encode: %v", err)
		}
	}
	if v, ok := reg.PresentResult("nope", `{}`, core.ToolResult{Content: core.Text("x")}).(*core.GenericResultView); !ok || v.Content.PlainText() != "x" {
		t.Errorf("PresentResult(unknown) = %#v, want generic with the raw content", v)
	}
}

// TestDefineRefusesInvalidDefinitions checks registration-time refusals.
func TestDefineRefusesInvalidDefinitions(t *testing.T) {
	render := func(struct{}, string) (core.Content, error) { return nil, nil }
	exec := func(context.Context, struct{}, *core.Run) (string, error) { return "", nil }
	tests := []struct {
		name string
		def  core.Definition[struct{}, string]
		want string
	}{
		{"no render", core.Definition[struct{}, string]{Name: "t", Execute: exec, Output: core.Output[struct{}, string]{Schema: `{"type":"string"}`}},
			`tool "t" must declare output { schema, render, presentationMeta? }`},
		{"negative timeout", core.Definition[struct{}, string]{Name: "t", Execute: exec, Timeout: -time.Second,
			Output: core.Output[struct{}, string]{Schema: `{"type":"string"}`, Render: render}},
			"defineTool(t): timeoutMs must be a positive finite number"},
		{"required not true", core.Definition[struct{}, string]{Name: "t", Execute: exec, Parameters: `{"a":{"type":"string","required":false}}`,
			Output: core.Output[struct{}, string]{Schema: `{"type":"string"}`, Render: render}},
			`unsupported JSON schema: parameters.a.required must be true when present`},
		{"unsupported output keyword", core.Definition[struct{}, string]{Name: "t", Execute: exec,
			Output: core.Output[struct{}, string]{Schema: `{"type":"string","format":"date"}`, Render: render}},
			`schema.format is not supported by the value schema DSL`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := core.Define(tt.def)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Define error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	reg := core.NewRegistry(nil)
	reg.MustRegister(noteTool(nil))
	if err := reg.Register(noteTool(nil)); err == nil || !strings.Contains(err.Error(), `tool "note" is already registered`) {
		t.Errorf("duplicate Register error = %v", err)
	}
}

// TestArgumentKeysAreCaseSensitive checks that a key the schema saw as
// undeclared can't reach a declared field through encoding/json's
// case-insensitive matching: the body and the presenter see the validated
// value, never the alias.
func TestArgumentKeysAreCaseSensitive(t *testing.T) {
	type modeArgs struct {
		Mode  string `json:"mode"`
		Inner struct {
			Path string `json:"path"`
		} `json:"inner"`
	}
	var seen []modeArgs
	reg := core.NewRegistry(nil)
	reg.MustRegister(core.MustDefine(core.Definition[modeArgs, string]{
		Name: "mode",
		Parameters: `{"mode": {"type": "string", "enum": ["safe"]},
			"inner": {"type": "object", "additionalProperties": true, "properties": {"path": {"type": "string", "enum": ["ok"]}}}}`,
		Output: core.Output[modeArgs, string]{Schema: `{"type":"string"}`,
			Render: func(_ modeArgs, v string) (core.Content, error) { return core.Text(v), nil }},
		Execute: func(_ context.Context, a modeArgs, _ *core.Run) (string, error) {
			seen = append(seen, a)
			return a.Mode + "|" + a.Inner.Path, nil
		},
		PresentCall: func(a modeArgs) core.CallView { return &core.TerminalCallView{Title: a.Mode + "|" + a.Inner.Path} },
	}))
	for _, raw := range []string{
		`{"MODE":"rm -rf"}`,
		`{"mode":"safe","Mode":"rm -rf"}`,
		`{"Mode":"rm -rf","mode":"safe"}`,
		`{"inner":{"PATH":"/etc"}}`,
	} {
		seen = nil
		res := reg.Execute(context.Background(), core.Call{Name: "mode", RawArguments: raw})
		if res.IsError() {
			t.Fatalf("Execute(%s) failed: %s", raw, res.Projection().Content.PlainText())
		}
		got := res.Projection().Content.PlainText()
		if strings.Contains(got, "rm") || strings.Contains(got, "/etc") {
			t.Errorf("Execute(%s): the body saw %q through a case alias", raw, got)
		}
		if v := reg.PresentCall("mode", raw).(*core.TerminalCallView); strings.Contains(v.Title, "rm") || strings.Contains(v.Title, "/etc") {
			t.Errorf("PresentCall(%s) = %q: the card shows a case alias", raw, v.Title)
		}
	}
}
