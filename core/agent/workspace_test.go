package agent_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"prism/core"
	"prism/core/agent"
	"prism/core/model"
)

// createFailing is a store whose CreateSession fails: no session row is
// ever written.
type createFailing struct{ *memStore }

func (createFailing) CreateSession(context.Context, core.SessionHeader) error {
	return errors.New("disk full")
}

// TestStart_failureLeavesNoWorkspace: a session on a model without a
// seeded workspace gets a fresh directory under the workspace root; a
// Start that fails before the session exists leaves no directory behind,
// and one that succeeds has its directory, named in its header.
func TestStart_failureLeavesNoWorkspace(t *testing.T) {
	ctx := t.Context()
	reg := core.NewRegistry(quiet)
	root := t.TempDir()
	failing, err := agent.NewRunner(agent.RunnerConfig{Store: createFailing{newMemStore()}, Tools: reg,
		Models: scriptModels{[]model.Step{{Text: "hi"}}}, WorkspaceRoot: root, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = failing.Close() })
	if _, err := failing.Start(ctx, agent.StartRequest{Prompt: "x"}); err == nil {
		t.Fatal("Start on a store that cannot create sessions succeeded")
	}
	if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
		t.Errorf("the workspace root after a failed Start holds %v (%v); want nothing", entries, err)
	}

	// Two steps: the first turn leaves the script a step to play, so the
	// runner keeps the (empty) workspace — a played-out script's empty one
	// is removed when its turn ends, which would race with the Stat below.
	ok, err := agent.NewRunner(agent.RunnerConfig{Store: newMemStore(), Tools: reg,
		Models: scriptModels{[]model.Step{{Text: "hi"}, {Text: "again"}}}, WorkspaceRoot: root, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ok.Close() })
	id, err := ok.Start(ctx, agent.StartRequest{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ok.Status(id)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(st.Workspace); err != nil || !fi.IsDir() {
		t.Errorf("the started session's workspace %q: %v; want a directory", st.Workspace, err)
	}
}
