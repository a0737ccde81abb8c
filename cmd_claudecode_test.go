package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLI_importClaudeCode imports Claude Code transcripts through the real
// command on a SQLite file: detection by content, the line per session, a
// grown file extended, the same file unchanged, malformed lines reported
// with their numbers, a pending last call repaired, --as, and import →
// export → import round-tripping byte for byte.
func TestCLI_importClaudeCode(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "prism.db")
	const id = "7d3e0c1a-0000-4000-8000-00000000c0de"
	plain, err := os.ReadFile("sources/claudecode/testdata/plain.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(plain), "\n")
	file := filepath.Join(dir, id+".jsonl")
	importOnce := func(args ...string) (code int, stdout, stderr string) {
		var out, errOut bytes.Buffer
		code = run(ctx, append([]string{"import", "--db", dbPath}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}

	// The first eight lines end the turn; the ninth (turn_duration) grows it.
	if err := os.WriteFile(file, []byte(strings.Join(lines[:8], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := importOnce(file); code != 0 || out != id+"\tcreated\t13 events\n" {
		t.Fatalf("first import: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if err := os.WriteFile(file, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := importOnce(file); code != 0 || out != id+"\textended\t14 events\n" {
		t.Fatalf("grown file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := importOnce(file); code != 0 || out != id+"\tunchanged\t14 events\n" {
		t.Fatalf("same file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// Malformed lines are named and the rest imports; a last call without
	// its result is crash-repaired; --as takes a copy.
	code, out, errOut := importOnce("sources/claudecode/testdata/unknown.jsonl", "--as", "cc-unknown")
	if code != 0 || out != "cc-unknown\tcreated\t12 events\n" ||
		!strings.Contains(errOut, "unknown.jsonl: session cc-unknown: line 4: not a JSON object (kept raw)") ||
		!strings.Contains(errOut, "line 6: not a JSON object (kept raw)") {
		t.Errorf("malformed lines: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = importOnce("sources/claudecode/testdata/errors.jsonl", "--as", "cc-errors")
	if code != 0 || out != "cc-errors\tcreated\t21 events\n" || !strings.Contains(errOut, "appended 3 crash-repair events") {
		t.Errorf("open last turn: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// Another transcript under a stored id is a conflict with the way out;
	// --replace takes it.
	code, _, errOut = importOnce(file, "--as", "cc-errors")
	if code != 1 || !strings.Contains(errOut, "session cc-errors already exists with a different") || !strings.Contains(errOut, "--replace") {
		t.Errorf("conflict: exit %d, stderr %q", code, errOut)
	}
	if code, out, errOut := importOnce(file, "--as", "cc-errors", "--replace"); code != 0 || out != "cc-errors\treplaced\t14 events\n" {
		t.Errorf("--replace: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// A file past the memory budget fails, naming it and the line, and
	// stores nothing of it.
	long := filepath.Join(dir, "long.jsonl")
	os.WriteFile(long, []byte(lines[2]+`{"type":"user","sessionId":"s2","message":{"role":"user","content":"`+strings.Repeat("x", 2<<20)+`"}}`+"\n"), 0o644)
	code, _, errOut = importOnce("--import-memory", "1", long)
	if code != 1 || !strings.Contains(errOut, "long.jsonl: line 2: decoded events exceed the memory budget of 1 MiB") {
		t.Errorf("over budget: exit %d, stderr %q", code, errOut)
	}
	var none, noneErr bytes.Buffer
	if code := run(ctx, []string{"export", "--db", dbPath, "s2"}, &none, &noneErr); code != 1 {
		t.Errorf("a failed file left session s2 stored: exit %d", code)
	}

	// import → export → import: the export imports unchanged here, and
	// created elsewhere with the same export.
	var exp, e2 bytes.Buffer
	if code := run(ctx, []string{"export", "--db", dbPath, id}, &exp, &e2); code != 0 {
		t.Fatalf("export: exit %d: %s", code, e2.String())
	}
	if !strings.Contains(exp.String(), `"type":"source/raw"`) || !strings.Contains(exp.String(), `"ignorable":true`) {
		t.Errorf("export lacks the raw lines:\n%s", exp.String())
	}
	exported := filepath.Join(dir, "export.jsonl")
	os.WriteFile(exported, exp.Bytes(), 0o644)
	if code, out, errOut := importOnce(exported); code != 0 || out != id+"\tunchanged\t14 events\n" {
		t.Errorf("export into the same store: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	other := filepath.Join(dir, "other.db")
	var out2, err2 bytes.Buffer
	if code := run(ctx, []string{"import", "--db", other, exported}, &out2, &err2); code != 0 || out2.String() != id+"\tcreated\t14 events\n" {
		t.Fatalf("export into another store: exit %d, stdout %q, stderr %q", code, out2.String(), err2.String())
	}
	var exp2 bytes.Buffer
	if code := run(ctx, []string{"export", "--db", other, id}, &exp2, &err2); code != 0 {
		t.Fatalf("second export: exit %d: %s", code, err2.String())
	}
	if !bytes.Equal(exp.Bytes(), exp2.Bytes()) {
		t.Errorf("round trip changed the log:\n%s\nvs\n%s", exp.String(), exp2.String())
	}
}

// TestCLI_claudeCodeCards imports a transcript calling Claude Code's tools
// and renders it with the server's components (export --html): each mapped
// tool gets its card kind, the unknown one the generic card.
func TestCLI_claudeCodeCards(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "prism.db")
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"import", "--db", dbPath, "sources/claudecode/testdata/tools.jsonl"}, &out, &errOut); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errOut.String())
	}
	out.Reset()
	if code := run(ctx, []string{"export", "--html", "--db", dbPath, "5b1f7a2e-0000-4000-8000-0000000000aa"}, &out, &errOut); code != 0 {
		t.Fatalf("export --html: exit %d: %s", code, errOut.String())
	}
	page := out.String()
	for kind, want := range map[string]int{"diff": 2, "terminal": 2, "read": 1, "search": 1, "web": 1, "generic": 3} {
		if got := strings.Count(page, `data-card="`+kind+`"`); got != want {
			t.Errorf("%d %s cards, want %d", got, kind, want)
		}
	}
	for _, s := range []string{"fmt.Println(&#34;hi&#34;)", "go vet ./...", "https://go.dev/doc/", "[x] Edit main.go"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
}

// TestServe_uploadClaudeCode uploads a Claude Code transcript to a real
// `prism serve` (POST /api/sessions/import, a raw body) and opens its
// page: the upload path detects the format by content, and the page draws
// the calls with Claude Code's cards.
func TestServe_uploadClaudeCode(t *testing.T) {
	srv := startServer(t, 0, filepath.Join(t.TempDir(), "prism.db"))
	data, err := os.ReadFile("sources/claudecode/testdata/parallel.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	res, body := post(t, srv.url+"/api/sessions/import?name=transcript.jsonl", "application/octet-stream", bytes.NewReader(data))
	if res.StatusCode != http.StatusCreated || !strings.Contains(body, `"id":"7d3e0c1a-0000-4000-8000-00000000c0de"`) || !strings.Contains(body, `"status":"created"`) {
		t.Fatalf("upload: %d %s", res.StatusCode, body)
	}
	page, err := http.Get(srv.url + "/sessions/7d3e0c1a-0000-4000-8000-00000000c0de")
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != http.StatusOK || strings.Count(string(html), `data-card="terminal"`) != 1 || strings.Count(string(html), `data-card="search"`) != 1 {
		t.Errorf("page: %d, %d terminal and %d search cards", page.StatusCode,
			strings.Count(string(html), `data-card="terminal"`), strings.Count(string(html), `data-card="search"`))
	}
	if err := srv.stop(t); err != nil {
		t.Errorf("prism serve exited with %v\n%s", err, srv.log())
	}
}
