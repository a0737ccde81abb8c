package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"prism/core"
	"prism/core/approval"
	"prism/core/logkey"
	"prism/store"
	"prism/web"
)

// Cluster is what a node of several sharing one store needs of it
// (pgstore.Store): forwarding commands to the node that runs a session,
// acting on those forwarded here, whether this node or any holds a
// session, and the sessions waiting for an approval.
type Cluster interface {
	// HandleCommands sets what this node does with forwarded commands.
	HandleCommands(fn store.CommandHandler)
	// Forward hands a command to the node that runs its session and
	// returns that node's reply.
	Forward(ctx context.Context, c store.Command) (string, error)
	// Holds reports whether this node holds session id's lock.
	Holds(id string) bool
	// Running reports whether some node runs session id.
	Running(ctx context.Context, id string) (bool, error)
	// Awaiting lists the sessions whose logs show an approval waiting.
	Awaiting(ctx context.Context) ([]string, error)
	// LoadSession returns a session's row and log.
	LoadSession(ctx context.Context, id string) (*store.SessionLog, error)
}

// LocalRunner is this node's own runner: it runs the sessions it started
// (AgentRunner).
type LocalRunner interface {
	web.Runner
	web.SessionOwner
}

// clusterRunner is the runner of one node of several sharing a
// PostgreSQL database: sessions start here; a follow-up or a cancel for a
// session another node runs is forwarded to that node through the
// database; and this node acts on what the others forward to it.
type clusterRunner struct {
	local LocalRunner
	st    Cluster
}

var (
	_ web.Runner       = clusterRunner{}
	_ web.SessionOwner = clusterRunner{}
)

// NewClusterRunner wraps this node's runner and approval service for a
// cluster, and sets what this node does with the commands other nodes
// forward to it: follow-ups, cancels, approval decisions and policies for
// the sessions it runs. The runner it returns is a web.SessionOwner too.
func NewClusterRunner(local LocalRunner, approvals *approval.Service, st Cluster, log *slog.Logger) (web.Runner, web.Approvals) {
	cr := clusterRunner{local: local, st: st}
	st.HandleCommands(func(ctx context.Context, c store.Command) (string, bool, error) {
		if !cr.runsHere(c.SessionID) {
			return "", false, nil
		}
		switch c.Kind {
		case store.CommandCancel:
			return "", true, local.Cancel(ctx, c.SessionID)
		case store.CommandMessage:
			return "", true, local.SendMessage(ctx, c.SessionID, c.Body)
		case store.CommandPolicy:
			return "", true, approvals.SetPolicy(ctx, c.SessionID, c.Body)
		case store.CommandApproval:
			reply, err := decideForwarded(ctx, approvals, c)
			return reply, true, err
		}
		return "", true, core.Errorf(core.CodeInvalid, "unknown forwarded command %q", c.Kind)
	})
	return cr, clusterApprovals{local: approvals, owns: cr.runsHere, st: st, log: log}
}

// forwardedDecision is the body of a forwarded approval decision.
type forwardedDecision struct {
	ApprovalID string `json:"approvalId"`
	Approve    bool   `json:"approve"`
	Note       string `json:"note,omitempty"`
	By         string `json:"by,omitempty"`
}

// decideForwarded takes a decision another node forwarded; its reply is
// the approval.Decided as JSON — the winner's, beside the refusal, when
// the approval was decided already.
func decideForwarded(ctx context.Context, approvals *approval.Service, c store.Command) (string, error) {
	var f forwardedDecision
	if err := json.Unmarshal([]byte(c.Body), &f); err != nil {
		return "", core.Errorf(core.CodeInvalid, "forwarded approval decision: %v", err)
	}
	d, err := approvals.Decide(ctx, c.SessionID, f.ApprovalID, approval.Decision{Approve: f.Approve, Note: f.Note, By: f.By})
	var already *approval.AlreadyDecidedError
	if errors.As(err, &already) {
		d = already.Decided
	} else if err != nil {
		return "", err
	}
	b, merr := json.Marshal(d)
	if merr != nil {
		return "", merr
	}
	return string(b), err
}

// StartSession implements web.Runner: sessions run on the node that
// started them.
func (c clusterRunner) StartSession(ctx context.Context, req web.StartRequest) (string, error) {
	return c.local.StartSession(ctx, req)
}

// ForkSession implements web.Forker: a fork runs on the node that made
// it, as a started session does.
func (c clusterRunner) ForkSession(ctx context.Context, req web.ForkRequest) (string, error) {
	f, ok := c.local.(web.Forker)
	if !ok {
		return "", core.Errorf(core.CodeUnavailable, "this node's runner cannot fork sessions")
	}
	return f.ForkSession(ctx, req)
}

// runsHere reports whether this node runs session id: its runner started
// it and the node still holds the session's lock — not when an append
// failed (the database was unreachable, say): the session's turn is over
// and another node's sweep, or this one's, repairs it.
func (c clusterRunner) runsHere(id string) bool {
	return c.local.Owns(id) && c.st.Holds(id)
}

// SendMessage implements web.Runner.
func (c clusterRunner) SendMessage(ctx context.Context, id, text string) error {
	if c.runsHere(id) {
		return c.local.SendMessage(ctx, id, text)
	}
	_, err := c.st.Forward(ctx, store.Command{SessionID: id, Kind: store.CommandMessage, Body: text})
	return err
}

// Cancel implements web.Runner.
func (c clusterRunner) Cancel(ctx context.Context, id string) error {
	if c.runsHere(id) {
		return c.local.Cancel(ctx, id)
	}
	_, err := c.st.Forward(ctx, store.Command{SessionID: id, Kind: store.CommandCancel})
	return err
}

// ownsTimeout bounds the database lookup behind Owns.
const ownsTimeout = 2 * time.Second

// Owns implements web.SessionOwner: a session this node or another one
// runs (its advisory lock is held) takes follow-ups and cancels here.
func (c clusterRunner) Owns(id string) bool {
	if c.runsHere(id) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), ownsTimeout)
	defer cancel()
	running, err := c.st.Running(ctx, id)
	return err == nil && running
}

// clusterApprovals is the approval service of one node of a cluster: it
// decides the approvals of the sessions this node runs, forwards decisions
// and policies for sessions another node runs to that node, and lists what
// waits on every node.
type clusterApprovals struct {
	local *approval.Service
	owns  func(id string) bool
	st    Cluster
	log   *slog.Logger
}

var _ web.Approvals = clusterApprovals{}

// Decide implements web.Approvals. A decision the owner refuses as taken
// already comes back as an *approval.AlreadyDecidedError naming the
// winner; an approval of a session no node runs is core.CodeNotFound.
func (a clusterApprovals) Decide(ctx context.Context, id, approvalID string, d approval.Decision) (approval.Decided, error) {
	if a.owns(id) {
		return a.local.Decide(ctx, id, approvalID, d)
	}
	body, err := json.Marshal(forwardedDecision{ApprovalID: approvalID, Approve: d.Approve, Note: d.Note, By: d.By})
	if err != nil {
		return approval.Decided{}, err
	}
	reply, err := a.st.Forward(ctx, store.Command{SessionID: id, Kind: store.CommandApproval, Body: string(body)})
	var got approval.Decided
	if reply != "" {
		if jerr := json.Unmarshal([]byte(reply), &got); jerr != nil {
			return approval.Decided{}, fmt.Errorf("approval %s: the owner's reply: %w", approvalID, jerr)
		}
	}
	switch {
	case err == nil:
		return got, nil
	case core.ErrorCode(err) == core.CodeConflict && got.ID == approvalID:
		return approval.Decided{}, &approval.AlreadyDecidedError{Decided: got}
	}
	return approval.Decided{}, err
}

// SetPolicy implements web.Approvals.
func (a clusterApprovals) SetPolicy(ctx context.Context, id, policy string) error {
	if a.owns(id) {
		return a.local.SetPolicy(ctx, id, policy)
	}
	_, err := a.st.Forward(ctx, store.Command{SessionID: id, Kind: store.CommandPolicy, Body: policy})
	return err
}

// pendingTimeout bounds the database reads behind Pending.
const pendingTimeout = 5 * time.Second

// Pending implements web.Approvals: this node's waiting approvals, and
// those the logs of the sessions other nodes run show waiting, oldest
// first. When the database cannot be read, this node's alone.
func (a clusterApprovals) Pending() []approval.Pending {
	out := a.local.Pending()
	ctx, cancel := context.WithTimeout(context.Background(), pendingTimeout)
	defer cancel()
	ids, err := a.st.Awaiting(ctx)
	if err != nil {
		a.log.Warn("approvals of other nodes not listed", logkey.Err, err)
		return out
	}
	for _, id := range ids {
		if a.owns(id) {
			continue
		}
		l, err := a.st.LoadSession(ctx, id)
		if err != nil {
			a.log.Warn("approvals of a session not listed", logkey.SessionID, id, logkey.Err, err)
			continue
		}
		out = append(out, approval.Waiting(id, l.Events)...)
	}
	slices.SortStableFunc(out, func(x, y approval.Pending) int {
		if x.AskedAt != y.AskedAt {
			return int(x.AskedAt - y.AskedAt)
		}
		return int(x.Seq - y.Seq)
	})
	return out
}
