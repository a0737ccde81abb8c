package main

import (
	"context"
	"time"

	"prism/pgstore"
	"prism/web"
)

var _ web.SessionOwner = webRunner{}

// Owns implements web.SessionOwner: the runner takes follow-up messages
// for, and cancels turns of, only the sessions it started in this process —
// not imported or watched ones, nor those of a previous run.
func (w webRunner) Owns(id string) bool {
	_, err := w.r.Status(id)
	return err == nil
}

// clusterRunner is the runner of one node of several sharing a
// PostgreSQL database: sessions start here; a follow-up or a cancel for a
// session another node runs is forwarded to that node through the
// database; and this node acts on what the others forward to it.
type clusterRunner struct {
	local webRunner
	st    *pgstore.Store
}

var (
	_ web.Runner       = clusterRunner{}
	_ web.SessionOwner = clusterRunner{}
)

func newClusterRunner(local webRunner, st *pgstore.Store) clusterRunner {
	st.HandleCommands(func(ctx context.Context, c pgstore.Command) (bool, error) {
		if !local.Owns(c.SessionID) {
			return false, nil
		}
		if c.Kind == pgstore.CommandCancel {
			return true, local.Cancel(ctx, c.SessionID)
		}
		return true, local.SendMessage(ctx, c.SessionID, c.Body)
	})
	return clusterRunner{local: local, st: st}
}

// StartSession implements web.Runner: sessions run on the node that
// started them.
func (c clusterRunner) StartSession(ctx context.Context, req web.StartRequest) (string, error) {
	return c.local.StartSession(ctx, req)
}

// SendMessage implements web.Runner.
func (c clusterRunner) SendMessage(ctx context.Context, id, text string) error {
	if c.local.Owns(id) {
		return c.local.SendMessage(ctx, id, text)
	}
	return c.st.Forward(ctx, pgstore.Command{SessionID: id, Kind: pgstore.CommandMessage, Body: text})
}

// Cancel implements web.Runner.
func (c clusterRunner) Cancel(ctx context.Context, id string) error {
	if c.local.Owns(id) {
		return c.local.Cancel(ctx, id)
	}
	return c.st.Forward(ctx, pgstore.Command{SessionID: id, Kind: pgstore.CommandCancel})
}

// ownsTimeout bounds the database lookup behind Owns.
const ownsTimeout = 2 * time.Second

// Owns implements web.SessionOwner: a session this node or another one
// runs (its advisory lock is held) takes follow-ups and cancels here.
func (c clusterRunner) Owns(id string) bool {
	if c.local.Owns(id) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), ownsTimeout)
	defer cancel()
	running, err := c.st.Running(ctx, id)
	return err == nil && running
}
