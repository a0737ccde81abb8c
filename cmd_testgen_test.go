package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/core/notes"
	"prism/db"
	"prism/views/testgen"
)

// testgenSession stores a session of real calls in a SQLite file and
// returns its path: read, edit and note (call_read, call_edit,
// call_note), a read of a missing file (call_err), a tool prism does not
// know (call_greet), a read whose result is 5 MB (call_big), an MCP
// server's tool whose server is gone (call_mcp) and a call
// the model asked for that was never logged, closed by crash repair
// (call_lost: a result-only card).
func testgenSession(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := backend.Presenters(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n", 5<<20/64)
	b := coretest.NewBuilder(1767225600000)
	b.TurnStart().User("Go.").StepStart().Assistant("",
		[3]string{"call_read", "read", `{"file_path":"a.txt"}`},
		[3]string{"call_edit", "edit", `{"file_path":"a.txt","old_string":"beta","new_string":"gamma"}`},
		[3]string{"call_note", "note", `{"title":"Plan"}`},
		[3]string{"call_err", "read", `{"file_path":"missing.txt"}`},
		[3]string{"call_greet", "greet", `{"name":"Ada"}`},
		[3]string{"call_big", "read", `{"file_path":"big.txt"}`},
		[3]string{"call_mcp", "mcp__files__read_file", `{"path":"a.txt"}`})
	b.Exec(ctx, reg, ws, "call_read", "read", `{"file_path":"a.txt"}`)
	b.Exec(ctx, reg, ws, "call_edit", "edit", `{"file_path":"a.txt","old_string":"beta","new_string":"gamma"}`)
	b.Exec(ctx, reg, ws, "call_note", "note", `{"title":"Plan"}`)
	b.Exec(ctx, reg, ws, "call_err", "read", `{"file_path":"missing.txt"}`)
	b.Call("call_greet", "greet", `{"name":"Ada"}`).Result("call_greet", "Hello, Ada!", false, map[string]string{"name": "Ada"}, nil)
	b.Call("call_big", "read", `{"file_path":"big.txt"}`).Result("call_big", big, false, nil, nil)
	b.Call("call_mcp", "mcp__files__read_file", `{"path":"a.txt"}`).Result("call_mcp", "alpha", false, map[string]string{"server": "files", "tool": "read_file"}, nil)
	b.StepEnd().StepStart().Assistant("", [3]string{"call_lost", "note", `{"title":"Lost"}`}).Repair()

	dbPath := filepath.Join(t.TempDir(), "prism.db")
	st, err := db.Open(ctx, dbPath, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateSession(ctx, core.SessionHeader{ID: "rec", CreatedAt: 1767225600000, Cwd: ws}); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "rec", b.Events); err != nil {
		t.Fatal(err)
	}
	return dbPath
}

// testgenModule makes a module that uses prismtest, as prismtest's
// outside module does: greetmod's go.mod with its own name and prism
// replaced by this repository; its go.sum is greetmod's with prism's own,
// since the test of an MCP tool imports prism/mcp and so the MCP SDK.
func testgenModule(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod, err := os.ReadFile("prismtest/testdata/greetmod/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := strings.Replace(string(mod), "module example.com/greet", "module example.com/saved", 1)
	m = strings.Replace(m, "replace prism => ../../..", "replace prism => "+root, 1)
	if m == string(mod) || !strings.Contains(m, root) {
		t.Fatalf("greetmod's go.mod changed shape: %s", mod)
	}
	var sum []byte
	for _, p := range []string{"prismtest/testdata/greetmod/go.sum", "go.sum"} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sum = append(sum, data...)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(m), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// goTest runs go test in the module dir and returns its output and
// whether it passed. The module's go.mod may gain the requirements its
// MCP test brings (-mod=mod), from the module cache only (GOPROXY=off).
func goTest(t *testing.T, dir string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"test", "-count=1"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("go test %v: %v\n%s", args, err, out)
		}
	}
	return string(out), err == nil
}

// TestTestgen_generatedTestsRun: prism testgen writes tests of recorded
// read, edit and note calls (and of a failed call, a result-only card and
// a 5 MB result, and of an MCP tool without its server) into a package of a module that uses prismtest; go test
// passes there. After a presenter change — simulated by editing a golden
// and a recording — it fails naming the card and the field; go test
// -update rewrites the goldens and it passes again. A test for a tool
// prism does not know fails until its tool is registered on the marked
// line.
func TestTestgen_generatedTestsRun(t *testing.T) {
	dbPath := testgenSession(t)
	mod := testgenModule(t)
	pkg := filepath.Join(mod, "saved")
	for _, call := range []string{"call_read", "call_edit", "call_note", "call_err", "call_lost", "call_big", "call_mcp"} {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), []string{"testgen", "--db", dbPath, "rec", call, "-o", pkg}, &out, &errOut); code != 0 {
			t.Fatalf("testgen %s: exit %d: %s", call, code, errOut.String())
		}
		if n := strings.Count(out.String(), "\n"); n != 3 {
			t.Errorf("testgen %s: printed %d paths, want 3: %q", call, n, out.String())
		}
	}
	var errOut bytes.Buffer
	if code := run(t.Context(), []string{"testgen", "--db", dbPath, "rec", "call_greet", "-o", filepath.Join(mod, "greet")}, new(bytes.Buffer), &errOut); code != 0 ||
		!strings.Contains(errOut.String(), `prism does not know tool "greet"`) {
		t.Fatalf("testgen of an unknown tool: exit %d, stderr %q", code, errOut.String())
	}
	read := func(p string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(mod, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	goldenRead := read("saved/testdata/read_call_read.golden")
	if !strings.Contains(goldenRead, `"Read a.txt"`) || !strings.Contains(goldenRead, "{cwd}") {
		t.Errorf("the read golden does not hold the card's title and {cwd}:\n%s", goldenRead)
	}
	if src := read("saved/note_call_note_test.go"); !strings.Contains(src, "prismtest.Rerun(t, reg, rec)") || !strings.Contains(src, "package saved\n") {
		t.Errorf("the note test does not rerun the pure tool, or names another package:\n%s", src)
	}
	if src := read("saved/read_call_read_test.go"); strings.Contains(src, "Rerun") || strings.Contains(src, "TODO") {
		t.Errorf("the read test reruns a tool with side effects or has a TODO:\n%s", src)
	}
	if src := read("saved/mcp_files_read_file_call_mcp_test.go"); !strings.Contains(src, `mcp.Standin(rec.Tool, "", mcp.Presenter{})`) || strings.Contains(src, "TODO") || strings.Contains(src, "Rerun") {
		t.Errorf("the MCP tool's test does not register its stand-in, or has a TODO or a rerun:\n%s", src)
	}
	if src := read("greet/greet_call_greet_test.go"); strings.Count(src, testgen.TODOMarker) != 1 {
		t.Errorf("the greet test lacks its one marked line:\n%s", src)
	}
	if g := read("saved/testdata/read_call_err.golden"); !strings.Contains(g, `data-state="error"`) || !strings.Contains(read("saved/testdata/read_call_err.call.json"), `"code": "`) {
		t.Errorf("the failed call's golden is not its error card, or its recording lacks the error identity:\n%s", g)
	}
	if g := read("saved/testdata/note_call_lost.golden"); !strings.Contains(g, testgen.PendingHeading+"\n"+testgen.NoPending) {
		t.Errorf("the result-only golden does not say it has no pending card:\n%s", g)
	}
	rec, big := read("saved/testdata/read_call_big.call.json"), read("saved/testdata/read_call_big.golden")
	cut := regexp.MustCompile(`"showing [0-9,]+ of 81,920 lines"`)
	if len(rec) < 5<<20 || len(big) > 1<<20 || !cut.MatchString(big) || !strings.Contains(big, `data-testid="download-content"`) {
		t.Errorf("5 MB result: recording %d bytes, golden %d bytes, says what it shows: %v, links the full content: %v",
			len(rec), len(big), cut.MatchString(big), strings.Contains(big, `data-testid="download-content"`))
	}
	if src := read("saved/note_call_lost_test.go"); strings.Contains(src, "Rerun") {
		t.Errorf("the result-only note call reruns, though its result is crash repair's:\n%s", src)
	}

	// The generated tests pass; the unknown tool's fails with directions.
	out, ok := goTest(t, mod, "./...")
	if ok || !regexp.MustCompile(`(?m)^ok\s+example.com/saved/saved\b`).MatchString(out) ||
		!strings.Contains(out, `tool "greet" is not registered: register it on the line marked "TODO: register your tool here" in greet_call_greet_test.go`) {
		t.Fatalf("go test: want saved to pass and greet to fail with directions:\n%s", out)
	}

	// A presenter change: the read card's title, and the note's recorded
	// content (its rerun gives the tool's real content).
	golden := filepath.Join(pkg, "testdata", "read_call_read.golden")
	_, completed, _ := strings.Cut(goldenRead, testgen.CompletedHeading)
	changed := strings.Replace(completed, `"Read a.txt"`, `"Read the file a.txt"`, 1)
	if err := os.WriteFile(golden, []byte(strings.Replace(goldenRead, completed, changed, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	noteRec := filepath.Join(pkg, "testdata", "note_call_note.call.json")
	orig := read("saved/testdata/note_call_note.call.json")
	if err := os.WriteFile(noteRec, []byte(strings.Replace(orig, "line two", "line 2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, ok = goTest(t, mod, "./saved/")
	for _, want := range []string{
		`the completed card differs from golden testdata/read_call_read.golden at article[data-testid=tool-card] > header.card-head > span.title: golden "Read the file a.txt", got "Read a.txt"`,
		"--- FAIL: TestRecordedReadCallRead",
		"--- FAIL: TestRecordedNoteCallNote",
		"run again, its content differs from the recording",
	} {
		if ok || !strings.Contains(out, want) {
			t.Errorf("go test after a presenter change: want a failure with %q:\n%s", want, out)
		}
	}

	// -update rewrites the goldens from this build's cards; the note's
	// rerun still holds the recording to the tool's real result.
	if out, ok := goTest(t, mod, "./saved/", "-run", "TestRecordedRead", "-update"); !ok {
		t.Fatalf("go test -update: %s", out)
	}
	if got := read("saved/testdata/read_call_read.golden"); got != goldenRead {
		t.Errorf("-update did not rewrite the golden as testgen wrote it:\n%s", got)
	}
	if err := os.WriteFile(noteRec, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, ok := goTest(t, mod, "./saved/"); !ok {
		t.Errorf("go test after -update: %s", out)
	}
}

// TestTestgen_badInput: a call the session does not have exits with status
// 1 naming it (an unknown session too), a usage mistake exits with 2,
// and files that exist are kept unless --force.
func TestTestgen_badInput(t *testing.T) {
	dbPath := testgenSession(t)
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"testgen", "--db", dbPath, "rec", "call_nope", "-o", dir}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), `session "rec" has no call "call_nope"`) {
		t.Errorf("an unknown call: exit %d, stderr %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run(t.Context(), []string{"testgen", "--db", dbPath, "nosuch", "call_read", "-o", dir}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "nosuch") {
		t.Errorf("an unknown session: exit %d, stderr %q", code, errOut.String())
	}
	if code := run(t.Context(), []string{"testgen", "--db", dbPath, "rec", "call_read"}, &out, &errOut); code != 2 {
		t.Errorf("no -o: exit %d, want 2", code)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed runs wrote %d files", len(entries))
	}
	args := []string{"testgen", "--db", dbPath, "rec", "call_note", "-o", dir}
	if code := run(t.Context(), args, &out, &errOut); code != 0 {
		t.Fatalf("testgen: exit %d: %s", code, errOut.String())
	}
	errOut.Reset()
	if code := run(t.Context(), args, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "exists: --force overwrites it") {
		t.Errorf("a second run: exit %d, stderr %q", code, errOut.String())
	}
	if code := run(t.Context(), append(args, "--force"), &out, &errOut); code != 0 {
		t.Errorf("--force: exit %d: %s", code, errOut.String())
	}
	if src, err := os.ReadFile(filepath.Join(dir, "note_call_note_test.go")); err != nil || !strings.Contains(string(src), "\npackage "+testgen.PackageName(filepath.Base(dir))+"\n") {
		t.Errorf("a test in a directory without Go files is not of a package named after it (%v):\n%s", err, src)
	}

	// In a package's directory the test is the package's external test.
	pkgDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(pkgDir, "greet.go"), []byte("package greet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run(t.Context(), []string{"testgen", "--db", dbPath, "rec", "call_read", "-o", pkgDir, "--name", "read_a"}, &out, &errOut); code != 0 {
		t.Fatalf("testgen into a package: exit %d: %s", code, errOut.String())
	}
	if src, err := os.ReadFile(filepath.Join(pkgDir, "read_a_test.go")); err != nil || !strings.Contains(string(src), "\npackage greet_test\n") {
		t.Errorf("the test in package greet's directory is not greet_test (%v):\n%s", err, src)
	}
}

// TestTestgen_label: prism testgen --label wrong writes a test of every
// call labelled wrong (case-insensitive), in every session, each under a
// name of its own, and of no other — not a call labelled slow, not one
// whose wrong label was removed — says on stderr
// that a label on the whole session has no call, and the tests it wrote
// pass. No labelled call exits with 1; --label with SESSION_ID CALL_ID is
// a usage mistake (2).
func TestTestgen_label(t *testing.T) {
	dbPath := testgenSession(t)
	ctx := t.Context()
	st, err := db.Open(ctx, dbPath, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A second session with the same calls: its labelled read gets a
	// name of its own.
	l, err := st.LoadSession(ctx, "rec")
	if err != nil {
		t.Fatal(err)
	}
	h := l.Info.Header
	h.ID, h.CreatedAt = "rec2", h.CreatedAt+1000
	if err := st.CreateSession(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "rec2", l.Events); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ session, call, label string }{
		{"rec", "call_read", "Wrong"}, {"rec", "call_note", "wrong"}, {"rec", "call_edit", "slow"}, {"rec", "", "wrong"}, {"rec", "call_err", "wrong"},
		{"rec2", "call_read", "wrong"},
	} {
		n, err := st.PutNote(ctx, notes.Input{Session: l.session, Kind: notes.KindLabel, CallID: l.call, Data: json.RawMessage(`{"label":"` + l.label + `"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if l.call == "call_err" {
			if _, err := st.RemoveNote(ctx, l.session, n.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	st.Close()

	mod := testgenModule(t)
	pkg := filepath.Join(mod, "saved")
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"testgen", "--db", dbPath, "--label", "wrong", "-o", pkg}, &out, &errOut); code != 0 {
		t.Fatalf("testgen --label wrong: exit %d: %s", code, errOut.String())
	}
	var want []string
	// Sessions come newest first: rec2's read, then rec's calls.
	for _, n := range []string{"read_call_read", "read_call_read_2", "note_call_note"} {
		want = append(want, filepath.Join(pkg, n+"_test.go"), filepath.Join(pkg, "testdata", n+".call.json"), filepath.Join(pkg, "testdata", n+".golden"))
	}
	if got := strings.Fields(out.String()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("testgen --label wrong printed:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
	}
	var written []string
	filepath.WalkDir(pkg, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			written = append(written, p)
		}
		return err
	})
	if len(written) != len(want) {
		t.Errorf("wrote %d files, want %d: %q", len(written), len(want), written)
	}
	if !strings.Contains(errOut.String(), `session rec has the label "wrong" on the whole session, not on a call: skipped`) {
		t.Errorf("stderr does not say the session's label was skipped: %q", errOut.String())
	}
	if res, ok := goTest(t, mod, "./saved/"); !ok {
		t.Errorf("go test of the labelled calls' tests: %s", res)
	}

	// A second run refuses the files that exist.
	errOut.Reset()
	if code := run(ctx, []string{"testgen", "--db", dbPath, "--label", "WRONG", "-o", pkg}, new(bytes.Buffer), &errOut); code != 1 || !strings.Contains(errOut.String(), "exists: --force overwrites it") {
		t.Errorf("a second run: exit %d, stderr %q", code, errOut.String())
	}

	dir := t.TempDir()
	errOut.Reset()
	if code := run(ctx, []string{"testgen", "--db", dbPath, "--label", "flaky", "-o", dir}, new(bytes.Buffer), &errOut); code != 1 ||
		!strings.Contains(errOut.String(), `no call has the label "flaky"`) {
		t.Errorf("a label no call has: exit %d, stderr %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run(ctx, []string{"testgen", "--db", dbPath, "--label", "wrong", "rec", "call_read", "-o", dir}, new(bytes.Buffer), &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "mutually exclusive") {
		t.Errorf("--label with SESSION_ID CALL_ID: exit %d, stderr %q", code, errOut.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed runs wrote %d files", len(entries))
	}
}
