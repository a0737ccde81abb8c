package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/core/agent/agenttest"
	"prism/core/notes"
	"prism/db"
)

// toolResults returns the name, arguments and durable projection of each
// tool/result of a log, in order.
func toolResults(t *testing.T, evs []core.Event) []string {
	t.Helper()
	calls := map[string]string{}
	var out []string
	for _, e := range evs {
		switch e.Type {
		case core.EventToolCall:
			var d core.ToolCall
			if err := e.DecodeData(&d); err != nil {
				t.Fatal(err)
			}
			calls[d.CallID] = d.Name + " " + d.Arguments
		case core.EventToolResult:
			var d core.ToolResultData
			if err := e.DecodeData(&d); err != nil {
				t.Fatal(err)
			}
			p, err := json.Marshal(d.Projection())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, calls[d.CallID()]+" → "+string(p))
		}
	}
	return out
}

// TestCLI_forkReplaysTheDemo: `prism fork` of the scripted demo's session
// at turn 0 with the demo's prompt, on the scripted demo model, reruns it
// with every call answered from the source's recorded results (equal
// results, one replayed note per call); the fork's header names its
// parent and seed. Its errors are dsh's codes with their texts.
func TestCLI_forkReplaysTheDemo(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "prism.db")
	h, events := agenttest.DemoLog(t, 1767225600000)
	st, err := db.Open(ctx, dbPath, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.ID = "demo"
	if err := st.CreateSession(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "demo", events); err != nil {
		t.Fatal(err)
	}
	st.Close()

	var out, errOut bytes.Buffer
	t.Setenv("PRISM_MODEL", "scripted")
	t.Setenv("PRISM_WORKSPACE", "")
	args := []string{"fork", "--db", dbPath, "demo", "--at-turn", "0", "--as", "f1", "--prompt", "Give me a tour", "--title", "tour again", "--workspace-roots", t.TempDir()}
	if code := run(ctx, args, &out, &errOut); code != 0 {
		t.Fatalf("fork: exit %d: %s", code, errOut.String())
	}
	if got := strings.TrimSpace(out.String()); got != "f1" {
		t.Fatalf("fork printed %q, want the fork's id", got)
	}
	if !strings.Contains(errOut.String(), "f1 forked demo at turn 0; its turn ended: completed") {
		t.Errorf("stderr %q", errOut.String())
	}

	st, err = db.Open(ctx, dbPath, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := st.LoadSession(ctx, "f1")
	if err != nil {
		t.Fatal(err)
	}
	fh := l.Info.Header
	if fh.ParentSession != "demo" || fh.SeedLength == nil || *fh.SeedLength != 0 || fh.Origin != "" {
		t.Errorf("fork header %+v", fh)
	}
	if l.Events[0].Type != core.EventSessionEndSeed {
		t.Errorf("the fork's first event is %s, want session/end-seed", l.Events[0].Type)
	}
	if l.Info.Summary.Title != "tour again" {
		t.Errorf("the fork's title = %q, want --title's %q", l.Info.Summary.Title, "tour again")
	}
	want, got := toolResults(t, events), toolResults(t, l.Events)
	if len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the fork's results differ from the source's:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ns, err := st.Notes(ctx, "f1", notes.Query{Kind: notes.KindReplayed})
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != len(want) {
		t.Errorf("%d replayed notes for %d calls", len(ns), len(want))
	}
	for _, n := range ns {
		var d notes.ReplayedData
		if err := json.Unmarshal(n.Data, &d); err != nil || d.SourceSession != "demo" || events[d.SourceSeq].Type != core.EventToolCall {
			t.Errorf("note %s: %+v %v", n.Data, d, err)
		}
	}
	st.Close()

	// A replay fork on the same model compares with its source as fully
	// aligned: prism compare finds no difference and exits 0.
	out.Reset()
	errOut.Reset()
	if code := run(ctx, []string{"compare", "--db", dbPath, "demo", "f1"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "# 0 differences") {
		t.Errorf("compare demo f1: exit %d, want 0 and no differences:\n%s%s", code, out.String(), errOut.String())
	}

	for _, tc := range []struct {
		args []string
		text string
	}{
		{[]string{"fork", "--db", dbPath, "nope", "--at-turn", "1"}, `cannot fork session "nope": it does not exist`},
		{[]string{"fork", "--db", dbPath, "demo", "--at-turn", "1", "--as", "f1"}, `cannot fork session "demo" into "f1": a session with that id already exists`},
		{[]string{"fork", "--db", dbPath, "demo", "--at-turn", "5"}, `cannot fork session "demo" at turn 5: past the end, the session has 1 completed turns`},
	} {
		out.Reset()
		errOut.Reset()
		if code := run(ctx, tc.args, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), tc.text) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, code, errOut.String(), tc.text)
		}
	}
	errOut.Reset()
	if code := run(ctx, []string{"fork", "--db", dbPath, "demo"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--at-turn N is required") {
		t.Errorf("fork without --at-turn: exit %d, stderr %q", code, errOut.String())
	}
}

// TestCLI_forkOfAnImportedDshSession: a dsh session imported from its
// file forks into a prism run on the scripted model: the seed is the dsh
// log's first turn, and the fork's own turn runs to its end.
func TestCLI_forkOfAnImportedDshSession(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "prism.db")
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"import", "--db", dbPath, "--as", "dsh1", filepath.Join("testdata", "dsh", "basic", "session.jsonl")}, &out, &errOut); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errOut.String())
	}
	t.Setenv("PRISM_MODEL", "scripted")
	t.Setenv("PRISM_WORKSPACE", "")
	out.Reset()
	errOut.Reset()
	if code := run(ctx, []string{"fork", "--db", dbPath, "dsh1", "--at-turn", "1", "--as", "f2", "--prompt", "carry on"}, &out, &errOut); code != 0 {
		t.Fatalf("fork: exit %d: %s", code, errOut.String())
	}
	st, err := db.Open(ctx, dbPath, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	src, err := st.LoadSession(ctx, "dsh1")
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.LoadSession(ctx, "f2")
	if err != nil {
		t.Fatal(err)
	}
	n := int(*l.Info.Header.SeedLength)
	if l.Info.Header.ParentSession != "dsh1" || n == 0 || src.Events[n-1].Type != core.EventTurnEnd {
		t.Fatalf("fork header %+v", l.Info.Header)
	}
	for i := range n {
		if !bytes.Equal(l.Events[i].Data, src.Events[i].Data) || l.Events[i].Type != src.Events[i].Type {
			t.Fatalf("seed event %d differs from the source's", i)
		}
	}
	last := l.Events[len(l.Events)-1]
	var end core.TurnEnd
	if err := last.DecodeData(&end); err != nil || last.Type != core.EventTurnEnd || end.Reason.Kind != core.TurnCompleted || end.Turn != 2 {
		t.Fatalf("the fork's last event %s %s", last.Type, last.Data)
	}
	var assistant int
	for _, e := range l.Events[n:] {
		if e.Type == core.EventAssistantMessage {
			assistant++
		}
	}
	if assistant == 0 {
		t.Fatal("the scripted model answered nothing in the fork")
	}
}
