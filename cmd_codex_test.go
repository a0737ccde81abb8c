package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"prism/core/notes"
	"prism/db"
)

// TestCLI_importCodex imports Codex rollouts through the real command on a
// SQLite file: detected by content, the session id the rollout's, a grown
// file extended, the same file unchanged, a .jsonl.zst archive read like
// the plain file, and a corrupt archive refused with a message naming it
// while the other files still import.
func TestCLI_importCodex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "prism.db")
	const id = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	plain, err := os.ReadFile("sources/codex/testdata/plain.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(plain), "\n")
	file := filepath.Join(dir, "rollout-2026-05-01T10-00-00-"+id+".jsonl")
	importOnce := func(db string, args ...string) (code int, stdout, stderr string) {
		var out, errOut bytes.Buffer
		code = run(ctx, append([]string{"import", "--db", db}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	// Fifteen lines end the turn (task_complete); the sixteenth grows it.
	if err := os.WriteFile(file, []byte(strings.Join(lines[:15], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := importOnce(dbPath, file); code != 0 || !strings.HasPrefix(out, id+"\tcreated\t") {
		t.Fatalf("first import: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if err := os.WriteFile(file, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := importOnce(dbPath, file)
	if code != 0 || !strings.HasPrefix(out, id+"\textended\t") {
		t.Fatalf("grown file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	events := strings.TrimPrefix(out, id+"\textended\t")
	if code, out, errOut := importOnce(dbPath, file); code != 0 || out != id+"\tunchanged\t"+events {
		t.Fatalf("same file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// The archive of the same rollout, into a fresh store: the same line.
	var zbuf bytes.Buffer
	enc, err := zstd.NewWriter(&zbuf)
	if err != nil {
		t.Fatal(err)
	}
	enc.Write(plain)
	enc.Close()
	archive := filepath.Join(dir, "rollout-2026-05-01T10-00-00-"+id+".jsonl.zst")
	if err := os.WriteFile(archive, zbuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// A corrupt archive: the stream cut in its middle and garbage after.
	z := zbuf.Bytes()
	corrupt := append(append([]byte{}, z[:len(z)/2]...), bytes.Repeat([]byte{0xff}, 64)...)
	bad := filepath.Join(dir, "rollout-2026-05-02T10-00-00-0199a1b2-c3d4-7e5f-8a9b-00000000bad0.jsonl.zst")
	if err := os.WriteFile(bad, corrupt, 0o644); err != nil {
		t.Fatal(err)
	}
	db2 := filepath.Join(dir, "second.db")
	code, out, errOut = importOnce(db2, bad, archive)
	if code != 1 || out != id+"\tcreated\t"+events {
		t.Errorf("archive: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, bad+":") || !strings.Contains(errOut, "zstd") {
		t.Errorf("corrupt archive: stderr %q does not name the file and its zstd error", errOut)
	}
	// Detection by content, whatever the name.
	renamed := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(renamed, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := importOnce(db2, renamed); code != 0 || out != id+"\tunchanged\t"+events {
		t.Errorf("renamed rollout: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestCLI_importCodexChildThread imports a parent rollout that spawned a
// thread (spawn_agent, whose output names the child's id) and the child's
// rollout, whose session_meta names its parent thread: the child is a
// child session (origin subagent) and the spawning call has a link note;
// a child whose parent's rollout is not in the tree imports top-level,
// its source info naming the missing parent.
func TestCLI_importCodexChildThread(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	const parent = "0196a1b2-0000-7000-8000-000000000001"
	const child = "0196a1b2-0000-7000-8000-000000000002"
	const lost = "0196a1b2-0000-7000-8000-000000000003"
	pText := `{"timestamp":"2026-05-01T10:00:00.000Z","type":"session_meta","payload":{"id":"` + parent + `","timestamp":"2026-05-01T10:00:00.000Z","cwd":"/repo","originator":"codex_cli_rs","cli_version":"0.150.0","source":"cli","model_provider":"openai","git":{"branch":"main"}}}
{"timestamp":"2026-05-01T10:00:01.010Z","type":"event_msg","payload":{"type":"task_started"}}
{"timestamp":"2026-05-01T10:00:01.020Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Why does TestParse fail?"}]}}
{"timestamp":"2026-05-01T10:00:08.000Z","type":"response_item","payload":{"type":"function_call","name":"spawn_agent","arguments":"{\"message\":\"Find the commit that broke TestParse\",\"agent_type\":\"explorer\"}","call_id":"call_C"}}
{"timestamp":"2026-05-01T10:00:08.200Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_C","output":"{\"agent_id\":\"` + child + `\",\"nickname\":\"Lorentz\"}"}}
{"timestamp":"2026-05-01T10:00:41.000Z","type":"event_msg","payload":{"type":"task_complete"}}
`
	cText := func(id string) string {
		return `{"timestamp":"2026-05-01T10:00:08.100Z","type":"session_meta","payload":{"id":"` + id + `","timestamp":"2026-05-01T10:00:08.100Z","cwd":"/repo","originator":"codex_cli_rs","cli_version":"0.150.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":"` + parent + `","depth":1,"agent_nickname":"Lorentz","agent_role":"explorer"}}},"model_provider":"openai"}}
{"timestamp":"2026-05-01T10:00:08.300Z","type":"event_msg","payload":{"type":"task_started"}}
{"timestamp":"2026-05-01T10:00:08.400Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Find the commit that broke TestParse"}]}}
{"timestamp":"2026-05-01T10:00:09.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"abc123"}]}}
{"timestamp":"2026-05-01T10:00:09.100Z","type":"event_msg","payload":{"type":"task_complete"}}
`
	}
	day := filepath.Join(root, "2026", "05", "01")
	other := filepath.Join(t.TempDir(), "2026", "05", "01")
	for _, d := range []string{day, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pFile := filepath.Join(day, "rollout-2026-05-01T10-00-00-"+parent+".jsonl")
	cFile := filepath.Join(day, "rollout-2026-05-01T10-00-08-"+child+".jsonl")
	lFile := filepath.Join(other, "rollout-2026-05-01T10-00-08-"+lost+".jsonl")
	for f, text := range map[string]string{pFile: pText, cFile: cText(child), lFile: cText(lost)} {
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dbPath := filepath.Join(t.TempDir(), "prism.db")
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"import", "--db", dbPath, pFile, cFile, lFile}, &out, &errOut); code != 0 {
		t.Fatalf("import: exit %d: %s %s", code, out.String(), errOut.String())
	}
	st, err := db.Open(ctx, dbPath, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := st.LoadSession(ctx, child)
	if err != nil || l.Info.ParentID != parent {
		t.Fatalf("child: %+v, %v", l, err)
	}
	links, err := st.Notes(ctx, parent, notes.Query{Kind: notes.KindLink})
	if err != nil || len(links) != 1 || links[0].CallID != "call_C" || !strings.Contains(string(links[0].Data), `"child":"`+child+`"`) {
		t.Errorf("link notes of the parent: %+v, %v", links, err)
	}
	l, err = st.LoadSession(ctx, lost)
	if err != nil {
		t.Fatal(err)
	}
	info, found, err := st.SourceInfo(ctx, lost)
	if l.Info.ParentID != "" || !found || err != nil || info.MissingParent != parent || info.Kind != "codex" || info.Version != "0.150.0" {
		t.Errorf("child without its parent's rollout: parent %q, source %+v (%v, %v)", l.Info.ParentID, info, found, err)
	}
}
