package codex_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/sources/codex"
)

const forkID = "0199a1b2-c3d4-7e5f-8a9b-00000000f0f0"

// forkOf writes a forked rollout of the parent rollout's first n lines: the
// fork's session_meta, the parent's lines (its session_meta repeated), the
// fork's session_meta again, then the fork's own turn.
func forkOf(t *testing.T, parent []byte, n int) []byte {
	t.Helper()
	lines := strings.SplitAfter(string(parent), "\n")
	meta := `{"timestamp":"2026-05-03T08:00:00.000Z","type":"session_meta","payload":{"id":"` + forkID + `","forked_from_id":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","timestamp":"2026-05-03T08:00:00.000Z","cwd":"/home/ada/repo","originator":"codex_cli_rs","cli_version":"0.60.0","source":"cli","model_provider":"openai"}}` + "\n"
	own := `{"timestamp":"2026-05-03T08:00:01.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"f1"}}
{"timestamp":"2026-05-03T08:00:01.100Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Now try the other fix"}]}}
{"timestamp":"2026-05-03T08:00:02.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}}
{"timestamp":"2026-05-03T08:00:02.100Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"f1"}}
`
	return []byte(meta + strings.Join(lines[:n], "") + meta + own)
}

// TestForkSeedIsParentPrefix decodes a forked rollout: its inherited prefix
// becomes the seed — exactly the events of the parent's rollout cut at the
// same line — then session/end-seed, then the fork's own turn (numbered
// after the seed's); the header names the parent without origin and says
// the seed's length.
func TestForkSeedIsParentPrefix(t *testing.T) {
	parent, err := os.ReadFile(filepath.Join("testdata", "plain.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 15 // through the parent's task_complete
	prefix, err := codex.Decode(bytes.NewReader([]byte(strings.Join(strings.SplitAfter(string(parent), "\n")[:n], ""))), codex.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := codex.Decode(bytes.NewReader(forkOf(t, parent, n)), codex.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkValid(t, r)
	h := r.Header
	if h.ID != forkID || h.ParentSession != prefix.Header.ID || h.Origin != "" || h.SeedLength == nil || *h.SeedLength != int64(len(prefix.Events)) {
		t.Fatalf("fork header = %+v (seedLength %v), want parent %s, no origin, seedLength %d", h, h.SeedLength, prefix.Header.ID, len(prefix.Events))
	}
	for i, e := range prefix.Events {
		if g := r.Events[i]; g.Type != e.Type || !bytes.Equal(g.Data, e.Data) || g.Time != e.Time {
			t.Fatalf("seed event %d = %s %s, parent's %s %s", i, g.Type, g.Data, e.Type, e.Data)
		}
	}
	if e := r.Events[len(prefix.Events)]; e.Type != core.EventSessionEndSeed {
		t.Fatalf("after the seed: %s, want session/end-seed", e.Type)
	}
	var ts core.TurnStart
	rest := r.Events[len(prefix.Events)+1:]
	if len(rest) == 0 || rest[0].Type != core.EventTurnStart || json.Unmarshal(rest[0].Data, &ts) != nil || ts.Turn != 2 {
		t.Fatalf("the fork's own turn: %v", rest)
	}
}
