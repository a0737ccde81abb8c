package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"prism/core"
	"prism/core/logkey"
	"prism/core/model"
	"prism/core/notes"
)

// Tool modes of a fork (ForkRequest.Tools).
const (
	// ToolsReplay answers each call that repeats the source's call at the
	// same position with the source's recorded result (the default).
	ToolsReplay = "replay"
	// ToolsLive runs every call.
	ToolsLive = "live"
)

// ForkRequest forks a stored session.
type ForkRequest struct {
	// Source is the session to fork. Required.
	Source string
	// ID is the fork's id ("" = a new one).
	ID string
	// Boundary is where the source is cut: after a turn's turn/end.
	Boundary core.ForkBoundary
	// Prompt, when set, runs as the fork's first turn; without it the fork
	// waits for a message.
	Prompt string
	// Model names the fork's model ("" = the default).
	Model string
	// System is the fork's own system prompt ("" = the configured one for
	// its workspace).
	System string
	// Tools is ToolsReplay ("" too) or ToolsLive.
	Tools string
	// Title is the fork's title ("" = its Prompt's first line, or without
	// a Prompt `fork of “<the source's title>” at turn N`).
	Title string
}

// Fork makes a new session from a stored one, as dsh's SessionStore.fork
// does, and runs it here: the source's prefix through the turn/end of the
// boundary's turn (core.ForkPrefix), then session/end-seed; the header's
// parentSession is the source (no origin: a fork is not a subagent) and
// its seedLength the number of inherited events; the seed is validated as
// any seed (core.ForkSeed). The fork is cut from the stored log
// (RunnerConfig.Load), never from a running session object, so dsh's
// SESSION_NOT_LIVE does not arise; a source whose later turns are still
// running forks as well, at any completed turn. The fork is stored whole
// or not at all: its row, its seed and the fork note on the source in one
// store transaction (ForkStore). It then opens as Start's and Spawn's
// sessions do (Runner.open).
//
// The fork works in the configured workspace — for the scripted demo,
// whose workspace prism can rebuild, a freshly seeded one changed by the
// source's successful write and edit calls up to the boundary — with the configured model unless Model names another and
// the configured system prompt unless System gives its own. With Tools
// "replay" (the default) its calls that repeat the source's calls after
// the boundary, in order, are answered with the recorded results (a
// Replayer); each gets a replayed note (notes.ReplayedData). With a Prompt it
// runs a turn at once; Fork returns once the prompt is committed, like
// Start.
//
// Errors carry dsh's fork codes (core.ForkError): SESSION_NOT_FOUND for an
// unknown source, SESSION_ALREADY_EXISTS for a taken id, OPEN_TURN and
// INVALID_BOUNDARY for a boundary that is not a completed turn's end;
// other bad requests are core.CodeInvalid.
func (r *Runner) Fork(ctx context.Context, req ForkRequest) (string, error) {
	if r.cfg.Load == nil {
		return "", core.Errorf(core.CodeUnavailable, "fork session %s: this runner cannot read stored sessions", req.Source)
	}
	if r.isClosed() {
		return "", core.Errorf(core.CodeUnavailable, "fork session %s: the runner is closed", req.Source)
	}
	switch req.Tools {
	case "", ToolsReplay, ToolsLive:
	default:
		return "", core.Errorf(core.CodeInvalid, "fork session %s: tools must be %q or %q, not %q", req.Source, ToolsReplay, ToolsLive, req.Tools)
	}
	if req.Source == "" {
		return "", core.ForkError(core.CodeSessionNotFound, "cannot fork: no source session given")
	}
	srcHeader, events, err := r.cfg.Load(ctx, req.Source)
	if err != nil {
		if core.ErrorCode(err) == core.CodeNotFound {
			return "", core.ForkError(core.CodeSessionNotFound, "cannot fork session %q: it does not exist", req.Source)
		}
		return "", fmt.Errorf("fork session %s: %w", req.Source, err)
	}
	n, err := core.ForkPrefix(req.Source, events, req.Boundary)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(req.ID)
	if id == "" {
		id = core.NewID()
	} else if _, err := r.get(id); err == nil {
		return "", core.ForkError(core.CodeSessionAlreadyExists, "cannot fork session %q into %q: a session with that id already exists", req.Source, id)
	}
	name := req.Model
	if name == "" {
		name = r.cfg.Models.Default()
	}
	m, err := r.cfg.Models.New(name)
	if err != nil {
		return "", fmt.Errorf("fork session %s: %w", req.Source, err)
	}
	ws, seedWorkspace, err := r.workspace(m, id, "")
	if err != nil {
		return "", fmt.Errorf("fork session %s: %w", req.Source, err)
	}
	now := r.now().UnixMilli()
	h, seed, err := core.ForkSeed(core.SessionHeader{ID: id, CreatedAt: now, Cwd: ws, ParentSession: srcHeader.ID}, events, n, now)
	if err != nil {
		return "", err
	}
	// The fork says it is one: its first own event titles it (forkTitle),
	// committed with the seed.
	title, err := json.Marshal(core.SessionTitle{Title: forkTitle(req, srcHeader.ID, events, n)})
	if err != nil {
		return "", fmt.Errorf("fork session %s into %s: the title: %w", req.Source, id, err)
	}
	seed = append(seed, core.Event{Type: core.EventSessionTitle, Seq: int64(len(seed)), Time: now, Data: title})
	// The source names its fork: its header, the list and the tree of
	// forks read this note, written with the fork (createFork).
	data, err := json.Marshal(notes.ForkData{Session: id, SeedLength: int64(n)})
	if err != nil {
		return "", fmt.Errorf("fork session %s into %s: the fork note: %w", req.Source, id, err)
	}
	at := int64(n) - 1
	o := opening{
		what:   fmt.Sprintf("fork session %s into", req.Source),
		header: h,
		fork:   &forkSeed{events: seed, note: notes.Input{Session: srcHeader.ID, Kind: notes.KindFork, AtSeq: &at, Data: data}},
		model:  m, name: name, tools: r.cfg.Tools, system: req.System,
		workspace: seedWorkspace,
	}
	if _, demo := m.(model.WorkspaceSeeder); demo {
		// The demo's workspace is one prism can rebuild: seeded afresh,
		// then changed as the source's file tools changed it up to the
		// boundary.
		o.before = func(*core.Session) error {
			r.rebuildWorkspace(ctx, id, ws, seed)
			return nil
		}
	}
	if req.Tools != ToolsLive {
		o.replay = NewReplayer(srcHeader.ID, events, n)
	}
	s, err := r.open(ctx, o)
	if err != nil {
		return "", err
	}
	r.logger.Info("session forked", logkey.SessionID, id, logkey.SourceID, srcHeader.ID, logkey.Seq, n)
	if prompt := strings.TrimSpace(req.Prompt); prompt != "" {
		if err := r.sendFirst(ctx, s, prompt, "fork"); err != nil {
			return "", err
		}
	}
	return id, nil
}

// forkTitle is a fork's title: req.Title when given, else the first
// line of its Prompt (as a new session is titled by its first prompt),
// else `fork of “<the source's title>” at turn N` — the source's title as
// its list row shows it (core.Summary of events; its id when untitled),
// N the turn the fork was cut after (n events inherited).
func forkTitle(req ForkRequest, source string, events []core.Event, n int) string {
	if t := strings.TrimSpace(req.Title); t != "" {
		return t
	}
	for line := range strings.Lines(req.Prompt) {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	title := core.Summarize(events).Title
	if title == "" {
		title = source
	}
	turn := 0
	if n > 0 && events[n-1].Type == core.EventTurnEnd {
		var d struct {
			Turn int `json:"turn"`
		}
		if json.Unmarshal(events[n-1].Data, &d) == nil {
			turn = d.Turn
		}
	}
	tail := fmt.Sprintf("” at turn %d", turn)
	if turn == 0 {
		tail = "” before its first turn"
	}
	const head = "fork of “"
	// The whole title must fit core.Summary's cut of a session/title (200
	// characters), or the turn would be cut off: the source's title is
	// cut instead.
	const maxTitle = 200
	room := maxTitle - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail)
	if r := []rune(title); len(r) > room {
		title = string(r[:room-1]) + "…"
	}
	return head + title + tail
}

// forkSeed is what a fork is created with besides its header: the
// inherited log (core.ForkSeed) and the fork note on its source.
type forkSeed struct {
	events []core.Event
	note   notes.Input
}

// ForkStore is a store that creates a fork whole: its session row, its
// seed and the fork note on its source in one transaction, all or nothing
// (store.Store's CreateFork; both engines have it). A taken id is dsh's
// SESSION_ALREADY_EXISTS.
type ForkStore interface {
	CreateFork(ctx context.Context, h core.SessionHeader, seed []core.Event, note notes.Input) error
}

// createFork stores a fork as RunnerConfig.Store allows: whole through a
// ForkStore. A runner without a store keeps the fork in memory and writes
// only the note (PutNote, best effort); a store that is not a ForkStore
// cannot hold a fork whole and refuses it.
func (r *Runner) createFork(ctx context.Context, h core.SessionHeader, f forkSeed) error {
	if r.cfg.Store == nil {
		if r.cfg.PutNote != nil {
			if err := r.cfg.PutNote(ctx, f.note); err != nil {
				r.logger.Warn("fork note on the source", logkey.SessionID, h.ID, logkey.SourceID, f.note.Session, logkey.Err, err)
			}
		}
		return nil
	}
	fs, ok := r.cfg.Store.(ForkStore)
	if !ok {
		return core.Errorf(core.CodeUnavailable, "this runner's store cannot create a fork in one transaction (it has no CreateFork)")
	}
	return fs.CreateFork(ctx, h, f.events, f.note)
}

// noteReplayed returns the OnReplayed of a fork's agent: once the
// replayed call's tool/result is committed, a KindReplayed note on the
// call (from its tool/call's seq) names the source's call. It runs in the
// background; the runner's Close waits for it.
func (r *Runner) noteReplayed(sess *core.Session) func(Replayed) {
	id := sess.Header().ID
	return func(rp Replayed) {
		data, err := json.Marshal(notes.ReplayedData{SourceSession: rp.Source, SourceSeq: rp.SourceSeq})
		if err != nil {
			r.logger.Error("replayed note", logkey.SessionID, id, logkey.Err, err)
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			ctx := context.Background()
			if err := sess.WaitDurable(ctx, rp.ResultSeq); err != nil {
				r.logger.Warn("replayed note: the result was not committed", logkey.SessionID, id, logkey.Err, err)
				return
			}
			at := rp.CallSeq
			err := r.cfg.PutNote(ctx, notes.Input{Session: id, Kind: notes.KindReplayed, CallID: rp.CallID, AtSeq: &at, Data: data})
			if err != nil && !errors.Is(err, context.Canceled) {
				r.logger.Error("replayed note", logkey.SessionID, id, logkey.Err, err)
			}
		}()
	}
}

// now is the runner's clock.
func (r *Runner) now() time.Time {
	if r.cfg.Now != nil {
		return r.cfg.Now()
	}
	return time.Now()
}

// rebuildTools are the tools whose recorded calls rebuild a seeded
// workspace: the ones that change files.
var rebuildTools = []string{"write", "edit"}

// rebuildWorkspace replays, in the freshly seeded workspace ws of fork id,
// the calls of rebuildTools the seed records as successful, in log order:
// the workspace then is as the source's was at the boundary. They run
// through a registry of those tools alone (no hooks, no approvals: they
// ran already, in the source), confined to ws like any call. A call that
// fails now is logged and skipped.
func (r *Runner) rebuildWorkspace(ctx context.Context, id, ws string, seed []core.Event) {
	reg := core.NewRegistry(r.logger)
	for _, name := range rebuildTools {
		if t, ok := r.cfg.Tools.Get(name); ok {
			if err := reg.Register(t); err != nil {
				r.logger.Warn("rebuild the workspace", logkey.SessionID, id, logkey.Err, err)
				return
			}
		}
	}
	calls := map[string]core.ToolCall{}
	for i := range seed {
		e := &seed[i]
		switch e.Type {
		case core.EventToolCall:
			var d core.ToolCall
			if e.DecodeData(&d) == nil {
				if _, ok := reg.Get(d.Name); ok {
					calls[d.CallID] = d
				}
			}
		case core.EventToolResult:
			var d core.ToolResultData
			if e.DecodeData(&d) != nil || d.Projection().IsError {
				continue
			}
			c, ok := calls[d.CallID()]
			if !ok {
				continue
			}
			res := reg.Execute(ctx, core.Call{CallID: c.CallID, Name: c.Name, RawArguments: c.Arguments, SessionID: id, Cwd: ws,
				Emit: func(context.Context, string, any) error { return nil }})
			if res.IsError() {
				r.logger.Warn("rebuild the workspace: a recorded call failed now", logkey.SessionID, id, logkey.CallID, c.CallID,
					logkey.Tool, c.Name, logkey.Seq, e.Seq)
			}
		}
	}
}
