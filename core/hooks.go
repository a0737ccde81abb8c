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

// Post-execute decision kinds.
const (
	PostAccept PostKind = iota
	PostBlock
)

// PostDecision is a post-execute verdict (dsh's PostToolDecision): accept
// the result (optionally replacing its content, or its value — never both),
// or block it, turning Feedback into the error content the model sees. Any
// decision may attach AdditionalContexts for the next request.
type PostDecision struct {
	Kind PostKind
	// ReplaceContent replaces only the content (allowed on failures too).
	ReplaceContent bool
	Content        Content
	// ReplaceValue replaces the canonical value, which is re-validated,
	// re-rendered and re-projected (successes only).
	ReplaceValue bool
	Value        any
	// Feedback is the content of a blocked result, verbatim.
	Feedback           Content
	AdditionalContexts []Message
}

// Accept keeps the result as it is.
func Accept() PostDecision { return PostDecision{} }

// AcceptContent keeps the result but replaces its model-facing content.
func AcceptContent(c Content) PostDecision {
	return PostDecision{ReplaceContent: true, Content: c}
}

// AcceptValue replaces the canonical value of a successful result.
func AcceptValue(v any) PostDecision { return PostDecision{ReplaceValue: true, Value: v} }

// Block turns the result into a failure whose content is feedback.
func Block(feedback Content) PostDecision { return PostDecision{Kind: PostBlock, Feedback: feedback} }

// WithContexts returns d with contexts appended to its AdditionalContexts.
func (d PostDecision) WithContexts(contexts ...Message) PostDecision {
	d.AdditionalContexts = append(append([]Message(nil), d.AdditionalContexts...), contexts...)
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

// ApprovalRequest asks whether one call may run.
type ApprovalRequest struct {
	SessionID string
	ToolName  string
	CallID    string
	Reason    string
}

// Approver answers "ask" decisions. An error fails the call.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (ApprovalOutcome, error)
}
