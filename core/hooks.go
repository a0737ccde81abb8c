package core

import "context"

// PreKind is the kind of a pre-execute decision.
type PreKind int

// Pre-execute decision kinds.
const (
	PreAllow PreKind = iota
	PreDeny
	PreAsk
)

// PreDecision is a pre-execute verdict: allow, deny with a reason, or ask
// for approval (with an optional reason). There is deliberately no input
// rewrite: the arguments are already logged and presented.
type PreDecision struct {
	Kind   PreKind
	Reason string
}

// Allow lets the call run.
func Allow() PreDecision { return PreDecision{Kind: PreAllow} }

// Deny refuses the call; the model sees "Error: <reason>".
func Deny(reason string) PreDecision { return PreDecision{Kind: PreDeny, Reason: reason} }

// Ask routes the call to the approver; an empty reason uses dsh's default text.
func Ask(reason string) PreDecision { return PreDecision{Kind: PreAsk, Reason: reason} }

// PostKind is the kind of a post-execute decision.
type PostKind int

// Post-execute decision kinds. A kind the pipeline does not know is an
// accept, as in dsh.
const (
	// PostAccept keeps the result (its contexts may grow).
	PostAccept PostKind = iota
	// PostBlock turns the result into a failure whose content is the
	// feedback, verbatim.
	PostBlock
	// PostReplaceContent keeps the result but replaces its model-facing
	// content (allowed on failures too, which stay failures).
	PostReplaceContent
	// PostReplaceValue replaces the canonical value of a successful result;
	// it is re-validated, re-rendered and re-projected.
	PostReplaceValue
)

// PostDecision is a post-execute verdict (dsh's PostToolDecision). Build
// one with Accept, ReplaceContent, ReplaceValue or Block; the zero value is
// a plain accept. Its fields are unexported so that a decision cannot say
// one thing and carry another (content without the flag that applies it,
// or both a content and a value): each constructor makes exactly one kind.
type PostDecision struct {
	kind     PostKind
	content  Content // ReplaceContent's content, Block's feedback
	value    any     // ReplaceValue's value
	contexts []Message
}

// DecisionOption adjusts a decision as it is made.
type DecisionOption func(*PostDecision)

// WithContexts attaches additional contexts (user messages for the model's
// next request) to a decision: Accept(WithContexts(m)).
func WithContexts(contexts ...Message) DecisionOption {
	return func(d *PostDecision) { d.contexts = append(d.contexts, contexts...) }
}

func decide(d PostDecision, opts []DecisionOption) PostDecision {
	if len(opts) == 0 {
		return d // no option: d stays on the stack (applyOptions takes its address)
	}
	return applyOptions(d, opts)
}

func applyOptions(d PostDecision, opts []DecisionOption) PostDecision {
	for _, o := range opts {
		o(&d)
	}
	return d
}

// Accept keeps the result as it is.
func Accept(opts ...DecisionOption) PostDecision { return decide(PostDecision{}, opts) }

// ReplaceContent keeps the result but replaces its model-facing content. On
// a failure it rewrites the error text; the result stays failed. Content
// replacement is not a confidentiality boundary: the value survives for
// in-process callers (use Block or ReplaceValue to hide data).
func ReplaceContent(c Content, opts ...DecisionOption) PostDecision {
	if c == nil {
		c = Content{}
	}
	return decide(PostDecision{kind: PostReplaceContent, content: c}, opts)
}

// ReplaceValue replaces the canonical value of a successful result; the
// value is re-validated against the tool's output schema, re-rendered and
// re-projected. On a failed result the call fails with dsh's TypeError text.
func ReplaceValue(v any, opts ...DecisionOption) PostDecision {
	return decide(PostDecision{kind: PostReplaceValue, value: v}, opts)
}

// Block turns the result into a failure whose content is feedback,
// verbatim (no "Error: " prefix). Value, meta and the contexts the tool
// deferred are dropped; only the decision's own contexts remain.
func Block(feedback Content, opts ...DecisionOption) PostDecision {
	if feedback == nil {
		feedback = Content{}
	}
	return decide(PostDecision{kind: PostBlock, content: feedback}, opts)
}

// Kind returns the decision's kind.
func (d PostDecision) Kind() PostKind { return d.kind }

// Content returns the replacement content of a ReplaceContent decision.
func (d PostDecision) Content() (Content, bool) {
	return d.content, d.kind == PostReplaceContent
}

// Value returns the replacement value of a ReplaceValue decision.
func (d PostDecision) Value() (any, bool) { return d.value, d.kind == PostReplaceValue }

// Feedback returns the feedback of a Block decision.
func (d PostDecision) Feedback() (Content, bool) { return d.content, d.kind == PostBlock }

// Contexts returns the decision's additional contexts.
func (d PostDecision) Contexts() []Message { return d.contexts }

// WithContexts returns d with contexts appended to its own; a hook that
// called next uses it to add its context to the downstream decision,
// whatever its kind.
func (d PostDecision) WithContexts(contexts ...Message) PostDecision {
	d.contexts = append(append([]Message(nil), d.contexts...), contexts...)
	return d
}

// PrependContexts returns d with contexts placed before its own (dsh's
// hook bridges put their context ahead of the downstream decision's).
func (d PostDecision) PrependContexts(contexts ...Message) PostDecision {
	d.contexts = append(append([]Message(nil), contexts...), d.contexts...)
	return d
}

// PreExecuteHook is middleware around the pre-execute decision. It may
// return its own decision without calling next, or call next and return,
// change or replace the downstream decision. The innermost next allows.
// An error (or a panic) fails the call and skips post-execute.
type PreExecuteHook func(ctx context.Context, exec *Execution, next func() (PreDecision, error)) (PreDecision, error)

// ExecuteHook is middleware around dispatch (timeouts, retries, metrics). It
// may pass a derived context to next (the caller's cancellation is always
// fused back in before the body runs) and may author its own result. An
// error fails the call and skips post-execute.
type ExecuteHook func(ctx context.Context, exec *Execution, next func(ctx context.Context) Result) (Result, error)

// PostExecuteHook is middleware around the post-execute decision. result is
// the pre-decision result (a *Success still carries its value). The
// innermost next accepts. Only the outermost returned decision applies.
type PostExecuteHook func(ctx context.Context, exec *Execution, result Result, next func() (PostDecision, error)) (PostDecision, error)

// Guard is a monotonic check run after pre-execute allows: deny=true refuses
// the call with reason, and nothing can undo a guard's denial.
type Guard func(exec *Execution) (reason string, deny bool)

// ResultObserver observes each final result. It cannot change it; a panic
// is logged and contained.
type ResultObserver func(exec *Execution, result Result)

// ApprovalOutcome is an approver's answer.
type ApprovalOutcome string

// Approval outcomes; only AllowedOnce grants.
const (
	ApprovalAllowedOnce ApprovalOutcome = "allowed-once"
	ApprovalRejected    ApprovalOutcome = "rejected"
	ApprovalCancelled   ApprovalOutcome = "cancelled"
	ApprovalUnavailable ApprovalOutcome = "unavailable"
)

// Valid reports whether o is one of the four outcomes.
func (o ApprovalOutcome) Valid() bool {
	switch o {
	case ApprovalAllowedOnce, ApprovalRejected, ApprovalCancelled, ApprovalUnavailable:
		return true
	}
	return false
}

// ApprovalRequest asks whether one call may run.
type ApprovalRequest struct {
	SessionID string
	ToolName  string
	CallID    string
	// Reason is the ask decision's reason ("" = none given).
	Reason string
	// RawArguments are the call's arguments as the model wrote them.
	RawArguments string
}

// ApprovalAnswer is an approver's outcome, with an optional detail that
// the failure text of a non-grant carries after dsh's text (for example
// the decider's note, or why nobody decided): `the user rejected tool
// "bash": not on main`.
type ApprovalAnswer struct {
	Outcome ApprovalOutcome
	Detail  string
}

// Approver answers "ask" decisions. An outcome outside the vocabulary
// counts as unavailable; an error fails the call (post-execute is skipped).
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error)
}
