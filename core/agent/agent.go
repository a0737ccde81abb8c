// Package agent runs an agent over a session log: the turn/step loop with
// DeepSeek Harness's event order, the tool-call scheduler (parallel-safe
// calls in a bounded pool, exclusive calls as barriers, pre- and
// post-execute in model order), cooperative cancellation, and the Runner
// that owns the running sessions of a server.
//
// The event order of one turn (dsh's):
//
//	turn/start
//	step/start  user/message…  [request/header] [request/context]
//	assistant/chunk…  assistant/message (sourceEventSeqs = the chunks)
//	tool/call (when each call starts)  [tool-owned events]  tool/result (in model order, citing its call)
//	step/end
//	step/start  user/message(additional contexts)…  …  step/end
//	turn/end{reason}
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"prism/core"
	"prism/core/logkey"
	"prism/core/model"
)

// Defaults of Config.
const (
	DefaultMaxParallel   = 10 // dsh's DEFAULT_MAX_PARALLEL_TOOL_CALLS
	DefaultMaxSteps      = 100
	DefaultChunkInterval = 40 * time.Millisecond
	DefaultChunkBytes    = 2048
)

// CodeMaxSteps is the LLMFailure code of a turn stopped by the max-steps guard.
const CodeMaxSteps = "MAX_STEPS"

// Cancel causes (core.CancelCause.Kind), as dsh's AgentCancelCause.
const (
	CauseUser     = "user"
	CauseParent   = "parent"
	CauseHook     = "hook"
	CauseDisposed = "disposed"
)

// CancelError is a turn cancellation cause. Cancel a turn's context with
// context.WithCancelCause and a *CancelError to record why; a plain
// cancellation is recorded as {kind: user}.
type CancelError struct {
	Cause core.CancelCause
}

// Error describes the cancellation.
func (e *CancelError) Error() string {
	if e.Cause.Reason != "" {
		return fmt.Sprintf("turn cancelled (%s: %s)", e.Cause.Kind, e.Cause.Reason)
	}
	return fmt.Sprintf("turn cancelled (%s)", e.Cause.Kind)
}

// Cancel returns a *CancelError of the given kind.
func Cancel(kind string) error { return &CancelError{Cause: core.CancelCause{Kind: kind}} }

// Config configures an Agent.
type Config struct {
	// Session is the log the agent runs over. Required.
	Session *core.Session
	// Tools is the registry calls run through. Required.
	Tools *core.Registry
	// Model streams the assistant's responses. Required.
	Model model.Model
	// System is the system prompt.
	System string
	// MaxParallel bounds the parallel pool (0 = DefaultMaxParallel).
	MaxParallel int
	// MaxSteps bounds the steps of one turn (0 = DefaultMaxSteps); a turn
	// that still wants to continue ends with turn/end{error, MAX_STEPS}.
	MaxSteps int
	// MaxTokens caps each response (0 = the model's default).
	MaxTokens int64
	// ChunkInterval and ChunkBytes bound the coalescing of consecutive
	// deltas of one block into one assistant/chunk event (0 = defaults;
	// a negative ChunkBytes appends every chunk as it comes).
	ChunkInterval time.Duration
	ChunkBytes    int
	// Logger receives the loop's logs; nil means slog.Default().
	Logger *slog.Logger
	// Replay, when set, answers the calls that repeat a fork's source
	// with the source's recorded results instead of running them (a fork's
	// tools "replay"); nil runs every call.
	Replay *Replayer
	// OnReplayed is told of each replayed call once its tool/result is
	// appended (not yet committed: wait with Session.WaitDurable before
	// writing about it). It must not block.
	OnReplayed func(Replayed)
}

// Replayed is one call of a fork answered with its source's recorded
// result.
type Replayed struct {
	CallID    string
	CallSeq   int64 // the fork's tool/call
	ResultSeq int64 // the fork's tool/result
	Source    string
	SourceSeq int64 // the source's tool/call
}

// Agent runs turns over one session. Turns are serialized: a Turn waits
// for the previous one to return. An Agent is safe for concurrent use.
type Agent struct {
	cfg    Config
	sess   *core.Session
	logger *slog.Logger

	mu           sync.Mutex // held for a whole turn
	lastTurn     int
	headerLogged bool            // this agent logged its initial/resume header
	lastHeader   json.RawMessage // canonical latest request/header.header in the log
	lastRaw      json.RawMessage // this agent's encoding of lastHeader, a fast path
	lastContext  *core.RequestContext
	// pending holds additional contexts of committed tool results, in
	// commit order; they become user/message events at the next step (or
	// the next turn's first step).
	pending []core.Message
}

// New returns an agent over cfg.Session, continuing its turn numbering.
// A session whose last turn is still open is refused (repair it first).
func New(cfg Config) (*Agent, error) {
	switch {
	case cfg.Session == nil:
		return nil, errors.New("agent: no session")
	case cfg.Tools == nil:
		return nil, errors.New("agent: no tool registry")
	case cfg.Model == nil:
		return nil, errors.New("agent: no model")
	}
	if cfg.MaxParallel <= 0 {
		cfg.MaxParallel = DefaultMaxParallel
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.ChunkInterval <= 0 {
		cfg.ChunkInterval = DefaultChunkInterval
	}
	if cfg.ChunkBytes == 0 {
		cfg.ChunkBytes = DefaultChunkBytes
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	a := &Agent{cfg: cfg, sess: cfg.Session, logger: logger.With(logkey.SessionID, cfg.Session.Header().ID)}
	open := false
	for _, e := range cfg.Session.Events() {
		switch e.Type {
		case core.EventTurnStart:
			var d core.TurnStart
			if err := e.DecodeData(&d); err != nil {
				return nil, fmt.Errorf("agent: %w", err)
			}
			a.lastTurn, open = d.Turn, true
		case core.EventTurnEnd:
			open = false
		case core.EventRequestHeader:
			var d struct {
				Header json.RawMessage `json:"header"`
			}
			if err := e.DecodeData(&d); err != nil {
				return nil, fmt.Errorf("agent: %w", err)
			}
			a.lastHeader = canonicalJSON(d.Header)
		case core.EventRequestContext:
			var d core.RequestContext
			if err := e.DecodeData(&d); err != nil {
				return nil, fmt.Errorf("agent: %w", err)
			}
			a.lastContext = &d
		}
	}
	if open {
		return nil, core.Errorf(core.CodeConflict, "agent: session %s has an open turn %d; repair it before running", cfg.Session.Header().ID, a.lastTurn)
	}
	return a, nil
}

// Session returns the agent's session.
func (a *Agent) Session() *core.Session { return a.sess }

// Turn runs one turn for prompt (a user message) and returns how it ended.
// Cancelling ctx aborts the turn cooperatively: started tool calls drain,
// unstarted ones get synthetic ABORTED_BEFORE_DISPATCH results, and the
// turn ends with turn/end{aborted, cause} (the cause from a *CancelError in
// context.Cause(ctx), else {kind: user}).
//
// A model failure ends the turn with turn/end{error} and returns a nil
// error: the session stays usable. The error is non-nil only when the log
// itself failed (an append was refused or the store failed); the turn was
// then closed as far as the log allowed.
func (a *Agent) Turn(ctx context.Context, prompt core.Message) (core.TurnEndReason, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := &turn{a: a, ctx: ctx, w: context.WithoutCancel(ctx), n: a.lastTurn + 1}
	return t.run(prompt)
}

// turn is the state of one running turn.
type turn struct {
	a        *Agent
	ctx      context.Context // cancellation of the turn
	w        context.Context // appends: never cancelled, so closers land
	n        int
	step     int
	stepOpen bool
}

func (t *turn) run(prompt core.Message) (core.TurnEndReason, error) {
	a := t.a
	if _, err := t.append(core.EventTurnStart, core.TurnStart{Turn: t.n}, core.AppendOptions{}); err != nil {
		return errorReason(err), fmt.Errorf("agent: open turn %d: %w", t.n, err)
	}
	a.lastTurn = t.n
	// Contexts parked by an earlier turn happened before this prompt.
	parked := a.pending
	inputs := append(parked[:len(parked):len(parked)], prompt)
	a.pending = nil

	var reason core.TurnEndReason
	var failure error
	for {
		if t.ctx.Err() != nil || t.step >= a.cfg.MaxSteps {
			// No step will log the inputs: the contexts stay parked for the
			// next turn (a cancelled prompt is dropped, as dsh's cancel
			// discards queued input).
			if t.step == 0 {
				a.pending = parked
			} else {
				a.pending = inputs
			}
		}
		if t.ctx.Err() != nil {
			reason = t.aborted()
			break
		}
		if t.step >= a.cfg.MaxSteps {
			reason = core.TurnEndReason{Kind: core.TurnError, Error: &core.LLMFailure{
				Message: fmt.Sprintf("turn stopped after %d steps (the max-steps guard)", a.cfg.MaxSteps), Code: CodeMaxSteps}}
			break
		}
		t.step++
		out := t.runStep(inputs)
		inputs = nil
		if out.err != nil {
			failure = out.err
			reason = errorReason(out.err)
			if t.ctx.Err() != nil {
				reason = t.aborted()
			}
			break
		}
		if !out.cont {
			reason = out.reason
			break
		}
		inputs = a.pending
		a.pending = nil
	}
	if t.stepOpen {
		if err := t.closeStep(); err != nil && failure == nil {
			failure = err
			reason = errorReason(err)
		}
	}
	// The turn's durability point: it is reported finished only once its
	// whole log, turn/end included, is committed.
	if _, err := t.append(core.EventTurnEnd, core.TurnEnd{Turn: t.n, Reason: reason}, core.AppendOptions{}); err != nil {
		a.logger.Error("agent: closing the turn failed", logkey.Turn, t.n, logkey.Err, err)
		if failure == nil {
			failure = err
		}
	} else if err := a.sess.Sync(t.w); err != nil {
		a.logger.Error("agent: committing the turn failed", logkey.Turn, t.n, logkey.Err, err)
		if failure == nil {
			failure = fmt.Errorf("commit turn/end: %w", err)
		}
	}
	if failure != nil {
		return reason, fmt.Errorf("agent: turn %d: %w", t.n, failure)
	}
	return reason, nil
}

// aborted is the turn/end reason of a cancelled turn.
func (t *turn) aborted() core.TurnEndReason {
	cause := core.CancelCause{Kind: CauseUser}
	var ce *CancelError
	if errors.As(context.Cause(t.ctx), &ce) {
		cause = ce.Cause
	}
	return core.TurnEndReason{Kind: core.TurnAborted, Reason: &cause}
}

func errorReason(err error) core.TurnEndReason {
	f := core.LLMFailure{Message: err.Error(), Code: core.ErrorCode(err)}
	return core.TurnEndReason{Kind: core.TurnError, Error: &f}
}

// stepOutcome says how a step ended: cont continues the turn; otherwise
// reason ends it. err is an internal (log) failure.
type stepOutcome struct {
	cont   bool
	reason core.TurnEndReason
	err    error
}

func (t *turn) runStep(inputs []core.Message) stepOutcome {
	a := t.a
	if _, err := t.append(core.EventStepStart, core.StepBoundary{Turn: t.n, Step: t.step}, core.AppendOptions{}); err != nil {
		return stepOutcome{err: err}
	}
	t.stepOpen = true
	for _, m := range inputs {
		if _, err := t.append(core.EventUserMessage, m, core.AppendOptions{SurfaceOp: core.AppendOp()}); err != nil {
			return stepOutcome{err: err}
		}
	}
	if len(inputs) > 0 {
		// Whoever sent the messages waits for their commit (the runner
		// acknowledges a session once its prompt is durable): start it
		// now, while the model is asked, rather than a FlushDelay later.
		a.sess.Flush()
	}
	req, err := t.request()
	if err != nil {
		return stepOutcome{err: err}
	}

	res := t.stream(req)
	if res.err != nil {
		return stepOutcome{err: res.err}
	}
	if t.ctx.Err() != nil {
		// A cancelled stream keeps its text and reasoning only.
		if kept := res.asm.InterruptedBlocks(); len(kept) > 0 {
			if err := t.appendAssistant(kept, res, true); err != nil {
				return stepOutcome{err: err}
			}
		}
		if err := t.closeStep(); err != nil {
			return stepOutcome{err: err}
		}
		return stepOutcome{reason: t.aborted()}
	}
	if res.failure != nil {
		a.logger.Warn("agent: model call failed", logkey.Turn, t.n, logkey.Step, t.step,
			logkey.Code, res.failure.Code, logkey.Status, res.failure.Status, logkey.Message, res.failure.Message)
		if err := t.closeStep(); err != nil {
			return stepOutcome{err: err}
		}
		return stepOutcome{reason: core.TurnEndReason{Kind: core.TurnError, Error: res.failure}}
	}
	content, err := res.asm.Blocks() // max-tokens already drops tool calls
	if err != nil {
		f := core.LLMFailure{Message: err.Error(), Code: model.CodeMalformed}
		if err := t.closeStep(); err != nil {
			return stepOutcome{err: err}
		}
		return stepOutcome{reason: core.TurnEndReason{Kind: core.TurnError, Error: &f}}
	}
	if err := t.appendAssistant(content, res, false); err != nil {
		return stepOutcome{err: err}
	}
	var calls []*core.ToolCallBlock
	for _, b := range content {
		if c, ok := b.(*core.ToolCallBlock); ok {
			calls = append(calls, c)
		}
	}
	concluded, aborted := false, false
	if len(calls) > 0 {
		concluded, aborted, err = t.runTools(calls)
		if err != nil {
			return stepOutcome{err: err}
		}
	}
	if err := t.closeStep(); err != nil {
		return stepOutcome{err: err}
	}
	switch {
	case aborted || t.ctx.Err() != nil:
		return stepOutcome{reason: t.aborted()}
	case res.asm.Finish() == model.FinishMaxTokens:
		return stepOutcome{reason: core.TurnEndReason{Kind: core.TurnMaxTokens}}
	case concluded:
		return stepOutcome{reason: core.TurnEndReason{Kind: core.TurnCompleted}}
	case len(calls) > 0:
		return stepOutcome{cont: true}
	}
	return stepOutcome{reason: core.TurnEndReason{Kind: core.TurnCompleted}}
}

func (t *turn) closeStep() error {
	if !t.stepOpen {
		return nil
	}
	t.stepOpen = false
	_, err := t.append(core.EventStepEnd, core.StepBoundary{Turn: t.n, Step: t.step}, core.AppendOptions{})
	return err
}

// request logs request/header and request/context when they changed and
// builds the model request from the transcript at this point.
func (t *turn) request() (model.Request, error) {
	a := t.a
	info := a.cfg.Model.Info()
	config := map[string]any{"provider": info.Provider, "model": info.Model}
	if a.cfg.MaxTokens > 0 {
		config["maxTokens"] = a.cfg.MaxTokens
	}
	configJSON, err := core.MarshalNoEscape(config)
	if err != nil {
		return model.Request{}, err
	}
	tools := a.cfg.Tools.Schemas()
	header := core.EpochHeader{Config: configJSON, System: a.cfg.System, Tools: tools}
	hj, err := core.MarshalNoEscape(header)
	if err != nil {
		return model.Request{}, err
	}
	if !a.headerLogged || !bytes.Equal(hj, a.lastRaw) {
		if err := t.logHeader(header, hj); err != nil {
			return model.Request{}, err
		}
	}
	rc := core.RequestContext{Provider: info.Provider, Model: info.Model, ContextWindow: info.ContextWindow}
	if a.lastContext == nil || *a.lastContext != rc {
		if _, err := t.append(core.EventRequestContext, rc, core.AppendOptions{}); err != nil {
			return model.Request{}, err
		}
		a.lastContext = &rc
	}
	return model.Request{
		System:    a.cfg.System,
		Messages:  a.sess.DeriveMessages(),
		Tools:     tools,
		MaxTokens: a.cfg.MaxTokens,
		SessionID: a.sess.Header().ID,
	}, nil
}

// logHeader appends request/header when the header differs from the
// latest one in the log: "initial" for the first of the log, "resume" for
// this agent's first over an older log, "change" afterwards. hj is the
// header's encoding.
func (t *turn) logHeader(header core.EpochHeader, hj json.RawMessage) error {
	a := t.a
	canon := canonicalJSON(hj)
	reason := "change"
	switch {
	case !a.headerLogged && a.lastHeader == nil:
		reason = "initial"
	case !a.headerLogged:
		reason = "resume"
	case bytes.Equal(canon, a.lastHeader):
		a.lastRaw = hj
		return nil
	}
	if _, err := t.append(core.EventRequestHeader, core.RequestHeader{Header: header, Reason: reason}, core.AppendOptions{}); err != nil {
		return err
	}
	a.headerLogged, a.lastHeader, a.lastRaw = true, canon, hj
	return nil
}

// canonicalJSON re-encodes JSON with sorted object keys, for comparison.
func canonicalJSON(raw json.RawMessage) json.RawMessage {
	return core.CanonicalJSON(raw)
}

// streamResult is the outcome of one model call.
type streamResult struct {
	asm       *model.Assembler
	chunkSeqs []int64
	failure   *core.LLMFailure // the model call failed
	err       error            // the log failed
}

type recvItem struct {
	chunk core.StreamChunk
	err   error
}

// stream runs the model call, appending its chunks (coalesced) as they
// arrive. The stream is only ever used by one goroutine at a time: a
// reader goroutine calls Recv; this one waits for its items or for the
// coalescing deadline.
func (t *turn) stream(req model.Request) streamResult {
	a := t.a
	res := streamResult{asm: &model.Assembler{}, chunkSeqs: []int64{}}
	sctx, stop := context.WithCancel(t.ctx)
	defer stop()
	s, err := a.cfg.Model.Stream(sctx, req)
	if err != nil {
		f := model.FailureOf(err)
		res.failure = &f
		return res
	}
	items := make(chan recvItem, 64)
	go func() {
		defer close(items)
		defer s.Close()
		for {
			var it recvItem
			func() {
				defer func() {
					if v := recover(); v != nil {
						it = recvItem{err: fmt.Errorf("model stream panicked: %v", v)}
					}
				}()
				it.chunk, it.err = s.Recv()
			}()
			items <- it
			if it.err != nil {
				return
			}
		}
	}()
	cw := &chunkWriter{t: t, res: &res}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var deadline <-chan time.Time
		if cw.pending != nil {
			deadline = timer.C
		}
		select {
		case <-deadline:
			if err := cw.flush(); err != nil {
				res.err = err
				stop()
				drain(items)
				return res
			}
		case it := <-items:
			if it.err != nil {
				if err := cw.flush(); err != nil {
					res.err = err
				} else if !errors.Is(it.err, io.EOF) {
					f := model.FailureOf(it.err)
					res.failure = &f
				}
				drain(items)
				return res
			}
			res.asm.Push(it.chunk)
			started, err := cw.add(it.chunk)
			if err != nil {
				res.err = err
				stop()
				drain(items)
				return res
			}
			if started {
				timer.Reset(a.cfg.ChunkInterval)
			}
		}
	}
}

// drain waits for the reader goroutine to finish.
func drain(items <-chan recvItem) {
	for range items {
	}
}

// appendAssistant appends assistant/message citing the stream's chunks.
func (t *turn) appendAssistant(content core.Content, res streamResult, interrupted bool) error {
	info := t.a.cfg.Model.Info()
	msg := core.Message{ID: core.NewID(), Role: core.RoleAssistant, Content: content,
		Source: core.Source{Kind: core.SourceModel, Provider: info.Provider, Model: info.Model}}
	data := core.AssistantMessage{Turn: t.n, Step: t.step, Message: msg, Usage: res.asm.Usage(), Interrupted: interrupted}
	_, err := t.append(core.EventAssistantMessage, data, core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: res.chunkSeqs})
	return err
}

func (t *turn) append(typ string, data any, opts core.AppendOptions) (core.Event, error) {
	e, err := t.a.sess.Append(t.w, typ, data, opts)
	if err != nil {
		return e, fmt.Errorf("append %s: %w", typ, err)
	}
	return e, nil
}
