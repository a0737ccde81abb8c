package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"prism/core"
	"prism/core/logkey"
	"prism/core/model"
	"prism/core/notes"
)

// Models resolves model names; *model.Catalog implements it.
type Models interface {
	// New returns a fresh model for name ("" = the default).
	New(name string) (model.Model, error)
	// Default returns the name "" resolves to.
	Default() string
}

// RunnerConfig configures a Runner.
type RunnerConfig struct {
	// Store is where every event goes (nil keeps sessions in memory only).
	Store core.EventStore
	// Tools is the registry every session's calls run through. The file
	// tools confine each call to its session's cwd (the workspace).
	// Required.
	Tools *core.Registry
	// Models resolves StartRequest.Model. Required.
	Models Models
	// Workspace is the default workspace of sessions on a real model ("" =
	// a fresh empty directory under WorkspaceRoot per session).
	Workspace string
	// WorkspaceRoot is where fresh workspaces are created, the demo's
	// seeded ones included ("" = the system temp directory).
	WorkspaceRoot string
	// AllowedWorkspaces are the directories a StartRequest may name as its
	// workspace (each, or anything below it). Empty: a request naming a
	// workspace is refused, since a session's tools act on it with the
	// server's authority.
	AllowedWorkspaces []string
	// System returns the system prompt of a session in workspace (nil =
	// DefaultSystemPrompt).
	System func(workspace string) string
	// MaxParallel, MaxSteps and MaxTokens configure each session's Agent.
	MaxParallel int
	MaxSteps    int
	MaxTokens   int64
	// OnEvent is called with every event of every session after it is
	// committed to the store, never before, in seq order per session, from
	// the goroutine that committed it: it must not block (hand the event to
	// a buffered broker) and must not append to the session.
	OnEvent func(sessionID string, e core.Event)
	// Logger receives the runner's and the loops' logs; nil means
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock of event times; nil means time.Now.
	Now func() time.Time
	// MaxDelegationDepth caps how deep subagents nest (Spawn): a session
	// at this depth may not delegate (0 = tools.DefaultMaxDelegationDepth).
	MaxDelegationDepth int
	// Links writes a link note (notes.Link) on the parent when a subagent
	// starts, before its first turn, so pages nest the child while the
	// call is pending (nil: no notes are written).
	Links func(ctx context.Context, in notes.Input) error
	// Load reads a stored session's header and log, the source of a Fork
	// (an unknown id is core.CodeNotFound); nil: forks are refused.
	Load func(ctx context.Context, id string) (core.SessionHeader, []core.Event, error)
	// PutNote writes a note beside a session's log: a fork's replayed
	// notes (nil: none are written). The fork note on its source is
	// written with the fork by the store (ForkStore); only a runner
	// without a Store writes it here.
	PutNote func(ctx context.Context, in notes.Input) error
}

// StartRequest starts a session.
type StartRequest struct {
	// Prompt is the first user message. Required.
	Prompt string
	// Model names the model ("" = the default).
	Model string
	// Workspace is the directory the tools work in ("" = the configured
	// default). It must be an existing directory. The scripted demo model
	// always gets its own freshly seeded workspace and refuses this field.
	Workspace string
}

// SessionStatus describes one session of the runner.
type SessionStatus struct {
	ID        string
	Model     string // the model name it was started with
	Provider  string
	Workspace string
	CreatedAt int64 // epoch milliseconds
	Running   bool  // a turn is running
	Queued    int   // follow-up messages waiting for their turn
	LastTurn  *core.TurnEndReason
}

// Runner owns the sessions a server runs: it starts a session from a
// prompt, runs its turns in the background one after another, queues
// follow-up messages, cancels turns and stops everything on Close. Several
// sessions run at once without blocking each other. It is safe for
// concurrent use.
//
// A follow-up message sent while a turn runs is queued: it opens its own
// turn after the running one ends (dsh's followup). Cancel aborts the
// running turn and drops the queued messages (dsh's cancel).
type Runner struct {
	cfg    RunnerConfig
	logger *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	order    []string // start order
	closed   bool
	wg       sync.WaitGroup
}

// session is one running session.
type session struct {
	id    string
	sess  *core.Session
	agent *Agent
	model model.Model
	info  SessionStatus

	// cleanup removes a workspace the runner created for the session (the
	// demo's seeded one); nil once done or when there is none. Guarded by
	// mu.
	cleanup func()

	mu      sync.Mutex
	queue   []queued
	running bool
	cancel  context.CancelCauseFunc // of the running turn
	last    *core.TurnEndReason
}

// NewRunner returns a runner for cfg.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	switch {
	case cfg.Tools == nil:
		return nil, fmt.Errorf("agent runner: no tool registry")
	case cfg.Models == nil:
		return nil, fmt.Errorf("agent runner: no models")
	}
	if cfg.Workspace != "" {
		ws, err := checkWorkspace(cfg.Workspace)
		if err != nil {
			return nil, fmt.Errorf("agent runner: default %w", err)
		}
		cfg.Workspace = ws
	}
	if cfg.System == nil {
		cfg.System = DefaultSystemPrompt
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &Runner{cfg: cfg, logger: logger, sessions: map[string]*session{}}, nil
}

// Start creates a session through the store (its header's cwd is the
// workspace) and runs the first turn in the background. It returns the new
// session's id once the session's header and its first user message (the
// prompt) are committed, so an acknowledged session never loses its
// prompt; the rest of its events follow through OnEvent. Errors are coded:
// CodeInvalid for a bad request, CodeUnavailable for an unusable model, a
// closed runner or a first turn that ended before its prompt was logged.
//
// The scripted demo model's seeded workspace is created after the session
// row and removed once its script is played out (or at Close).
func (r *Runner) Start(ctx context.Context, req StartRequest) (string, error) {
	prompt := strings.TrimSpace(req.Prompt)
	if prompt == "" {
		return "", core.Errorf(core.CodeInvalid, "start session: the prompt is empty")
	}
	if r.isClosed() {
		return "", core.Errorf(core.CodeUnavailable, "start session: the runner is closed")
	}
	name := req.Model
	if name == "" {
		name = r.cfg.Models.Default()
	}
	m, err := r.cfg.Models.New(name)
	if err != nil {
		return "", fmt.Errorf("start session: %w", err)
	}
	id := core.NewID()
	ws, seed, err := r.workspace(m, id, req.Workspace)
	if err != nil {
		return "", fmt.Errorf("start session: %w", err)
	}
	s, err := r.open(ctx, opening{what: "start session", header: core.SessionHeader{ID: id, Cwd: ws}, model: m, name: name,
		tools: r.cfg.Tools, workspace: seed})
	if err != nil {
		return "", err
	}
	if err := r.sendFirst(ctx, s, prompt, "start"); err != nil {
		return "", err
	}
	return s.id, nil
}

// sendFirst queues a new session's first prompt and waits until it is
// committed: the acknowledgement of Start and of a fork with a prompt (verb
// names which in errors). The turn goes on if ctx ends first.
func (r *Runner) sendFirst(ctx context.Context, s *session, prompt, verb string) error {
	id := s.id
	first := core.NewUserMessage(core.NewID(), prompt)
	logged := s.watchLogged(first.ID)
	if err := r.enqueueMessage(s, first, logged); err != nil {
		return err
	}
	select {
	case <-logged.done:
		if logged.err != nil {
			return fmt.Errorf("%s session %s: %w", verb, id, logged.err)
		}
		// Appends commit at durability points, not one by one: the
		// acknowledgement is one. The prompt's observer runs after its
		// commit, so this returns at once; it states the rule, and holds
		// should the prompt have been found in the log before its commit.
		if err := s.sess.WaitDurable(ctx, logged.seq); err != nil {
			return fmt.Errorf("%s session %s: the prompt was not committed: %w", verb, id, err)
		}
		return nil
	case <-ctx.Done():
		// The turn goes on; only the caller stopped waiting.
		return fmt.Errorf("%s session %s: %w", verb, id, context.Cause(ctx))
	}
}

// opening is what open makes a session from: Start's, Spawn's and Fork's
// requests each come down to one.
type opening struct {
	// what names the operation in errors: "start session", "fork session
	// src into id".
	what string
	// header is the new session's header.
	header core.SessionHeader
	// fork, when set, is a fork's inherited log and its note on the
	// source: created with the session's row in one store transaction.
	fork *forkSeed
	// model (named name) runs the session's agent over tools.
	model model.Model
	name  string
	tools *core.Registry
	// system is the agent's system prompt ("" = RunnerConfig.System of
	// the workspace).
	system string
	// replay answers a fork's repeated calls (nil: none).
	replay *Replayer
	// workspace, when set, creates the workspace once the session row
	// exists and returns what removes it.
	workspace func() (cleanup func(), err error)
	// before, when set, runs before the agent is built: it appends the
	// events that precede the first turn (a subagent's descriptor), or
	// prepares the workspace (a fork's rebuild).
	before func(*core.Session) error
}

// open creates a session through the store as o says and registers it
// with the runner, its agent ready for a first prompt: the one path of
// Start, Spawn and Fork. A workspace it created is removed when a later
// step fails.
func (r *Runner) open(ctx context.Context, o opening) (*session, error) {
	sess, err := r.create(ctx, o)
	if err != nil {
		return nil, err
	}
	h := sess.Header()
	var cleanup func()
	if o.workspace != nil {
		// Only now that the session row exists: a failed start leaves no
		// directory behind.
		if cleanup, err = o.workspace(); err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.what, h.ID, err)
		}
	}
	fail := func(err error) (*session, error) {
		if cleanup != nil {
			cleanup()
		}
		return nil, fmt.Errorf("%s %s: %w", o.what, h.ID, err)
	}
	if r.cfg.OnEvent != nil {
		onEvent, id := r.cfg.OnEvent, h.ID
		sess.OnAppend(func(e core.Event) { onEvent(id, e) })
	}
	if o.before != nil {
		if err := o.before(sess); err != nil {
			return fail(err)
		}
	}
	system := o.system
	if strings.TrimSpace(system) == "" {
		system = r.cfg.System(h.Cwd)
	}
	cfg := Config{
		Session:     sess,
		Tools:       o.tools,
		Model:       o.model,
		System:      system,
		MaxParallel: r.cfg.MaxParallel,
		MaxSteps:    r.cfg.MaxSteps,
		MaxTokens:   r.cfg.MaxTokens,
		Logger:      r.logger,
		Replay:      o.replay,
	}
	if o.replay != nil && r.cfg.PutNote != nil {
		cfg.OnReplayed = r.noteReplayed(sess)
	}
	a, err := New(cfg)
	if err != nil {
		return fail(err)
	}
	info := o.model.Info()
	s := &session{id: h.ID, sess: sess, agent: a, model: o.model, cleanup: cleanup, info: SessionStatus{
		ID: h.ID, Model: o.name, Provider: info.Provider, Workspace: h.Cwd, CreatedAt: h.CreatedAt,
	}}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		s.removeWorkspace()
		return nil, core.Errorf(core.CodeUnavailable, "%s %s: the runner is closed", o.what, h.ID)
	}
	r.sessions[h.ID] = s
	r.order = append(r.order, h.ID)
	r.mu.Unlock()
	r.logger.Info("session started", logkey.SessionID, h.ID, logkey.Model, o.name, logkey.Provider, info.Provider, logkey.Workspace, h.Cwd)
	return s, nil
}

// create makes the session of o in the store: a new, empty one
// (core.NewSession), or a fork whole (createFork).
func (r *Runner) create(ctx context.Context, o opening) (*core.Session, error) {
	opts := core.SessionOptions{Store: r.cfg.Store, Now: r.cfg.Now, Logger: r.logger}
	if o.fork == nil {
		sess, err := core.NewSession(ctx, o.header, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.what, err)
		}
		return sess, nil
	}
	if err := r.createFork(ctx, o.header, *o.fork); err != nil {
		if core.ErrorCode(err) == core.CodeSessionAlreadyExists {
			return nil, err
		}
		return nil, fmt.Errorf("%s %s: %w", o.what, o.header.ID, err)
	}
	sess, err := core.OpenSession(o.header, o.fork.events, opts)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.what, o.header.ID, err)
	}
	return sess, nil
}

// logWaiter is closed once a queued user message is committed to the log,
// or with err once its turn ended without logging it.
type logWaiter struct {
	id   string
	done chan struct{}
	once sync.Once
	seq  int64 // of the user/message, once logged
	err  error
}

func (w *logWaiter) finish(seq int64, err error) {
	w.once.Do(func() {
		w.seq, w.err = seq, err
		close(w.done)
	})
}

// messageID returns the id of the message a user/message event carries
// (its data is the message).
func messageID(e core.Event) string {
	var m struct {
		ID string `json:"id"`
	}
	if e.Type != core.EventUserMessage || json.Unmarshal(e.Data, &m) != nil {
		return ""
	}
	return m.ID
}

// loggedIn returns the seq of the user/message of message id in events.
func loggedIn(events []core.Event, id string) (seq int64, ok bool) {
	for i := len(events) - 1; i >= 0; i-- {
		if messageID(events[i]) == id {
			return events[i].Seq, true
		}
	}
	return 0, false
}

// watchLogged returns a waiter for the user message id: an observer of the
// session's committed events (observers run after the commit) closes it
// when the user/message carrying that message arrives.
func (s *session) watchLogged(id string) *logWaiter {
	w := &logWaiter{id: id, done: make(chan struct{})}
	var remove func()
	remove = s.sess.OnAppend(func(e core.Event) {
		if messageID(e) == id {
			w.finish(e.Seq, nil)
			remove()
		}
	})
	return w
}

// Send adds a user message to a session: it runs as the next turn, after
// the running one (if any) and the messages queued before it. CodeNotFound
// for a session this runner does not own, CodeInvalid for an empty text,
// CodeUnavailable once the runner is closed.
func (r *Runner) Send(_ context.Context, id, text string) error {
	text = strings.TrimSpace(text)
	if text == "" {
		return core.Errorf(core.CodeInvalid, "send to session %s: the message is empty", id)
	}
	s, err := r.get(id)
	if err != nil {
		return err
	}
	return r.enqueue(s, text)
}

// Cancel aborts the session's running turn (turn/end{aborted, {kind:
// user}}) and drops its queued messages. Cancelling an idle session does
// nothing. CodeNotFound for an unknown session.
func (r *Runner) Cancel(id string) error {
	return r.CancelWith(id, core.CancelCause{Kind: CauseUser})
}

// CancelWith is Cancel with the cause its turn/end records: {kind: hook,
// reason: "rule spend: …"} when an attention rule cancels the turn.
func (r *Runner) CancelWith(id string, cause core.CancelCause) error {
	s, err := r.get(id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	dropQueue(s)
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel(&CancelError{Cause: cause})
		r.logger.Info("turn cancelled", logkey.SessionID, id, logkey.Reason, cause.Kind)
	}
	return nil
}

// Status returns one session's status (CodeNotFound if unknown).
func (r *Runner) Status(id string) (SessionStatus, error) {
	s, err := r.get(id)
	if err != nil {
		return SessionStatus{}, err
	}
	return s.status(), nil
}

// Sessions returns the status of every session, in start order.
func (r *Runner) Sessions() []SessionStatus {
	r.mu.Lock()
	ss := make([]*session, 0, len(r.order))
	for _, id := range r.order {
		ss = append(ss, r.sessions[id])
	}
	r.mu.Unlock()
	out := make([]SessionStatus, len(ss))
	for i, s := range ss {
		out[i] = s.status()
	}
	return out
}

// Session returns a running session's log, for readers that want its
// events or transcript directly.
func (r *Runner) Session(id string) (*core.Session, error) {
	s, err := r.get(id)
	if err != nil {
		return nil, err
	}
	return s.sess, nil
}

// Close stops the runner: no session or message is accepted any more,
// every running turn is cancelled ({kind: disposed}: started calls drain,
// the rest get synthetic results, the turn is closed in the log), and Close
// returns once every turn has ended.
func (r *Runner) Close() error {
	r.mu.Lock()
	r.closed = true
	ss := make([]*session, 0, len(r.sessions))
	for _, s := range r.sessions {
		ss = append(ss, s)
	}
	r.mu.Unlock()
	for _, s := range ss {
		s.mu.Lock()
		dropQueue(s)
		if s.cancel != nil {
			s.cancel(Cancel(CauseDisposed))
		}
		s.mu.Unlock()
	}
	r.wg.Wait()
	for _, s := range ss {
		s.removeWorkspace()
	}
	return nil
}

// dropQueue discards the session's queued messages, telling their waiters.
// The caller holds s.mu.
func dropQueue(s *session) {
	for _, q := range s.queue {
		if q.logged != nil {
			q.logged.finish(0, core.Errorf(core.CodeUnavailable, "session %s: the runner is closed", s.id))
		}
		if q.ended != nil {
			q.ended <- turnOutcome{err: core.Errorf(core.CodeUnavailable, "session %s: its turn was dropped before it ran (cancelled, or the runner closed)", s.id)}
		}
	}
	s.queue = nil
}

// removeWorkspace removes the workspace the runner created for the session,
// once.
func (s *session) removeWorkspace() {
	s.mu.Lock()
	cleanup := s.cleanup
	s.cleanup = nil
	s.mu.Unlock()
	if cleanup != nil {
		cleanup()
	}
}

func (r *Runner) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

func (r *Runner) get(id string) (*session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sessions[id]
	if !ok {
		return nil, core.Errorf(core.CodeNotFound, "session %s is not running here", id)
	}
	return s, nil
}

func (s *session) status() SessionStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.info
	st.Running, st.Queued = s.running, len(s.queue)
	if s.last != nil {
		last := *s.last
		st.LastTurn = &last
	}
	return st
}

// queued is a user message waiting for its turn, with the waiter told
// when it is logged (nil when nobody waits).
type queued struct {
	msg    core.Message
	logged *logWaiter
	// parent, when set, is the context of the subagent call that queued
	// the message: its end cancels the turn ({kind: parent}).
	parent context.Context
	// ended, when set, receives how the message's turn ended (or why it
	// never ran); buffered.
	ended chan turnOutcome
}

// turnOutcome is how one turn ended.
type turnOutcome struct {
	reason core.TurnEndReason
	err    error
}

// enqueue queues a message and starts the session's driver if it is idle.
func (r *Runner) enqueue(s *session, text string) error {
	return r.enqueueMessage(s, core.NewUserMessage(core.NewID(), text), nil)
}

func (r *Runner) enqueueMessage(s *session, msg core.Message, logged *logWaiter) error {
	return r.enqueueQueued(s, queued{msg: msg, logged: logged})
}

func (r *Runner) enqueueQueued(s *session, q queued) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return core.Errorf(core.CodeUnavailable, "session %s: the runner is closed", s.id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, q)
	if !s.running {
		s.running = true
		r.wg.Add(1)
		go r.drive(s)
	}
	return nil
}

// drive runs the session's queued turns one after another. After a turn
// that left the model nothing to play (the scripted demo's script is
// done), the workspace the runner created for it is removed.
func (r *Runner) drive(s *session) {
	defer r.wg.Done()
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.running, s.cancel = false, nil
			s.mu.Unlock()
			return
		}
		q := s.queue[0]
		s.queue = slices.Delete(s.queue, 0, 1)
		ctx, cancel := context.WithCancelCause(context.Background())
		s.cancel = cancel
		s.mu.Unlock()
		stop := func() bool { return false }
		if q.parent != nil {
			stop = context.AfterFunc(q.parent, func() { cancel(Cancel(CauseParent)) })
		}

		reason, err := s.agent.Turn(ctx, q.msg)
		stop()
		if q.ended != nil {
			q.ended <- turnOutcome{reason: reason, err: err}
		}
		if q.logged != nil {
			// Usually the observer told the waiter already. If not, either
			// its delivery is still under way or the turn ended (failed,
			// was cancelled, the runner closed) before logging the prompt.
			// Events holds what is appended, committed or not: Start waits
			// for the seq to be durable.
			if seq, ok := loggedIn(s.sess.Events(), q.msg.ID); ok {
				q.logged.finish(seq, nil)
			} else {
				why := err
				if why == nil {
					why = fmt.Errorf("the turn ended (%s) first", reason.Kind)
				}
				q.logged.finish(0, core.Errorf(core.CodeUnavailable, "the prompt was not logged: %v", why))
			}
		}
		cancel(nil)
		s.mu.Lock()
		s.cancel = nil
		s.last = &reason
		s.mu.Unlock()
		if p, ok := s.model.(interface{ Remaining() int }); ok && p.Remaining() == 0 {
			s.removeWorkspace() // the script is played out: nothing will use it again
		}
		if err != nil {
			r.logger.Error("turn failed", logkey.SessionID, s.id, logkey.Err, err)
		} else {
			r.logger.Info("turn ended", logkey.SessionID, s.id, logkey.Reason, reason.Kind)
		}
	}
}

// workspace resolves a session's workspace. For a model that seeds one
// (the demo) it returns the path of a fresh directory named after the
// session and seed, which creates and seeds it (call it once the session
// exists) and returns the func that removes it. Otherwise the requested or
// default directory, else a fresh empty one, which seed makes (once the
// session exists) and whose cleanup removes it only while it is empty.
func (r *Runner) workspace(m model.Model, id, requested string) (ws string, seed func() (cleanup func(), err error), err error) {
	if seeder, ok := m.(model.WorkspaceSeeder); ok {
		if requested != "" {
			return "", nil, core.Errorf(core.CodeInvalid,
				"the scripted demo model works in its own seeded workspace; omit the workspace or choose another model")
		}
		dir, err := r.freshDir("prism-demo-" + id)
		if err != nil {
			return "", nil, fmt.Errorf("demo workspace: %w", err)
		}
		return dir, func() (func(), error) {
			if err := os.Mkdir(dir, 0o700); err != nil { // new: see freshDir
				return nil, fmt.Errorf("demo workspace: %w", err)
			}
			cleanup := func() {
				if err := os.RemoveAll(dir); err != nil {
					r.logger.Warn("remove the demo workspace", logkey.Dir, dir, logkey.Err, err)
				}
			}
			if err := seeder.SeedWorkspace(dir); err != nil {
				cleanup()
				return nil, err
			}
			return cleanup, nil
		}, nil
	}
	if requested != "" {
		ws, err := checkWorkspace(requested)
		if err != nil {
			return "", nil, core.Errorf(core.CodeInvalid, "%v", err)
		}
		for _, root := range r.cfg.AllowedWorkspaces {
			if real, err := checkWorkspace(root); err == nil && within(real, ws) {
				return ws, nil, nil
			}
		}
		return "", nil, core.Errorf(core.CodeInvalid,
			"workspace %q is not inside an allowed workspace root (the server's --workspace-roots)", requested)
	}
	if r.cfg.Workspace != "" {
		return r.cfg.Workspace, nil, nil
	}
	// A fresh directory of its own, made once the session row exists (as
	// the demo's): a start that fails before leaves nothing behind, one
	// that fails after removes it while it is still empty. It outlives its
	// session once the agent wrote in it: it holds the agent's work.
	dir, err := r.freshDir("prism-workspace-" + id)
	if err != nil {
		return "", nil, fmt.Errorf("workspace: %w", err)
	}
	return dir, func() (func(), error) {
		if err := os.Mkdir(dir, 0o700); err != nil { // new: see freshDir
			return nil, fmt.Errorf("workspace: %w", err)
		}
		return func() { _ = os.Remove(dir) }, nil // only while empty
	}, nil
}

// freshDir returns the absolute path of directory name under the
// workspace root (the system's temporary directory by default). Its
// caller makes it with os.Mkdir, never MkdirAll: the name must be new —
// never an existing directory, nor a symlink planted at it.
func (r *Runner) freshDir(name string) (string, error) {
	root := r.cfg.WorkspaceRoot
	if root == "" {
		root = os.TempDir()
	}
	return filepath.Abs(filepath.Join(root, name))
}

// checkWorkspace returns the absolute, symlink-resolved path of an
// existing directory.
func checkWorkspace(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("workspace %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("workspace %q: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("workspace %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("workspace %q is not a directory", dir)
	}
	return real, nil
}

// within reports whether path is root or lies below it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// DefaultSystemPrompt is the system prompt of a session in workspace.
func DefaultSystemPrompt(workspace string) string {
	return "You are a coding agent run by prism. You work in the workspace " + workspace + ": " +
		"every file path you give a tool is relative to it, and nothing outside it is reachable.\n\n" +
		"Use read (not shell commands) to inspect files; results carry line numbers. " +
		"Use edit for targeted changes to existing files and write to create files. " +
		"Use grep to search contents and glob to find files. " +
		"When bash is available, check the [exit code: N] marker of every result and investigate failures before moving on.\n\n" +
		"Work step by step, call independent tools together, and finish with a short summary of what you found or changed."
}
