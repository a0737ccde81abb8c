package claudecode_test

import (
	"bufio"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"prism/sources/claudecode"
	"prism/sources/dsh"
)

// TestTailMemCountsSidechainLines: a main transcript's kept state holds
// its inline sidechain lines raw (read as child sessions at each Logs):
// Mem counts them, so a watcher's budget of kept states sees a transcript
// made mostly of a subagent's lines.
func TestTailMemCountsSidechainLines(t *testing.T) {
	const sid = "5b0e3c1a-0000-4000-8000-00000000f001"
	env := func(typ, uuid, parent string, side bool, n int) string {
		extra := `"isSidechain":false`
		if side {
			extra = `"isSidechain":true,"agentId":"s1"`
		}
		return fmt.Sprintf(`{"type":%q,%s,"userType":"external","cwd":"/w","sessionId":%q,"version":"2.1.3","gitBranch":"main","uuid":%q,"parentUuid":%s,"timestamp":"2026-05-01T10:%02d:%02d.000Z"`,
			typ, extra, sid, uuid, parent, n/60%60, n%60)
	}
	// transcript is the main lines and 200 of a subagent's (inline
	// sidechain lines when side is set), and the bytes of those 200.
	transcript := func(side bool) (string, int) {
		var b strings.Builder
		b.WriteString(env("user", "u0", "null", false, 0) + `,"message":{"role":"user","content":"Go"}}` + "\n")
		b.WriteString(env("assistant", "a1", `"u0"`, false, 1) + `,"requestId":"req_1","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"Task","input":{"description":"look","prompt":"Count"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":5}}}` + "\n")
		n := 0
		prev := `null`
		for i := range 200 {
			var line string
			if i == 0 {
				line = env("user", "s0", prev, side, 2) + `,"message":{"role":"user","content":"Count"}}` + "\n"
			} else {
				line = env("assistant", fmt.Sprintf("s%d", i), prev, side, 2+i) + fmt.Sprintf(`,"requestId":"req_s%d","message":{"id":"msg_s%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":%q}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":5}}}`, i, i, strings.Repeat("counting the files ", 100)) + "\n"
			}
			prev = fmt.Sprintf("%q", fmt.Sprintf("s%d", i))
			n += len(line)
			b.WriteString(line)
		}
		return b.String(), n
	}
	mem := func(text string, sessions int) int64 {
		tl := claudecode.Format().Tail(filepath.Join(t.TempDir(), sid+".jsonl"), dsh.Limits{MaxMemoryBytes: 1 << 30})
		if err := tl.Feed(bufio.NewReader(strings.NewReader(text))); err != nil {
			t.Fatal(err)
		}
		logs, _, err := tl.Logs()
		if err != nil {
			t.Fatal(err)
		}
		if len(logs) != sessions {
			t.Fatalf("%d sessions, want %d", len(logs), sessions)
		}
		return tl.Mem()
	}
	withSide, side := transcript(true)
	// Each sidechain line is held twice: as the main log's source/raw
	// event (its data the line) and raw for its child session.
	if got := mem(withSide, 2); got < 2*int64(side) {
		t.Errorf("Mem with %d bytes of sidechain lines = %d, want at least twice them (raw events and lines kept raw)", side, got)
	}
}
