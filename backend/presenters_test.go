package backend_test

import (
	"log/slog"
	"testing"

	"prism/backend"
	"prism/core"
)

// TestPresentersDrawCodexCards holds backend.Presenters to drawing a
// Codex rollout's shell call as a terminal card and its apply_patch as a
// diff, beside the built-in tools' own cards.
func TestPresentersDrawCodexCards(t *testing.T) {
	reg, err := backend.Presenters(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := reg.PresentCall("shell", `{"command":["bash","-lc","make test"],"workdir":"/repo"}`).(*core.TerminalCallView); !ok || v.Title != "make test" {
		t.Errorf("Codex shell call: %#v", v)
	}
	if _, ok := reg.PresentCall("apply_patch", "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n").(*core.DiffCallView); !ok {
		t.Error("Codex apply_patch call is not a diff card")
	}
	if _, ok := reg.PresentCall("bash", `{"command":"ls","description":"list"}`).(*core.TerminalCallView); !ok {
		t.Error("the built-in bash card is gone")
	}
}
