package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/store/storetest"
)

// manySessions is how many sessions the many-session file holds, and
// tornAt the one whose log ends in a torn line (in the middle of the file).
const (
	manySessions = 10_000
	tornAt       = 4_321
)

// writeManySessions writes a prism JSONL file of manySessions small
// sessions (one complete turn each), session tornAt followed by a torn
// line, and returns its path.
func writeManySessions(t *testing.T) string {
	t.Helper()
	data := storetest.MultiSessionJSONL(t, "many", manySessions, func(i int, h *core.SessionHeader, events *[]core.Event) string {
		if i == tornAt {
			return `{"type":"turn/start","seq":8,"ti` + "\n"
		}
		return ""
	})
	path := filepath.Join(t.TempDir(), "many.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestImportManySessions imports a prism JSONL file of 10,000 sessions
// with `prism import` and through `prism serve`'s import API, each process
// under the hard memory limit of the hostile imports: every session is
// imported, and the torn tail in the middle of the file is reported by
// both, the CLI on stderr and the API in the session's notes.
func TestImportManySessions(t *testing.T) {
	path := writeManySessions(t)
	tornID := fmt.Sprintf("many-%05d", tornAt)

	t.Run("cli", func(t *testing.T) {
		dbPath := filepath.Join(t.TempDir(), "prism.db")
		cmd := prismCmd(t, importMemoryLimitMiB, "import", "--db", dbPath, path)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("prism import of %d sessions under a %d MiB limit: %v\n%s", manySessions, importMemoryLimitMiB, err, tail(stderr.String()))
		}
		lines := 0
		sc := bufio.NewScanner(&stdout)
		for sc.Scan() {
			want := fmt.Sprintf("many-%05d\tcreated\t8 events", lines)
			if sc.Text() != want {
				t.Fatalf("stdout line %d = %q, want %q", lines+1, sc.Text(), want)
			}
			lines++
		}
		if lines != manySessions {
			t.Errorf("prism import printed %d sessions, want %d", lines, manySessions)
		}
		if want := "many.jsonl: session " + tornID + ": torn tail ignored: line "; !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q does not report the torn tail (%q)", tail(stderr.String()), want)
		}
	})

	t.Run("serve", func(t *testing.T) {
		srv := startServer(t, importMemoryLimitMiB, filepath.Join(t.TempDir(), "prism.db"))
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		res, body := post(t, srv.url+"/api/sessions/import?name=many.jsonl", "application/x-ndjson", f)
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("import of %d sessions: %d %s", manySessions, res.StatusCode, tail(body))
		}
		var a struct {
			Sessions []struct {
				ID     string   `json:"id"`
				Status string   `json:"status"`
				Events int      `json:"events"`
				Torn   string   `json:"tornTail"`
				Notes  []string `json:"notes"`
			} `json:"sessions"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			t.Fatalf("answer %s: %v", tail(body), err)
		}
		if len(a.Sessions) != manySessions || !strings.HasPrefix(a.Message, fmt.Sprintf("%d sessions imported", manySessions)) {
			t.Fatalf("the answer lists %d sessions (%q), want %d", len(a.Sessions), a.Message, manySessions)
		}
		for i, s := range a.Sessions {
			if s.ID != fmt.Sprintf("many-%05d", i) || s.Status != "created" || s.Events != 8 {
				t.Fatalf("session %d of the answer: %+v", i, s)
			}
			if (s.Torn != "") != (i == tornAt) || (len(s.Notes) > 0) != (i == tornAt) {
				t.Errorf("session %s: torn %q, notes %q", s.ID, s.Torn, s.Notes)
			}
		}
		if notes := a.Sessions[tornAt].Notes; len(notes) != 1 || !strings.HasPrefix(notes[0], "session "+tornID+": torn tail ignored: line ") {
			t.Errorf("the torn session's notes are %q, want the CLI's note", notes)
		}
		if !srv.alive() {
			t.Fatalf("the server died\n%s", tail(srv.log()))
		}
		if err := srv.stop(t); err != nil {
			t.Errorf("prism serve exited with %v\n%s", err, tail(srv.log()))
		}
	})
}
