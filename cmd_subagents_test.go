package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core/notes"
	"prism/db"
	"prism/sources/claudecode"
)

// agentCall is an assistant line asking for a Task/Agent subagent.
func (c claudeLines) agentCall(n int, name, prompt string) string {
	return c.env("assistant", fmt.Sprintf("a%d", n), n) + fmt.Sprintf(`,"requestId":"req_%d","message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_%d","name":%q,"input":{"subagent_type":"general-purpose","description":"look","prompt":%q}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":5}}}`, n, n, n, name, prompt) + "\n"
}

// agentResult is the user line answering a subagent call; agentID and
// status go in its toolUseResult ("" leaves them out).
func (c claudeLines) agentResult(n int, agentID, status string) string {
	tur := `{"content":[{"type":"text","text":"done"}],"totalDurationMs":10}`
	if agentID != "" {
		tur = fmt.Sprintf(`{"status":%q,"agentId":%q,"content":[{"type":"text","text":"done"}]}`, status, agentID)
	}
	return c.env("user", fmt.Sprintf("r%d", n), n) + fmt.Sprintf(`,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"done"}]},"toolUseResult":%s}`, n, tur) + "\n"
}

// childLines is a subagent's transcript: its sidechain prompt and one call.
func (c claudeLines) childLines(agentID, prompt string) string {
	side := strings.ReplaceAll(c.prompt(prompt), `"isSidechain":false`, `"isSidechain":true,"agentId":"`+agentID+`"`)
	call := strings.ReplaceAll(c.call(900), `"isSidechain":false`, `"isSidechain":true,"agentId":"`+agentID+`"`)
	res := strings.ReplaceAll(c.result(900), `"isSidechain":false`, `"isSidechain":true,"agentId":"`+agentID+`"`)
	return side + call + res
}

// TestCLI_importClaudeCodeSubagents imports a main transcript with each
// subagent layout: the current one (subagents/agent-X.jsonl linked by its
// .meta.json's toolUseId), the older one (agent-Y.jsonl beside it, linked
// by toolUseResult.agentId, a background child), and one matched by its
// prompt (inferred). Importing the main file brings its subagent files;
// each child is its own session (origin subagent, parentSession) and the
// spawning call has a link note. A child whose parent transcript is gone
// imports top-level, its source info naming the missing parent.
func TestCLI_importClaudeCodeSubagents(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	project := filepath.Join(dir, "-home-dev-app")
	const sid = "5a1d0000-0000-4000-8000-00000000ab01"
	c := claudeLines{sid: sid}
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	main := filepath.Join(project, sid+".jsonl")
	write(main, c.prompt("Investigate")+
		c.agentCall(1, "Agent", "Find the regression")+c.agentResult(1, "cur1", "completed")+
		c.agentCall(2, "Task", "Read the logs")+c.agentResult(2, "old2", "async_launched")+
		c.agentCall(3, "Task", "Count the files")+c.agentResult(3, "", ""))
	write(filepath.Join(project, sid, "subagents", "agent-cur1.jsonl"), c.childLines("cur1", "Find the regression"))
	write(filepath.Join(project, sid, "subagents", "agent-cur1.meta.json"), `{"agentType":"general-purpose","description":"look","toolUseId":"toolu_1"}`)
	write(filepath.Join(project, "agent-old2.jsonl"), c.childLines("old2", "Read the logs"))
	write(filepath.Join(project, sid, "subagents", "agent-inf3.jsonl"), c.childLines("inf3", "Count the files"))

	dbPath := filepath.Join(dir, "prism.db")
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"import", "--db", dbPath, main}, &out, &errOut); code != 0 {
		t.Fatalf("import: exit %d: %s %s", code, out.String(), errOut.String())
	}
	for _, id := range []string{sid, claudecode.ChildID(sid, "cur1"), claudecode.ChildID(sid, "inf3"), claudecode.ChildID(sid, "old2")} {
		if !strings.Contains(out.String(), id+"\tcreated\t") {
			t.Errorf("import output lacks %s created:\n%s%s", id, out.String(), errOut.String())
		}
	}
	st, err := db.Open(ctx, dbPath, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, agent := range []string{"cur1", "old2", "inf3"} {
		l, err := st.LoadSession(ctx, claudecode.ChildID(sid, agent))
		if err != nil {
			t.Fatal(err)
		}
		if l.Info.ParentID != sid || len(l.Events) < 5 {
			t.Errorf("child %s: parent %q, %d events", agent, l.Info.ParentID, len(l.Events))
		}
	}
	links, err := st.Notes(ctx, sid, notes.Query{Kind: notes.KindLink})
	if err != nil {
		t.Fatal(err)
	}
	type link struct {
		Child                string
		Background, Inferred bool
	}
	got := map[string]link{}
	for _, n := range links {
		var d link
		if err := json.Unmarshal(n.Data, &d); err != nil {
			t.Fatal(err)
		}
		got[n.CallID] = d
	}
	want := map[string]link{
		"toolu_1": {Child: claudecode.ChildID(sid, "cur1")},
		"toolu_2": {Child: claudecode.ChildID(sid, "old2"), Background: true},
		"toolu_3": {Child: claudecode.ChildID(sid, "inf3"), Inferred: true},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("link notes = %+v\nwant %+v", got, want)
	}

	// The parent transcript gone: the child imports top-level.
	orphanDir := filepath.Join(dir, "-home-dev-gone")
	const gone = "5a1d0000-0000-4000-8000-00000000dead"
	orphan := filepath.Join(orphanDir, gone, "subagents", "agent-lost.jsonl")
	write(orphan, claudeLines{sid: gone}.childLines("lost", "Anything"))
	out.Reset()
	errOut.Reset()
	if code := run(ctx, []string{"import", "--db", dbPath, orphan}, &out, &errOut); code != 0 {
		t.Fatalf("orphan import: exit %d: %s %s", code, out.String(), errOut.String())
	}
	l, err := st.LoadSession(ctx, claudecode.ChildID(gone, "lost"))
	if err != nil {
		t.Fatal(err)
	}
	info, found, err := st.SourceInfo(ctx, claudecode.ChildID(gone, "lost"))
	if err != nil || !found || l.Info.ParentID != "" || info.MissingParent != gone {
		t.Errorf("orphan: parent %q, source info %+v (found %v, err %v)", l.Info.ParentID, info, found, err)
	}
}

// TestCLI_importClaudeCodeInlineSidechains imports a transcript of the
// oldest layout, its subagents' lines inline (isSidechain): one sidechain
// with an agentId its spawning call's result names, one without, matched by
// its prompt (inferred). Each becomes a child session with a link note.
func TestCLI_importClaudeCodeInlineSidechains(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const sid = "5a1d0000-0000-4000-8000-00000000ab02"
	c := claudeLines{sid: sid}
	inline := func(text, agent string) string {
		repl := `"isSidechain":true`
		if agent != "" {
			repl += `,"agentId":"` + agent + `"`
		}
		return strings.ReplaceAll(text, `"isSidechain":false`, repl)
	}
	// The second sidechain's lines have their own uuids and chain.
	second := strings.NewReplacer(`"uuid":"u0"`, `"uuid":"v0"`, `"uuid":"a900"`, `"uuid":"w1"`, `"uuid":"r900"`, `"uuid":"w2"`, "toolu_900", "toolu_901", "msg_900", "msg_901", "req_900", "req_901")
	main := filepath.Join(dir, "-home-dev-app", sid+".jsonl")
	text := c.prompt("Investigate") +
		c.agentCall(1, "Task", "Find the regression") +
		inline(c.prompt("Find the regression")+c.call(900)+c.result(900), "a7f2c1") +
		c.agentResult(1, "a7f2c1", "completed") +
		c.agentCall(2, "Task", "Count the files") +
		second.Replace(inline(c.prompt("Count the files")+c.call(900)+c.result(900), "")) +
		c.agentResult(2, "", "")
	if err := os.MkdirAll(filepath.Dir(main), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(main, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "prism.db")
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"import", "--db", dbPath, main}, &out, &errOut); code != 0 {
		t.Fatalf("import: exit %d: %s %s", code, out.String(), errOut.String())
	}
	st, err := db.Open(ctx, dbPath, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	links, err := st.Notes(ctx, sid, notes.Query{Kind: notes.KindLink})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range links {
		got[n.CallID] = string(n.Data)
	}
	want := map[string]string{
		"toolu_1": `{"child":"` + claudecode.ChildID(sid, "a7f2c1") + `","background":false,"inferred":false}`,
		"toolu_2": `{"child":"` + claudecode.ChildID(sid, "inline-2") + `","background":false,"inferred":true}`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("link notes = %v\nwant %v\n(import: %s%s)", got, want, out.String(), errOut.String())
	}
	for _, id := range []string{claudecode.ChildID(sid, "a7f2c1"), claudecode.ChildID(sid, "inline-2")} {
		l, err := st.LoadSession(ctx, id)
		if err != nil || l.Info.ParentID != sid || l.Info.Summary.Calls != 1 {
			t.Errorf("child %s: %+v, %v", id, l, err)
		}
	}
}
