package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/db"
)

// compareCLILog is a one-step session: a read, then a grep of pattern.
func compareCLILog(pattern string) []core.Event {
	b := coretest.NewBuilder(1767225600000)
	grep := `{"pattern":` + strconv.Quote(pattern) + `}`
	b.TurnStart().StepStart().User("Look.")
	b.Assistant("", [3]string{"c1", "read", `{"file_path":"a.go"}`}, [3]string{"c2", "grep", grep})
	b.Call("c1", "read", `{"file_path":"a.go"}`).Call("c2", "grep", grep)
	b.Result("c1", "package a", false, nil, nil).Result("c2", "a.go:1", false, nil, nil)
	b.StepEnd().TurnEnd(core.TurnCompleted)
	return b.Events
}

// TestCLI_compare: prism compare exits like diff — 0 when the sessions do
// not differ, 1 when they do, 2 on an error (a missing session, named) —
// and prints one line per pair, or JSON; imported Claude Code sessions
// compare like prism's.
func TestCLI_compare(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "prism.db")
	st, err := db.Open(ctx, dbPath, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for id, pattern := range map[string]string{"base": "TODO", "same": "TODO", "changed": "FIXME"} {
		if err := st.CreateSession(ctx, core.SessionHeader{ID: id, CreatedAt: 1767225600000}); err != nil {
			t.Fatal(err)
		}
		if err := st.AppendEvents(ctx, id, compareCLILog(pattern)); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	cc := filepath.Join("sources", "claudecode", "testdata", "tools.jsonl")
	for _, as := range []string{"cc1", "cc2"} {
		var out, errOut bytes.Buffer
		if code := run(ctx, []string{"import", "--db", dbPath, "--as", as, cc}, &out, &errOut); code != 0 {
			t.Fatalf("import %s: exit %d: %s", cc, code, errOut.String())
		}
	}
	for _, tt := range []struct {
		args     []string
		code     int
		stdout   []string
		stderr   string
		notLines []string
	}{
		{[]string{"base", "same"}, 0, []string{"same\tread\t{\"file_path\":\"a.go\"}\n", "same\tgrep\t{\"pattern\":\"TODO\"}\n", "# 0 differences in 2 pairs\n"}, "", nil},
		{[]string{"base", "base"}, 0, []string{"# 0 differences in 2 pairs\n"}, "", nil},
		{[]string{"base", "changed"}, 1, []string{"same\tread\t", "arguments differ\tgrep\t{\"pattern\":\"TODO\"} → {\"pattern\":\"FIXME\"}\n", "# 1 difference in 2 pairs\n"}, "", nil},
		{[]string{"cc1", "cc2"}, 0, []string{"# 0 differences in"}, "", []string{"differ\t", "inserted\t", "deleted\t"}},
		{[]string{"cc1", "base"}, 1, []string{"deleted\t", "inserted\tread\t"}, "", nil},
		{[]string{"base", "nope"}, 2, nil, "session nope not found", nil},
		{[]string{"nope", "base", "--db", filepath.Join(t.TempDir(), "absent.db")}, 2, nil, "absent.db", nil},
		{[]string{"base"}, 2, nil, "prism compare [--db PATH] [--json] SESSION_A SESSION_B", nil},
	} {
		var out, errOut bytes.Buffer
		code := run(ctx, append([]string{"compare", "--db", dbPath}, tt.args...), &out, &errOut)
		if code != tt.code {
			t.Errorf("compare %v: exit %d, want %d\nstdout: %s\nstderr: %s", tt.args, code, tt.code, out.String(), errOut.String())
			continue
		}
		for _, s := range tt.stdout {
			if !strings.Contains(out.String(), s) {
				t.Errorf("compare %v: stdout lacks %q:\n%s", tt.args, s, out.String())
			}
		}
		for _, s := range tt.notLines {
			if strings.Contains(out.String(), s) {
				t.Errorf("compare %v: stdout holds %q:\n%s", tt.args, s, out.String())
			}
		}
		if !strings.Contains(errOut.String(), tt.stderr) {
			t.Errorf("compare %v: stderr %q lacks %q", tt.args, errOut.String(), tt.stderr)
		}
	}

	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"compare", "--json", "--db", dbPath, "base", "changed"}, &out, &errOut); code != 1 {
		t.Fatalf("compare --json: exit %d: %s", code, errOut.String())
	}
	var got struct {
		A struct {
			ID      string `json:"id"`
			Summary struct {
				Calls int `json:"calls"`
			} `json:"summary"`
		} `json:"a"`
		Pairs []struct {
			Mark string `json:"mark"`
			A    struct{ Args string }
			B    struct{ Args string }
		} `json:"pairs"`
		Differences int `json:"differences"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("compare --json: %v\n%s", err, out.String())
	}
	if got.A.ID != "base" || got.A.Summary.Calls != 2 || got.Differences != 1 || len(got.Pairs) != 2 ||
		got.Pairs[1].Mark != "arguments differ" || got.Pairs[1].B.Args != `{"pattern":"FIXME"}` {
		t.Fatalf("compare --json: %+v", got)
	}
}
