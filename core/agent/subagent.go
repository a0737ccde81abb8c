package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"prism/core"
	"prism/core/logkey"
	"prism/core/model"
	"prism/core/notes"
	"prism/core/tools"
)

// SubagentDescriptor is the data of the subagent/descriptor event a child
// session's log starts with, as dsh writes it (dsh-spec §7.1).
type SubagentDescriptor struct {
	Version int    `json:"version"`
	Mode    string `json:"mode"`
	Label   string `json:"label"`
}

// SubagentTool returns the subagent tool starting children through r
// (register it in the registry r runs: the tool and the runner need each
// other, so it is made once both exist).
func (r *Runner) SubagentTool() *core.Tool { return tools.NewSubagent(r.Spawn) }

// maxDepth returns the configured delegation cap.
func (r *Runner) maxDepth() int64 {
	if r.cfg.MaxDelegationDepth > 0 {
		return int64(r.cfg.MaxDelegationDepth)
	}
	return tools.DefaultMaxDelegationDepth
}

// Spawn runs one subagent call (tools.Spawner) of a session r runs: the
// child is a session of its own in the same store and workspace, its
// header naming the parent with origin "subagent" and its delegation
// depth, its log starting with subagent/descriptor. Once the descriptor is
// committed, the link note goes on the parent (Links). In the foreground
// the call waits for the child's first turn: its final text is the result;
// any other end than completed is the call's error, and the end of ctx
// (the parent's turn cancelled) cancels the child's turn with {kind:
// parent}. In the background it returns the child's id at once.
func (r *Runner) Spawn(ctx context.Context, a tools.SubagentArgs, run *core.Run) (tools.SubagentValue, error) {
	parent, err := r.get(run.SessionID)
	if err != nil {
		return tools.SubagentValue{}, fmt.Errorf("subagent: the calling session %s is not run by this server's agent: %w", run.SessionID, err)
	}
	ph := parent.sess.Header()
	depth := int64(1)
	if ph.DelegationDepth != nil {
		depth = *ph.DelegationDepth + 1
	}
	if cap := r.maxDepth(); depth > cap {
		return tools.SubagentValue{}, core.Errorf(core.CodeInvalid,
			"subagent: delegation depth cap reached: this session is at depth %d and subagents may nest at most %d deep; do the task yourself", depth-1, cap)
	}
	reg := r.cfg.Tools
	if a.Tools != nil {
		if reg, err = reg.Subset(a.Tools); err != nil {
			return tools.SubagentValue{}, core.Errorf(core.CodeInvalid, "subagent: tools: %v", err)
		}
	}
	m, name, err := r.childModel(parent, a.Model, a.Description)
	if err != nil {
		return tools.SubagentValue{}, fmt.Errorf("subagent: %w", err)
	}
	h := core.SessionHeader{ID: core.NewID(), Cwd: parent.info.Workspace, ParentSession: ph.ID,
		Origin: core.OriginSubagent, DelegationDepth: &depth}
	child, err := r.open(ctx, opening{what: "start session", header: h, model: m, name: name, tools: reg, before: func(sess *core.Session) error {
		if _, err := sess.Append(ctx, core.EventSubagentDescr,
			SubagentDescriptor{Version: 2, Mode: "one-shot", Label: a.Description}, core.AppendOptions{}); err != nil {
			return fmt.Errorf("subagent descriptor: %w", err)
		}
		return sess.Sync(ctx) // the child exists before the parent links it
	}})
	if err != nil {
		return tools.SubagentValue{}, fmt.Errorf("subagent %q did not start: %w", a.Description, err)
	}
	r.link(ctx, parent, run.CallID, child.id, a.Background)
	msg := core.NewUserMessage(core.NewID(), a.Prompt)
	if a.Background {
		if err := r.enqueueMessage(child, msg, nil); err != nil {
			return tools.SubagentValue{}, fmt.Errorf("subagent %s: %w", child.id, err)
		}
		return tools.SubagentValue{Child: child.id, Background: true}, nil
	}
	ended := make(chan turnOutcome, 1)
	if err := r.enqueueQueued(child, queued{msg: msg, parent: ctx, ended: ended}); err != nil {
		return tools.SubagentValue{}, fmt.Errorf("subagent %s: %w", child.id, err)
	}
	out := <-ended // the turn ends soon after ctx does: its end cancels it
	switch {
	case out.err != nil:
		return tools.SubagentValue{}, fmt.Errorf("subagent %s (%s) failed: %w", child.id, a.Description, out.err)
	case out.reason.Kind != core.TurnCompleted:
		return tools.SubagentValue{}, fmt.Errorf("subagent %s (%s) failed: its turn ended %s", child.id, a.Description, describeEnd(out.reason))
	}
	return tools.SubagentValue{Child: child.id, Text: finalText(child.sess.Events())}, nil
}

// childModel returns a child's model: the named one, else the one the
// parent's model chooses (the scripted model plays its child's script),
// else a fresh instance of the parent's.
func (r *Runner) childModel(parent *session, named, description string) (model.Model, string, error) {
	if named == "" {
		if cm, ok := parent.model.(model.ChildModeler); ok {
			return cm.ChildModel(description), parent.info.Model, nil
		}
		named = parent.info.Model
	}
	m, err := r.cfg.Models.New(named)
	if err != nil {
		return nil, "", core.Errorf(core.CodeInvalid, "model %q: %v", named, err)
	}
	return m, named, nil
}

// link writes the link note of a child on its parent, at the seq of the
// spawning call's tool/call. A failure is logged: the child runs anyway.
func (r *Runner) link(ctx context.Context, parent *session, callID, child string, background bool) {
	if r.cfg.Links == nil {
		return
	}
	at := int64(-1)
	events := parent.sess.Events()
	for i := len(events) - 1; i >= 0 && at < 0; i-- {
		var c core.ToolCall
		if events[i].Type == core.EventToolCall && json.Unmarshal(events[i].Data, &c) == nil && c.CallID == callID {
			at = events[i].Seq
		}
	}
	in, err := notes.Link(parent.id, callID, at, notes.LinkData{Child: child, Background: background})
	if err == nil {
		err = r.cfg.Links(ctx, in)
	}
	if err != nil {
		r.logger.Error("subagent link note", logkey.SessionID, parent.id, logkey.Err, err)
	}
}

// describeEnd words a turn end that is not completed.
func describeEnd(r core.TurnEndReason) string {
	s := r.Kind
	if r.Reason != nil {
		s += " (" + r.Reason.Kind + ")"
	}
	if r.Error != nil {
		s += ": " + r.Error.Message
	}
	return s
}

// finalText returns the text of the last assistant message in events.
func finalText(events []core.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != core.EventAssistantMessage {
			continue
		}
		var am core.AssistantMessage
		if err := json.Unmarshal(events[i].Data, &am); err != nil {
			continue
		}
		var sb strings.Builder
		for _, b := range am.Message.Content {
			if t, ok := b.(*core.TextBlock); ok {
				sb.WriteString(t.Text)
			}
		}
		return sb.String()
	}
	return ""
}
