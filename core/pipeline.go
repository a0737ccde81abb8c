package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"prism/core/logkey"
)

// Call is one tool invocation as its caller supplies it (dsh's
// ToolExecutionInput).
type Call struct {
	CallID string
	// RootCallID is the root model call of a nested execution ("" = CallID).
	RootCallID string
	Name       string
	// RawArguments is the model's argument string as logged. When Arguments
	// is nil it is parsed like dsh's loop: "" is {}, invalid JSON stays the
	// raw string (and a defined tool then refuses it).
	RawArguments string
	// Arguments are parsed arguments for in-process callers: a generic JSON
	// tree (map[string]any, []any, float64, string, bool, nil).
	Arguments any
	// SessionID and Cwd identify the calling session; empty for an
	// agent-less call.
	SessionID string
	Cwd       string
	// Parent is the enclosing execution of a nested call.
	Parent *Execution
	// Emit appends a tool-owned event to the calling session, if any.
	Emit func(ctx context.Context, typ string, data any) error
}

// Execution is a call inside the pipeline, as hooks see it. Treat it as
// read-only.
type Execution struct {
	CallID       string
	RootCallID   string
	Name         string
	Arguments    any // lossless parsed arguments (unvalidated before dispatch)
	RawArguments string
	SessionID    string
	Cwd          string
	Parent       *Execution
}

// Run is the context handed to a tool body (dsh's ToolRunContext):
// the execution plus deferContext and concludeTurn. Cancellation is the
// body's ctx.
type Run struct {
	*Execution
	emit func(ctx context.Context, typ string, data any) error

	mu        sync.Mutex
	deferred  []Message
	concludes bool
}

// DeferContext attaches a context message to this call's result; it reaches
// the model after the tool/result, survives a failure or a cancellation,
// and is dropped by a post-execute block.
func (r *Run) DeferContext(m Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deferred = append(r.deferred, m)
}

// ConcludeTurn marks a successful result as ending the agent turn after its
// batch commits.
func (r *Run) ConcludeTurn() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.concludes = true
}

// Emit appends a tool-owned event (for example todo/write) to the calling
// session; it lands between the call's tool/call and tool/result.
func (r *Run) Emit(ctx context.Context, typ string, data any) error {
	if r.emit == nil {
		return Errorf(CodeUnavailable, "tool %q: the call has no session to append %s to", r.Name, typ)
	}
	return r.emit(ctx, typ, data)
}

func (r *Run) takeDeferred() ([]Message, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deferred, r.concludes
}

// stage is what a pending call needs next.
type stage int

const (
	stageDispatch stage = iota // run execute wrappers and the body
	stagePost                  // run post-execute, then finish
	stageFinal                 // finish only (post-execute bypassed)
	stageDone
)

// Pending is one call between the pipeline's stages. The agent loop drives
// the stages separately so pre- and post-execute stay in model order while
// dispatch overlaps; Registry.Execute chains them.
type Pending struct {
	reg    *Registry
	hooks  hooks
	caller context.Context // the caller's cancellation
	exec   *Execution      // points at execution
	run    *Run            // points at runCtx

	execution Execution
	runCtx    Run
	stage     stage
	result    Result
	// bodyInvoked records whether the tool body started.
	bodyInvoked bool
	// canonical holds results the registry built or normalized for this
	// call; anything else returned by middleware is re-normalized.
	canonical []Result
	canonBuf  [2]Result
	// finalize is the tool's FinalizeContent, captured when the call started.
	finalize FinalizeFunc
	final    Result
}

// Execute runs one call through the whole pipeline and returns its final,
// lossless result. It never returns nil and never panics on a tool's or a
// hook's behalf.
func (r *Registry) Execute(ctx context.Context, call Call) Result {
	p := r.Prepare(ctx, call)
	if p.NeedsDispatch() {
		p.Dispatch(ctx)
	}
	return p.Complete(ctx)
}

// Prepare materializes the call and runs the ordered stages before dispatch:
// the pre-execute middleware, approval, and guards. ctx is the caller's
// cancellation for the whole call.
func (r *Registry) Prepare(ctx context.Context, call Call) *Pending {
	p := &Pending{reg: r, caller: ctx}
	p.hooks, p.finalize = r.snapshot(call.Name)
	p.canonical = p.canonBuf[:0]
	p.execution = Execution{
		CallID:       call.CallID,
		RootCallID:   call.RootCallID,
		Name:         call.Name,
		RawArguments: call.RawArguments,
		SessionID:    call.SessionID,
		Cwd:          call.Cwd,
		Parent:       call.Parent,
	}
	exec := &p.execution
	if exec.RootCallID == "" {
		exec.RootCallID = exec.CallID
	}
	p.exec = exec
	p.runCtx.Execution, p.runCtx.emit = exec, call.Emit
	p.run = &p.runCtx
	args := call.Arguments
	if args == nil {
		args = ParseArguments(call.RawArguments)
	} else {
		exec.RawArguments = ""
	}
	if !IsLossless(args) {
		return p.finalResult(errorResult(errors.New("tool execution arguments must be losslessly JSON-serializable")))
	}
	exec.Arguments = args
	if ctx.Err() != nil {
		return p.finalResult(abortedBeforeDispatch(nil))
	}
	decision, approvalCancelled, err := p.decide(ctx)
	if err != nil {
		return p.finalResult(errorResult(err))
	}
	if approvalCancelled && ctx.Err() != nil {
		return p.postResult(abortedBeforeDispatch(nil))
	}
	var reason string
	denied := false
	if decision.Kind == PreAllow {
		reason, denied, err = p.guardReason()
		if err != nil {
			return p.finalResult(errorResult(err))
		}
	} else {
		reason, denied = decision.Reason, true
	}
	if denied {
		return p.postResult(&Failure{Error: ToolFailure{Message: reason}, Content: Text("Error: " + reason)})
	}
	if ctx.Err() != nil {
		return p.postResult(abortedBeforeDispatch(nil))
	}
	p.stage = stageDispatch
	return p
}

// decide runs the pre-execute waterfall and resolves "ask" through the
// approver, returning an allow or deny decision.
func (p *Pending) decide(ctx context.Context) (d PreDecision, approvalCancelled bool, err error) {
	hs := p.hooks.pre
	if len(hs) == 0 && p.hooks.approver == nil {
		return Allow(), false, nil
	}
	var next func(i int) (PreDecision, error)
	next = func(i int) (PreDecision, error) {
		if i == len(hs) {
			return Allow(), nil
		}
		return callPre(ctx, hs[i], p.exec, func() (PreDecision, error) { return next(i + 1) })
	}
	d, err = next(0)
	if err != nil {
		return d, false, err
	}
	switch d.Kind {
	case PreAllow, PreDeny:
		return d, false, nil
	case PreAsk:
	default:
		return d, false, fmt.Errorf("tools/pre-execute returned an unknown decision kind %d", d.Kind)
	}
	name := p.exec.Name
	if p.hooks.approver == nil {
		reason := d.Reason
		if reason == "" {
			reason = fmt.Sprintf("tool %q requires approval (not yet supported)", name)
		}
		return Deny(reason), false, nil
	}
	if p.exec.SessionID == "" {
		return Deny(fmt.Sprintf("tool %q requires approval, but the call has no agent to route it through", name)), false, nil
	}
	answer, err := callApprover(ctx, p.hooks.approver, ApprovalRequest{
		SessionID: p.exec.SessionID, ToolName: name, CallID: p.exec.CallID, Reason: d.Reason,
		RawArguments: p.exec.RawArguments,
	})
	if err != nil {
		return d, false, err
	}
	withDetail := func(text string) string {
		if answer.Detail != "" {
			return text + ": " + answer.Detail
		}
		return text
	}
	switch answer.Outcome {
	case ApprovalAllowedOnce:
		return Allow(), false, nil
	case ApprovalRejected:
		return Deny(withDetail(fmt.Sprintf("the user rejected tool %q", name))), false, nil
	case ApprovalCancelled:
		return Deny(withDetail(fmt.Sprintf("approval for tool %q was cancelled", name))), true, nil
	default:
		return Deny(withDetail(fmt.Sprintf("tool %q requires approval, but no approval channel is available", name))), false, nil
	}
}

func (p *Pending) guardReason() (reason string, deny bool, err error) {
	for _, g := range p.hooks.guards {
		err = protect(func() error {
			reason, deny = g(p.exec)
			return nil
		})
		if err != nil || deny {
			return reason, deny, err
		}
	}
	return "", false, nil
}

func (p *Pending) finalResult(r Result) *Pending {
	p.stage, p.result = stageFinal, r
	return p
}

func (p *Pending) postResult(r Result) *Pending {
	p.stage, p.result = stagePost, r
	return p
}

// Execution returns the call as the pipeline sees it.
func (p *Pending) Execution() *Execution { return p.exec }

// NeedsDispatch reports whether the call was allowed and its body should run.
func (p *Pending) NeedsDispatch() bool { return p.stage == stageDispatch }

// Dispatch runs the around-dispatch middleware and the tool body (with the
// tool's timeout, if any). Only this stage may overlap with other calls.
// The caller's cancellation is the ctx given to Prepare.
func (p *Pending) Dispatch(ctx context.Context) {
	if p.stage != stageDispatch {
		return
	}
	hs := p.hooks.wrap
	if len(hs) == 0 {
		p.settleDispatch(p.dispatchBody(ctx))
		return
	}
	var wrapErr error // the first failing middleware fails the whole call
	var next func(i int, ctx context.Context) Result
	next = func(i int, ctx context.Context) Result {
		if i == len(hs) {
			return p.dispatchBody(ctx)
		}
		var r Result
		err := protect(func() error {
			var err error
			r, err = hs[i](ctx, p.exec, func(c context.Context) Result { return next(i+1, c) })
			return err
		})
		if err == nil && r == nil {
			err = errors.New("tools/execute middleware returned no result")
		}
		if err != nil {
			if wrapErr == nil {
				wrapErr = err
			}
			return errorResult(err)
		}
		return r
	}
	result := next(0, ctx)
	if wrapErr != nil {
		// A failing middleware is final: post-execute is skipped and contexts
		// the body deferred are lost.
		p.finalResult(errorResult(wrapErr))
		return
	}
	p.settleDispatch(result)
}

// settleDispatch normalizes the dispatch result, prepends the contexts the
// body deferred, and applies the caller's cancellation to a success.
func (p *Pending) settleDispatch(result Result) {
	normalized, err := p.normalize(result)
	if err != nil {
		p.finalResult(errorResult(err))
		return
	}
	if deferred, _ := p.run.takeDeferred(); len(deferred) > 0 {
		normalized = withContexts(normalized, append(append([]Message(nil), deferred...), normalized.Contexts()...))
	}
	if p.caller.Err() != nil && !normalized.IsError() {
		normalized = p.cancellation(normalized)
	}
	p.postResult(normalized)
}

// dispatchBody is the innermost dispatch step: fuse the caller's
// cancellation into the wrapper's context, re-resolve the tool, run the
// body under the tool's timeout and build the success result.
func (p *Pending) dispatchBody(wrapperCtx context.Context) Result {
	ctx := wrapperCtx
	if ctx != p.caller {
		// A middleware replaced the context: fuse the caller's cancellation
		// back in so it can never be detached from the body.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(wrapperCtx)
		defer cancel()
		defer context.AfterFunc(p.caller, cancel)()
	}
	if ctx.Err() != nil {
		return p.mark(abortedBeforeDispatch(nil))
	}
	tool, ok := p.reg.Get(p.exec.Name)
	if !ok {
		return p.mark(errorResult(toolNotFound(p.exec.Name)))
	}
	if tool.timeout <= 0 {
		return p.runBody(ctx, tool)
	}
	tctx, tcancel := context.WithTimeout(ctx, tool.timeout)
	defer tcancel()
	r := p.runBody(tctx, tool)
	if errors.Is(context.Cause(tctx), context.DeadlineExceeded) && ctx.Err() == nil {
		ms := tool.timeout.Milliseconds()
		return p.mark(&Failure{
			Error: ToolFailure{
				Message: fmt.Sprintf("tool call timed out after %dms", ms),
				Info:    &ErrorInfo{Name: "ToolTimeoutError", Code: CodeToolTimeout},
			},
			Content: Text(fmt.Sprintf("Error: tool call timed out after %dms", ms)),
		})
	}
	return r
}

func (p *Pending) runBody(ctx context.Context, tool *Tool) Result {
	args, err := tool.impl.decodeArgs(p.exec)
	p.bodyInvoked = true // dsh counts argument validation as part of the body
	if err != nil {
		return p.mark(errorResult(err))
	}
	var value any
	err = protect(func() error {
		var err error
		value, err = tool.impl.execute(ctx, args, p.run)
		return err
	})
	if err != nil {
		return p.mark(errorResult(err))
	}
	s, err := p.success(tool, args, value, nil)
	if err != nil {
		return p.mark(errorResult(err))
	}
	if ctx.Err() != nil {
		return p.mark(aborted(s))
	}
	return s
}

// success snapshots, validates, renders and projects one successful value
// (dsh's createSuccessResult). raw is the value's JSON when it is already
// known (a replacement); value is then decoded from it.
func (p *Pending) success(tool *Tool, args, value any, raw json.RawMessage) (*Success, error) {
	name := tool.name
	data, err := snapshotValue(value)
	if err != nil {
		return nil, outputError(name, err.Error())
	}
	// A valid value is recognised from its snapshot's text; the generic
	// tree is built only to word violations, or for a raw tool (whose
	// projections see it).
	var tree any
	if tool.raw || !tool.output.ValidJSON(data) {
		if err := json.Unmarshal(data, &tree); err != nil {
			return nil, outputError(name, "value snapshot failed: "+err.Error())
		}
		if v := tool.output.Validate(tree, "value"); len(v) > 0 {
			return nil, outputError(name, v...)
		}
	}
	switch {
	case tool.raw:
		value = tree // a raw tool's projections see the snapshot's tree
	case raw != nil:
		if value, err = tool.impl.decodeValue(data); err != nil {
			return nil, outputError(name, "value snapshot failed: "+err.Error())
		}
	}
	var content Content
	if err := protect(func() error {
		var err error
		content, err = tool.impl.render(args, value)
		return err
	}); err != nil {
		return nil, outputError(name, "output.render failed: "+err.Error())
	}
	if checkContent(content) != nil {
		return nil, outputError(name, "output.render returned non-lossless JSON")
	}
	if content == nil {
		content = Content{}
	}
	s := &Success{Value: data, Content: content}
	if p.exec.Parent == nil {
		var m any
		var has bool
		if err := protect(func() error {
			var err error
			m, has, err = tool.impl.meta(args, value)
			return err
		}); err != nil {
			return nil, outputError(name, "output.presentationMeta failed: "+err.Error())
		}
		if has {
			if s.Meta, err = Snapshot(m); err != nil {
				return nil, outputError(name, "output.presentationMeta returned non-lossless JSON")
			}
		}
	}
	if _, concludes := p.run.takeDeferred(); concludes {
		s.ConcludesTurn = true
	}
	p.canonical = append(p.canonical, s)
	return s, nil
}

// snapshotValue is Snapshot with dsh's two output-error wordings.
func snapshotValue(v any) (json.RawMessage, error) {
	data, err := Snapshot(v)
	if err == nil {
		return data, nil
	}
	var me *json.MarshalerError
	if errors.As(err, &me) {
		return nil, fmt.Errorf("value snapshot failed: %v", me.Unwrap())
	}
	return nil, errors.New("value is not lossless JSON")
}

// normalize passes a result the registry built for this call through
// unchanged, re-wraps a middleware-authored failure, and re-validates and
// re-renders a middleware-authored success from its value.
func (p *Pending) normalize(r Result) (Result, error) {
	if slices.Contains(p.canonical, r) {
		return r, nil
	}
	switch x := r.(type) {
	case *Failure:
		f := *x
		return p.mark(&f), nil
	case *Success:
		tool, args, err := p.resolve()
		if err != nil {
			return nil, err
		}
		s, err := p.success(tool, args, json.RawMessage(x.Value), x.Value)
		if err != nil {
			return nil, err
		}
		s.AdditionalContexts = x.AdditionalContexts
		return s, nil
	default:
		return nil, fmt.Errorf("tools/execute middleware returned an unknown result type %T", r)
	}
}

func (p *Pending) mark(r Result) Result {
	p.canonical = append(p.canonical, r)
	return r
}

// cancellation is the result that replaces a success once the caller
// cancelled: ABORTED after the body started, ABORTED_BEFORE_DISPATCH before.
func (p *Pending) cancellation(prior Result) Result {
	if p.bodyInvoked {
		return aborted(prior)
	}
	return abortedBeforeDispatch(prior)
}

// Complete runs post-execute (unless bypassed), materializes the final
// result, notifies observers and returns it. It is idempotent.
func (p *Pending) Complete(ctx context.Context) Result {
	switch p.stage {
	case stageDone:
		return p.final
	case stageDispatch:
		p.Dispatch(ctx)
	}
	r := p.result
	if p.stage == stagePost {
		post, err := p.postExecute(ctx, r)
		switch {
		case err != nil:
			r = errorResult(err)
		case p.caller.Err() != nil && !post.IsError():
			r = p.cancellation(post)
		default:
			r = post
		}
	}
	r = materialize(r)
	if p.finalize != nil {
		r = p.finalizeContent(r)
	}
	p.stage, p.final = stageDone, r
	p.notify(r)
	return r
}

// materialize is the lossless check of a result about to become final.
func materialize(r Result) Result {
	if err := checkResult(r); err != nil {
		return errorResult(errors.New("tool result must be losslessly JSON-serializable"))
	}
	return r
}

// finalizeContent applies the captured FinalizeContent once to the
// materialized result: nil keeps the content, anything else replaces only
// the content; a panic or a non-lossless content fails the call.
func (p *Pending) finalizeContent(r Result) Result {
	var c Content
	if err := protect(func() error { c = p.finalize(p.exec, r); return nil }); err != nil {
		return errorResult(err)
	}
	if c == nil {
		return r
	}
	return materialize(withContent(r, c, r.Contexts()))
}

// Result returns the final result once Complete has run, else nil.
func (p *Pending) Result() Result { return p.final }

func (p *Pending) postExecute(ctx context.Context, result Result) (Result, error) {
	d, err := p.postHook(ctx, result, 0)
	if err != nil {
		return nil, err
	}
	return p.apply(d, result)
}

// postHook runs post-execute hook i, whose next runs hook i+1; past the
// last hook the decision is Accept.
func (p *Pending) postHook(ctx context.Context, result Result, i int) (PostDecision, error) {
	hs := p.hooks.post
	if i == len(hs) {
		return Accept(), nil
	}
	next := func() (PostDecision, error) { return p.postHook(ctx, result, i+1) }
	var d PostDecision
	err := protect(func() error {
		var err error
		d, err = hs[i](ctx, p.exec, result, next)
		return err
	})
	return d, err
}

// apply applies the outermost post-execute decision to the pre-decision
// result (dsh-spec §2.5). A kind it does not know is an accept.
func (p *Pending) apply(d PostDecision, result Result) (Result, error) {
	switch d.kind {
	case PostBlock:
		return &Failure{
			Error:              ToolFailure{Message: failureMessage(d.content)},
			Content:            d.content,
			AdditionalContexts: nonEmpty(d.contexts),
		}, nil
	case PostReplaceValue:
		if result.IsError() {
			return nil, errors.New("tools/post-execute cannot replace the value of a failed result")
		}
		s, err := p.replaceValue(d.value)
		if err != nil {
			return nil, err
		}
		s.AdditionalContexts = mergeContexts(result, d.contexts)
		return s, nil
	case PostReplaceContent:
		return withContent(result, d.content, mergeContexts(result, d.contexts)), nil
	}
	if len(d.contexts) == 0 {
		return result, nil // a plain accept keeps the result as it is
	}
	return withContexts(result, mergeContexts(result, d.contexts)), nil
}

// replaceValue re-resolves the tool and builds the success of a
// replacement value: re-validated, re-rendered, meta recomputed.
func (p *Pending) replaceValue(v any) (*Success, error) {
	tool, args, err := p.resolve()
	if err != nil {
		return nil, err
	}
	raw, err := snapshotValue(v)
	if err != nil {
		return nil, outputError(tool.name, err.Error())
	}
	return p.success(tool, args, raw, raw)
}

// resolve re-resolves the call's tool and decodes its arguments, for a
// value authored outside the body (a middleware's success, a replacement).
func (p *Pending) resolve() (*Tool, any, error) {
	tool, ok := p.reg.Get(p.exec.Name)
	if !ok {
		return nil, nil, toolNotFound(p.exec.Name)
	}
	args, err := tool.impl.decodeArgs(p.exec)
	if err != nil {
		return nil, nil, err
	}
	return tool, args, nil
}

// mergeContexts is the result's contexts followed by a decision's.
func mergeContexts(r Result, decision []Message) []Message {
	return append(append([]Message(nil), r.Contexts()...), decision...)
}

func (p *Pending) notify(r Result) {
	for _, o := range p.hooks.observers {
		if err := protect(func() error { o(p.exec, r); return nil }); err != nil {
			p.reg.logger.Warn("tools/result observer failed",
				logkey.Tool, p.exec.Name, logkey.CallID, p.exec.CallID, logkey.Err, err)
		}
	}
}

// failureMessage derives a blocked result's message from its feedback.
func failureMessage(c Content) string {
	parts := make([]string, len(c))
	for i, b := range c {
		if t, ok := b.(*TextBlock); ok {
			parts[i] = t.Text
		} else {
			parts[i] = "[" + b.BlockType() + " content]"
		}
	}
	if s := strings.Join(parts, "\n"); s != "" {
		return s
	}
	return "tool result blocked by post-execute policy"
}

func nonEmpty(m []Message) []Message {
	if len(m) == 0 {
		return nil
	}
	return m
}

func withContexts(r Result, contexts []Message) Result {
	switch x := r.(type) {
	case *Success:
		s := *x
		s.AdditionalContexts = nonEmpty(contexts)
		return &s
	case *Failure:
		f := *x
		f.AdditionalContexts = nonEmpty(contexts)
		return &f
	}
	return r
}

// withContent returns a copy of r with its content (and contexts) replaced;
// everything else — isError, error, value, meta, concludesTurn — is kept.
func withContent(r Result, c Content, contexts []Message) Result {
	switch x := withContexts(r, contexts).(type) {
	case *Success:
		x.Content = c
		return x
	case *Failure:
		x.Content = c
		return x
	}
	return r
}

// NewFailure is dsh's toolErrorResult, for execute middleware that authors
// its own failure: the content is "Error: <message>", the message is
// err.Error() and the durable {name, code} is that of the first Coded error
// in err's chain (none for a plain error). A nil err is reported as an
// unknown failure rather than panicking.
func NewFailure(err error) *Failure {
	if err == nil {
		err = errors.New("tool call failed")
	}
	msg := err.Error()
	return &Failure{Error: ToolFailure{Message: msg, Info: infoOf(err)}, Content: Text("Error: " + msg)}
}

func errorResult(err error) *Failure { return NewFailure(err) }

func toolNotFound(name string) error {
	return &Error{Name: "ToolNotFoundError", Code: CodeUnknownTool, Message: fmt.Sprintf("unknown tool %q", name)}
}

func outputError(tool string, violations ...string) error {
	return &Error{Name: "ToolOutputError", Code: CodeInvalidToolOutput,
		Message: fmt.Sprintf("tool %q returned invalid output: %s", tool, strings.Join(violations, "; "))}
}

func aborted(prior Result) *Failure {
	return cancelled(prior, "tool call aborted", CodeAborted)
}

func abortedBeforeDispatch(prior Result) *Failure {
	return cancelled(prior, "tool call aborted before dispatch", CodeAbortedBeforeDispatch)
}

// cancelled is a cancellation failure (dsh's AbortError) keeping the
// contexts of the result it replaces.
func cancelled(prior Result, msg, code string) *Failure {
	f := &Failure{
		Error:   ToolFailure{Message: msg, Info: &ErrorInfo{Name: "AbortError", Code: code}},
		Content: Text("Error: " + msg),
	}
	if prior != nil {
		f.AdditionalContexts = nonEmpty(prior.Contexts())
	}
	return f
}

// AbortedBeforeDispatch returns the canonical result of a call that the
// caller cancelled before its body ran, for synthetic results the loop
// writes without running the pipeline.
func AbortedBeforeDispatch() *Failure { return abortedBeforeDispatch(nil) }

// checkResult is the materialization check: every part of the result must
// be lossless JSON.
func checkResult(r Result) error {
	if r == nil {
		return errors.New("no result")
	}
	if err := checkRaw(r.Projection().Meta); err != nil {
		return err
	}
	if err := checkContent(r.Projection().Content); err != nil {
		return err
	}
	return checkMessages(r.Contexts())
}

func checkRaw(m json.RawMessage) error {
	if m == nil {
		return nil
	}
	return CheckJSON(m)
}

func checkMessages(ms []Message) error {
	for _, m := range ms {
		if err := checkContent(m.Content); err != nil {
			return err
		}
	}
	return nil
}

// checkContent verifies content blocks are lossless: typed blocks are by
// construction; unknown blocks must hold lossless JSON objects.
func checkContent(c Content) error {
	for _, b := range c {
		switch x := b.(type) {
		case nil:
			return errors.New("nil content block")
		case *UnknownBlock:
			if err := CheckJSON(x.Raw); err != nil {
				return err
			}
		case *ToolResultBlock:
			if err := checkContent(x.Content); err != nil {
				return err
			}
		}
	}
	return nil
}

// protect runs f, turning a panic into an error.
func protect(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError(v)
		}
	}()
	return f()
}

func panicError(v any) error {
	if err, ok := v.(error); ok {
		return err
	}
	return fmt.Errorf("%v", v)
}

func callPre(ctx context.Context, h PreExecuteHook, exec *Execution, next func() (PreDecision, error)) (d PreDecision, err error) {
	err = protect(func() error {
		var err error
		d, err = h(ctx, exec, next)
		return err
	})
	return d, err
}

func callApprover(ctx context.Context, a Approver, req ApprovalRequest) (ans ApprovalAnswer, err error) {
	err = protect(func() error {
		var err error
		ans, err = a.Approve(ctx, req)
		return err
	})
	return ans, err
}
