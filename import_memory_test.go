package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// importMemoryLimitMiB is the data-segment limit the import processes run
// under: well above what a bounded import needs (the runtime, SQLite, two
// imports at their memory budget), well below what one of the hostile
// files took before imports were bounded (0.8–1.1 GB each).
const importMemoryLimitMiB = 640

const hostileHeader = `{"type":"session","version":0,"id":"0b1c6d2e-5f4a-4e3b-9c8d-7a6b5c4d3e2f","createdAt":1764500000000}` + "\n"

// hostileFile is an import built to exhaust memory, and what its refusal
// must say.
type hostileFile struct {
	name string
	want string
	// cliOnly: imported with the command only. An upload of a big plain
	// file that the server answers before reading its body (busy, or
	// refused at an early line) ends in a connection reset on the
	// client's side, which proves nothing about memory.
	cliOnly bool
}

// writeHostileFiles writes the campaign's hostile imports into dir.
func writeHostileFiles(t *testing.T, dir string) []hostileFile {
	t.Helper()
	create := func(name string, write func(w io.Writer) error) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		bw := bufio.NewWriterSize(f, 1<<20)
		if err := write(bw); err != nil {
			t.Fatal(err)
		}
		if err := bw.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	zstdFile := func(w io.Writer, body func(io.Writer)) error {
		enc, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true))
		if err != nil {
			return err
		}
		io.WriteString(enc, hostileHeader)
		body(enc)
		return enc.Close()
	}
	// (head -1 s.jsonl; head -c 300M /dev/zero | tr '\0' '\n') | zstd: about
	// 10 KB that inflates to 300 MB.
	create("newlines.jsonl.zstd", func(w io.Writer) error {
		return zstdFile(w, func(w io.Writer) {
			chunk := bytes.Repeat([]byte{'\n'}, 1<<20)
			for range 300 {
				w.Write(chunk)
			}
		})
	})
	// A small zip with one 250 MB line.
	create("long-line.zip", func(w io.Writer) error {
		zw := zip.NewWriter(w)
		zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) })
		f, err := zw.Create("session.jsonl")
		if err != nil {
			return err
		}
		io.WriteString(f, hostileHeader)
		chunk := bytes.Repeat([]byte{'a'}, 1<<20)
		for range 250 {
			f.Write(chunk)
		}
		f.Write([]byte{'\n'})
		return zw.Close()
	})
	// A well-formed log whose events alone outgrow the memory budget.
	create("huge-session.jsonl.zstd", func(w io.Writer) error {
		return zstdFile(w, func(w io.Writer) {
			pad := strings.Repeat("p", 2000)
			for i := range 40_000 {
				fmt.Fprintf(w, `{"type":"x-vendor/pad","seq":%d,"time":0,"data":{"pad":"%s"},"ignorable":true}`+"\n", i, pad)
			}
		})
	})
	// A prism JSONL file of 200,000 sessions without events: their count
	// alone outgrows the memory budget (a file is one transaction).
	create("many-sessions.jsonl", func(w io.Writer) error {
		for i := range 200_000 {
			if _, err := fmt.Fprintf(w, `{"type":"session","version":0,"id":"s-%06d","createdAt":1764500000000}`+"\n", i); err != nil {
				return err
			}
		}
		return nil
	})
	// A Claude Code transcript with a 20 MB line (past the 16 MiB line
	// limit), and one whose events (kept raw) outgrow the memory budget.
	ccLine := `{"type":"user","sessionId":"0b1c6d2e-cc00-4e3b-9c8d-7a6b5c4d3e2f","uuid":"u","timestamp":"2026-11-02T09:00:00Z","message":{"role":"user","content":"hi"}}` + "\n"
	create("long-line-claude.jsonl", func(w io.Writer) error {
		io.WriteString(w, ccLine)
		io.WriteString(w, `{"type":"progress","data":"`)
		chunk := bytes.Repeat([]byte{'a'}, 1<<20)
		for range 20 {
			w.Write(chunk)
		}
		_, err := io.WriteString(w, `"}`+"\n")
		return err
	})
	create("huge-claude.jsonl", func(w io.Writer) error {
		io.WriteString(w, ccLine)
		pad := strings.Repeat("p", 1000)
		for i := range 70_000 {
			fmt.Fprintf(w, `{"type":"progress","uuid":"p%d","data":"%s"}`+"\n", i, pad)
		}
		return nil
	})
	// The same for a Codex rollout: a 20 MB line, and lines kept raw that
	// outgrow the memory budget.
	cxLine := `{"timestamp":"2026-11-02T09:00:00Z","type":"session_meta","payload":{"id":"0199c000-0000-7000-8000-00000000d00d","timestamp":"2026-11-02T09:00:00Z","cwd":"/w"}}` + "\n"
	create("long-line-codex.jsonl", func(w io.Writer) error {
		io.WriteString(w, cxLine)
		io.WriteString(w, `{"timestamp":"2026-11-02T09:00:01Z","type":"world_state","payload":{"pad":"`)
		chunk := bytes.Repeat([]byte{'a'}, 1<<20)
		for range 20 {
			w.Write(chunk)
		}
		_, err := io.WriteString(w, `"}}`+"\n")
		return err
	})
	create("huge-codex.jsonl", func(w io.Writer) error {
		io.WriteString(w, cxLine)
		pad := strings.Repeat("p", 1000)
		for i := range 70_000 {
			fmt.Fprintf(w, `{"timestamp":"2026-11-02T09:00:01Z","type":"world_state","payload":{"n":%d,"pad":"%s"}}`+"\n", i, pad)
		}
		return nil
	})
	return []hostileFile{
		{"long-line-codex.jsonl", "line 2: line is longer than the limit", true},
		{"huge-codex.jsonl", "memory budget", true},
		{"many-sessions.jsonl", "sessions so far and their decoded events need more than the import memory budget", false},
		{"newlines.jsonl.zstd", "line 2: not valid JSON", false},
		{"long-line.zip", "line 2: line is longer than the limit", false},
		{"huge-session.jsonl.zstd", "too large to import", false},
		{"long-line-claude.jsonl", "line 2: line is longer than the limit", true},
		{"huge-claude.jsonl", "memory budget", true},
	}
}

// TestImportMemoryIsBounded imports the hostile files with `prism import`
// and uploads them to `prism serve`, four at a time, each process under a
// hard memory limit: every file is refused with its reason — or, past the
// concurrent-import limit, answered 503 with Retry-After — and no process
// is killed by the limit; the server keeps serving and then imports a
// real session.
func TestImportMemoryIsBounded(t *testing.T) {
	dir := t.TempDir()
	files := writeHostileFiles(t, dir)
	good := filepath.Join("testdata", "dsh", "basic", "session.jsonl.zstd")

	t.Run("cli", func(t *testing.T) {
		dbPath := filepath.Join(t.TempDir(), "prism.db")
		for _, f := range files {
			cmd := prismCmd(t, importMemoryLimitMiB, "import", "--db", dbPath, filepath.Join(dir, f.name))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Errorf("prism import %s under a %d MiB limit: %v (want exit status 1, a refusal)\n%s", f.name, importMemoryLimitMiB, err, tail(stderr.String()))
				continue
			}
			if !strings.Contains(stderr.String(), f.name) || !strings.Contains(stderr.String(), f.want) {
				t.Errorf("prism import %s said %q, want it to name the file and %q", f.name, tail(stderr.String()), f.want)
			}
		}
		cmd := prismCmd(t, importMemoryLimitMiB, "import", "--db", dbPath, good)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("prism import of a real session under the limit: %v\n%s", err, out)
		}
	})

	t.Run("serve", func(t *testing.T) {
		srv := startServer(t, importMemoryLimitMiB, filepath.Join(t.TempDir(), "prism.db"))
		var wg sync.WaitGroup
		type answer struct {
			file   hostileFile
			status int
			retry  string
			body   string
		}
		answers := make(chan answer, 2*len(files)+1)
		upload := func(f hostileFile, path string) {
			defer wg.Done()
			data, err := os.Open(path)
			if err != nil {
				t.Error(err)
				return
			}
			defer data.Close()
			res, body := post(t, srv.url+"/api/sessions/import?name="+f.name, "application/octet-stream", data)
			answers <- answer{f, res.StatusCode, res.Header.Get("Retry-After"), body}
		}
		// Two rounds of every hostile file plus a real session, all at once:
		// more uploads than the server decodes concurrently.
		uploads := 1
		for range 2 {
			for _, f := range files {
				if f.cliOnly {
					continue
				}
				uploads++
				wg.Add(1)
				go upload(f, filepath.Join(dir, f.name))
			}
		}
		wg.Add(1)
		go upload(hostileFile{name: "session.jsonl.zstd"}, good)
		wg.Wait()
		close(answers)
		busy := 0
		for a := range answers {
			switch {
			case a.status == http.StatusServiceUnavailable:
				busy++
				if a.retry == "" || !strings.Contains(a.body, "concurrent imports") {
					t.Errorf("busy answer for %s: Retry-After %q, body %s", a.file.name, a.retry, a.body)
				}
			case a.file.want == "":
				if a.status != http.StatusCreated {
					t.Errorf("upload of the real session: %d %s", a.status, a.body)
				}
			case a.status != http.StatusBadRequest || !strings.Contains(a.body, a.file.want):
				t.Errorf("upload of %s: %d %s; want 400 naming %q", a.file.name, a.status, a.body, a.file.want)
			}
		}
		t.Logf("%d of %d concurrent uploads were answered busy", busy, uploads)
		if !srv.alive() {
			t.Fatalf("the server died under a %d MiB limit\n%s", importMemoryLimitMiB, tail(srv.log()))
		}
		res, err := http.Get(srv.url + "/healthz")
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("healthz after the uploads: %v %v", res, err)
		}
		res.Body.Close()
		data, err := os.ReadFile(good)
		if err != nil {
			t.Fatal(err)
		}
		// Created now, or unchanged if the upload in the crowd got through.
		if res, body := post(t, srv.url+"/api/sessions/import?name=again.jsonl.zstd", "application/octet-stream", bytes.NewReader(data)); res.StatusCode != http.StatusCreated &&
			!(res.StatusCode == http.StatusOK && strings.Contains(body, `"status":"unchanged"`)) {
			t.Errorf("a later upload: %d %s", res.StatusCode, body)
		}
		if err := srv.stop(t); err != nil {
			t.Errorf("prism serve exited with %v after the uploads\n%s", err, tail(srv.log()))
		}
		if strings.Contains(srv.log(), "fatal error") {
			t.Errorf("the server logged a fatal error:\n%s", tail(srv.log()))
		}
	})
}

// tail returns the end of a long log.
func tail(s string) string {
	const n = 2000
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
