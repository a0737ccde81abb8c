package approval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"prism/core"
	"prism/core/logkey"
)

// Sessions finds the running session a call belongs to; *agent.Runner
// implements it.
type Sessions interface {
	Session(id string) (*core.Session, error)
}

// Config configures a Service.
type Config struct {
	// Sessions finds the session of each request. Required.
	Sessions Sessions
	// Timeout bounds the wait for a person (0 = until a decision or the
	// end of the turn). An approval nobody decides in time is cancelled.
	Timeout time.Duration
	// Policy is the approval policy of a session whose log has no
	// approval/policy event: core.ApprovalPolicyAsk ("" means ask) or
	// core.ApprovalPolicyNever.
	Policy string
	// Remember is how many decided approvals the service keeps, so that a
	// late second decision learns who made the first (default 1024).
	Remember int
	// Logger receives the service's logs; nil discards them.
	Logger *slog.Logger
}

// Reasons of the outcomes no person chose, as approval/decided records them
// and the model reads them after dsh's failure text.
const (
	ReasonTurnCancelled = "the turn was cancelled"
	ReasonPolicyNever   = "the session's approval policy is never"
	ReasonClosed        = "the server stopped taking decisions"
)

// TimeoutReason is the reason of an approval nobody decided within d.
func TimeoutReason(d time.Duration) string {
	return "nobody decided within " + d.String()
}

// Pending is an approval waiting for a person.
type Pending struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionId"`
	CallID    string `json:"callId,omitempty"`
	ToolName  string `json:"toolName"`
	Reason    string `json:"reason,omitempty"`
	// Arguments are the call's arguments as the model wrote them.
	Arguments string `json:"arguments"`
	// Seq and AskedAt are the approval/asked event's seq and time (epoch ms).
	Seq     int64 `json:"seq"`
	AskedAt int64 `json:"askedAt"`
}

// Decision is a person's answer to a pending approval.
type Decision struct {
	// Approve grants the call once; false rejects it.
	Approve bool
	// Note is the decider's words; on a rejection the model reads them
	// after dsh's text.
	Note string
	// By names the decider as far as the caller knows them (the owner, a
	// browser page, an API client).
	By string
}

// Decided is how an approval was decided.
type Decided struct {
	core.ApprovalDecided
	SessionID string `json:"sessionId"`
	// At is the time of its approval/decided event (epoch ms); until that
	// is appended, when the decision was taken.
	At int64 `json:"at"`
}

// Describe says who decided what, for a second decider: "approved by the
// owner at 14:02:11 UTC", "cancelled (the turn was cancelled) at …".
func (d Decided) Describe() string {
	what := map[core.ApprovalOutcome]string{core.ApprovalAllowedOnce: "approved", core.ApprovalRejected: "rejected",
		core.ApprovalCancelled: "cancelled", core.ApprovalUnavailable: "unavailable"}[d.Outcome]
	if what == "" {
		what = string(d.Outcome)
	}
	if d.By != "" {
		what += " by " + d.By
	}
	if d.Reason != "" {
		what += " (" + d.Reason + ")"
	}
	if d.At > 0 {
		what += " at " + time.UnixMilli(d.At).UTC().Format("15:04:05 UTC")
	}
	return what
}

// AlreadyDecidedError refuses a decision on an approval that was decided.
type AlreadyDecidedError struct{ Decided Decided }

func (e *AlreadyDecidedError) Error() string {
	return fmt.Sprintf("approval %s was already decided: %s", e.Decided.ID, e.Decided.Describe())
}

// ErrorName implements core.Coded.
func (e *AlreadyDecidedError) ErrorName() string { return "AlreadyDecidedError" }

// ErrorCode implements core.Coded: a conflict.
func (e *AlreadyDecidedError) ErrorCode() string { return core.CodeConflict }

// Service is prism's approval channel (dsh's user-approval service). It
// implements core.Approver: each ask is logged as approval/asked, waits for
// a Decide (or a cancelled turn, the timeout, the session policy never, or
// Close), is logged as approval/decided, and answers the pipeline. The
// first decision wins; a later one gets an *AlreadyDecidedError naming the
// first. It is safe for concurrent use.
type Service struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	closed   bool
	pending  map[key]*waiter
	order    []key           // pending, in asking order
	decided  map[key]*waiter // decided, kept for later deciders
	remember []key           // decided, oldest first
}

type key struct{ session, id string }

// waiter is one approval between its asking and its logged decision.
type waiter struct {
	p        Pending
	asked    chan struct{} // closed once the approval/asked append returned
	decided  chan struct{} // closed when d is set
	d        Decided
	logged   chan struct{} // closed once approval/decided is appended (or failed)
	logErr   error
	answered bool // guarded by Service.mu
	listed   bool // approval/asked is logged; guarded by Service.mu
}

// NewService returns a service over cfg.
func NewService(cfg Config) (*Service, error) {
	if cfg.Sessions == nil {
		return nil, errors.New("approval service: no sessions")
	}
	switch cfg.Policy {
	case "":
		cfg.Policy = core.ApprovalPolicyAsk
	case core.ApprovalPolicyAsk, core.ApprovalPolicyNever:
	default:
		return nil, fmt.Errorf("approval service: policy %q is neither %q nor %q", cfg.Policy, core.ApprovalPolicyAsk, core.ApprovalPolicyNever)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("approval service: negative timeout %v", cfg.Timeout)
	}
	if cfg.Remember <= 0 {
		cfg.Remember = 1024
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, log: log, pending: map[key]*waiter{}, decided: map[key]*waiter{}}, nil
}

// Approve implements core.Approver: it logs approval/asked, decides as dsh
// does — an already cancelled turn gives cancelled, the session policy
// never gives rejected, otherwise it waits for Decide, the turn's
// cancellation (cancelled), the timeout (cancelled) or Close (unavailable)
// — logs approval/decided and returns the outcome. It fails (and the call
// fails without running) when the session is unknown, has no open turn, or
// the log refuses an append.
func (s *Service) Approve(ctx context.Context, req core.ApprovalRequest) (core.ApprovalAnswer, error) {
	sess, err := s.cfg.Sessions.Session(req.SessionID)
	if err != nil {
		return core.ApprovalAnswer{}, fmt.Errorf("approval service: %w", err)
	}
	policy, open := s.stateOf(sess.Events())
	if !open {
		return core.ApprovalAnswer{}, fmt.Errorf("approval service: session %s has no open turn to ask in", req.SessionID)
	}
	w := &waiter{
		p: Pending{ID: core.NewID(), SessionID: req.SessionID, CallID: req.CallID, ToolName: req.ToolName,
			Reason: req.Reason, Arguments: req.RawArguments},
		asked:   make(chan struct{}),
		decided: make(chan struct{}),
		logged:  make(chan struct{}),
	}
	k := key{req.SessionID, w.p.ID}
	log := s.log.With(logkey.SessionID, req.SessionID, logkey.CallID, req.CallID, logkey.Approval, w.p.ID)
	// The waiter is registered before approval/asked is appended: whoever
	// sees the event may decide at once. Pending lists it once logged.
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.pending[k] = w
		s.order = append(s.order, k)
	}
	s.mu.Unlock()
	// Logs land even when the turn is being cancelled.
	lctx := context.WithoutCancel(ctx)
	asked, err := sess.Append(lctx, core.EventApprovalAsked, core.ApprovalAsked{
		ID: w.p.ID, ToolName: req.ToolName, CallID: req.CallID, Reason: req.Reason}, core.AppendOptions{})
	if err == nil {
		// The person must see the waiting call (its tool/call and
		// approval/asked reach pages only once committed) before anyone
		// can decide it, however long the wait: commit now rather than at
		// the session's next durability point.
		err = sess.Sync(lctx)
	}
	s.mu.Lock()
	if err != nil {
		// Nothing was asked: forget the approval, and fail a decision
		// that raced the append.
		s.drop(k)
		delete(s.decided, k)
		s.mu.Unlock()
		close(w.asked)
		w.logErr = err
		close(w.logged)
		return core.ApprovalAnswer{}, fmt.Errorf("approval service: %w", err)
	}
	w.p.Seq, w.p.AskedAt, w.listed = asked.Seq, asked.Time, true
	switch {
	case closed:
		s.settle(k, w, core.ApprovalDecided{Outcome: core.ApprovalUnavailable, Reason: ReasonClosed})
	case ctx.Err() != nil:
		s.settle(k, w, core.ApprovalDecided{Outcome: core.ApprovalCancelled, Reason: ReasonTurnCancelled})
	case policy == core.ApprovalPolicyNever:
		s.settle(k, w, core.ApprovalDecided{Outcome: core.ApprovalRejected, Reason: ReasonPolicyNever})
	}
	s.mu.Unlock()
	close(w.asked)
	log.Info("approval asked", logkey.Tool, req.ToolName)
	s.wait(ctx, k, w)

	d := w.d
	e, err := sess.Append(lctx, core.EventApprovalDecided, d.ApprovalDecided, core.AppendOptions{})
	if err == nil {
		// The decision's time is its event's, as the log will tell it.
		s.mu.Lock()
		w.d.At = e.Time
		s.mu.Unlock()
		// A decision is a durability point: its decider is answered, and
		// the call runs, only once it is committed — an approval whose
		// commit fails (the store is unreachable) is an error to its
		// decider, and the call does not run.
		err = sess.Sync(lctx)
	}
	w.logErr = err
	close(w.logged)
	if err != nil {
		return core.ApprovalAnswer{}, fmt.Errorf("approval service: %w", err)
	}
	log.Info("approval decided", logkey.Outcome, string(d.Outcome), logkey.By, d.By)
	answer := core.ApprovalAnswer{Outcome: d.Outcome, Detail: d.Reason}
	if d.Outcome == core.ApprovalRejected && d.Note != "" {
		answer.Detail = d.Note
	}
	return answer, nil
}

// wait blocks until w is decided: by Decide, the turn's cancellation, the
// timeout or Close.
func (s *Service) wait(ctx context.Context, k key, w *waiter) {
	var timeout <-chan time.Time
	if s.cfg.Timeout > 0 {
		t := time.NewTimer(s.cfg.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var auto core.ApprovalDecided
	select {
	case <-w.decided:
		return
	case <-ctx.Done():
		auto = core.ApprovalDecided{Outcome: core.ApprovalCancelled, Reason: ReasonTurnCancelled}
	case <-timeout:
		auto = core.ApprovalDecided{Outcome: core.ApprovalCancelled, Reason: TimeoutReason(s.cfg.Timeout)}
	}
	s.mu.Lock()
	s.settle(k, w, auto) // a no-op when a decision got there first
	s.mu.Unlock()
}

// settle decides w with d unless it is decided already; s.mu is held. The
// approval leaves the pending set and is remembered as decided.
func (s *Service) settle(k key, w *waiter, d core.ApprovalDecided) {
	if w.answered {
		return
	}
	w.answered = true
	d.ID = w.p.ID
	w.d = Decided{ApprovalDecided: d, SessionID: k.session, At: time.Now().UnixMilli()}
	close(w.decided)
	s.drop(k)
	s.decided[k] = w
	s.remember = append(s.remember, k)
	if len(s.remember) > s.cfg.Remember {
		delete(s.decided, s.remember[0])
		s.remember = s.remember[1:]
	}
}

// drop removes k from the pending set; s.mu is held.
func (s *Service) drop(k key) {
	if _, ok := s.pending[k]; ok {
		delete(s.pending, k)
		s.order = slices.DeleteFunc(s.order, func(x key) bool { return x == k })
	}
}

// Decide answers a pending approval of session sessionID and returns once
// the decision is committed to the log (durable); a decision whose commit
// failed is an error wrapping the store's (its code kept). It fails with
// an *AlreadyDecidedError when the approval was decided (by a person, the
// turn's end, the timeout…), and with core.CodeNotFound when the service has never seen it waiting —
// an approval of a session this server does not run, or one decided so
// long ago that only the log knows.
func (s *Service) Decide(ctx context.Context, sessionID, approvalID string, d Decision) (Decided, error) {
	k := key{sessionID, approvalID}
	s.mu.Lock()
	w, ok := s.pending[k]
	if !ok {
		prev, known := s.decided[k]
		s.mu.Unlock()
		if known {
			// The first decision as the log tells it (its event's time):
			// wait for its logging, as its own decider does.
			select {
			case <-prev.logged:
			case <-ctx.Done():
				return Decided{}, fmt.Errorf("approval %s: already decided; its logging was not awaited: %w", approvalID, ctx.Err())
			}
			s.mu.Lock()
			d := prev.d
			s.mu.Unlock()
			return Decided{}, &AlreadyDecidedError{Decided: d}
		}
		return Decided{}, core.Errorf(core.CodeNotFound, "session %s has no approval %s waiting on this server", sessionID, approvalID)
	}
	out := core.ApprovalDecided{Outcome: core.ApprovalRejected, By: d.By, Note: d.Note}
	if d.Approve {
		out.Outcome = core.ApprovalAllowedOnce
	}
	s.settle(k, w, out)
	s.mu.Unlock()
	select {
	case <-w.logged:
	case <-ctx.Done():
		return Decided{}, fmt.Errorf("approval %s: the decision was taken; its logging was not awaited: %w", approvalID, ctx.Err())
	}
	if w.logErr != nil {
		return w.d, fmt.Errorf("approval %s: the decision was taken but not logged: %w", approvalID, w.logErr)
	}
	return w.d, nil
}

// Pending returns the approvals waiting now, across sessions, oldest
// first. An approval whose approval/asked is being appended is waited for,
// so whoever has seen the event finds it here.
func (s *Service) Pending() []Pending {
	s.mu.Lock()
	ws := make([]*waiter, 0, len(s.order))
	for _, k := range s.order {
		ws = append(ws, s.pending[k])
	}
	s.mu.Unlock()
	out := make([]Pending, 0, len(ws))
	for _, w := range ws {
		<-w.asked
		s.mu.Lock()
		if w.listed && !w.answered {
			out = append(out, w.p)
		}
		s.mu.Unlock()
	}
	return out
}

// SetPolicy appends approval/policy to a running session: from then on its
// asks wait for a person (ask) or are rejected without asking (never).
// Approvals already waiting keep waiting: the policy is read when a call
// asks, as dsh does.
func (s *Service) SetPolicy(ctx context.Context, sessionID, policy string) error {
	if policy != core.ApprovalPolicyAsk && policy != core.ApprovalPolicyNever {
		return core.Errorf(core.CodeInvalid, "approval policy must be %q or %q, got %q", core.ApprovalPolicyAsk, core.ApprovalPolicyNever, policy)
	}
	sess, err := s.cfg.Sessions.Session(sessionID)
	if err != nil {
		return err
	}
	if _, err := sess.Append(ctx, core.EventApprovalPolicy, core.ApprovalPolicyData{Policy: policy}, core.AppendOptions{}); err != nil {
		return fmt.Errorf("approval policy of session %s: %w", sessionID, err)
	}
	s.log.Info("approval policy set", logkey.SessionID, sessionID, logkey.Policy, policy)
	return nil
}

// Close stops taking decisions: every pending approval, and every later
// ask, is answered unavailable (dsh: no approval channel is available).
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, k := range slices.Clone(s.order) {
		s.settle(k, s.pending[k], core.ApprovalDecided{Outcome: core.ApprovalUnavailable, Reason: ReasonClosed})
	}
}

// stateOf reads a log's approval policy (its latest approval/policy, else
// the configured default) and whether its last turn is open.
func (s *Service) stateOf(events []core.Event) (policy string, open bool) {
	policy = ""
	turnSeen := false
	for i := len(events) - 1; i >= 0 && (policy == "" || !turnSeen); i-- {
		e := &events[i]
		switch e.Type {
		case core.EventTurnStart:
			if !turnSeen {
				turnSeen, open = true, true
			}
		case core.EventTurnEnd:
			turnSeen = true
		case core.EventApprovalPolicy:
			if policy == "" {
				var d core.ApprovalPolicyData
				if e.DecodeData(&d) == nil && (d.Policy == core.ApprovalPolicyAsk || d.Policy == core.ApprovalPolicyNever) {
					policy = d.Policy
				}
			}
		}
	}
	if policy == "" {
		policy = s.cfg.Policy
	}
	return policy, open
}
