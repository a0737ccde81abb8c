package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"prism/core"
	"prism/core/model"
	"prism/core/notes"
	"prism/sources/dsh"
)

// TestSubagentSIGKILLMidChild: prism serve runs the scripted demo, whose
// calls each stay pending --demo-call-time, until the demo's subagent has
// started its child and the child's own read is committed and pending; then
// the server is killed with SIGKILL. Restarted on the same database, crash
// repair closes both open turns: the child's read and the parent's
// subagent call (whose bodies had run) are answered TOOL_OUTCOME_UNKNOWN
// citing their tool/call, both turns end interrupted, the link note still
// names the child on the spawning call, and both logs replay as valid.
func TestSubagentSIGKILLMidChild(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "prism.db")
	// Every demo call stays pending this long: long enough that the
	// child's read is certainly still pending when the kill comes.
	const pace = "1500ms"
	first := startServer(t, 0, dbPath, "--demo-call-time", pace)
	res, body := post(t, first.url+"/api/sessions", "application/json",
		strings.NewReader(fmt.Sprintf(`{"prompt":%q,"model":%q}`, model.DemoPrompt, model.DemoModelName)))
	var started struct{ ID string }
	if res.StatusCode != http.StatusCreated || json.Unmarshal([]byte(body), &started) != nil {
		t.Fatalf("POST /api/sessions = %d %s", res.StatusCode, body)
	}
	parent := started.ID

	// Wait until the child's read is committed: first the link note (the
	// child exists), then the child's tool/call.
	var child string
	deadline := time.Now().Add(3 * time.Minute)
	for child == "" || !hasCall(t, exportLog(t, first.url, child).Events) {
		if time.Now().After(deadline) {
			t.Fatalf("the demo's child never logged its call (child %q)\n%s", child, first.log())
		}
		if !first.alive() {
			t.Fatalf("prism exited before the child's call:\n%s", first.log())
		}
		if child == "" {
			if l, ok := linkNote(t, first.url, parent); ok {
				child = l.child
			}
		}
		time.Sleep(10 * time.Millisecond)
	}

	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-first.exited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("prism exited with %v, want killed", err)
	}
	first.exited <- nil

	// Restart: startup repair runs before the server serves.
	second := startServer(t, 0, dbPath)
	childLog := exportLog(t, second.url, child)
	parentLog := exportLog(t, second.url, parent)

	// The child: its open read closed as TOOL_OUTCOME_UNKNOWN, its turn
	// interrupted.
	if childLog.Header.ChildOf() != parent {
		t.Errorf("child header = %+v, want a subagent of %s", childLog.Header, parent)
	}
	if len(childLog.Events) == 0 || childLog.Events[0].Type != core.EventSubagentDescr {
		t.Errorf("the child's log does not start with %s", core.EventSubagentDescr)
	}
	checkRepairedTail(t, "child", childLog.Events, "read")

	// The parent: its subagent call closed the same way, its turn
	// interrupted.
	callSeq := checkRepairedTail(t, "parent", parentLog.Events, "subagent")

	// The link note still names the child, on the spawning call.
	l, ok := linkNote(t, second.url, parent)
	if !ok || l.child != child || l.atSeq != callSeq || l.callID != callID(t, parentLog.Events[callSeq]) {
		t.Errorf("link note after the restart = %+v (found %v), want child %s at seq %d", l, ok, child, callSeq)
	}

	for name, lg := range map[string]*dsh.Log{"child": childLog, "parent": parentLog} {
		if err := core.ValidateLog(lg.Header, lg.Events); err != nil {
			t.Errorf("the repaired %s's log: %v", name, err)
		}
	}
	if err := second.stop(t); err != nil {
		t.Fatalf("restart: %v\n%s", err, second.log())
	}
}

// checkRepairedTail checks that events end with crash repair's closers of
// a call to tool whose body may have run — tool/result TOOL_OUTCOME_UNKNOWN
// citing its tool/call, step/end, turn/end interrupted — and returns the
// seq of that tool/call.
func checkRepairedTail(t *testing.T, who string, events []core.Event, tool string) int64 {
	t.Helper()
	if len(events) < 4 {
		t.Fatalf("the %s's log has %d events", who, len(events))
	}
	tail := events[len(events)-3:]
	var types []string
	for _, e := range tail {
		types = append(types, e.Type)
	}
	if strings.Join(types, " ") != "tool/result step/end turn/end" {
		t.Fatalf("the %s's log ends %v, want the repair's closers", who, types)
	}
	callSeq := int64(-1)
	for _, e := range events {
		var c core.ToolCall
		if e.Type == core.EventToolCall && json.Unmarshal(e.Data, &c) == nil && c.Name == tool {
			callSeq = e.Seq
		}
	}
	var result core.ToolResultData
	var end core.TurnEnd
	if err := json.Unmarshal(tail[0].Data, &result); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(tail[2].Data, &end); err != nil {
		t.Fatal(err)
	}
	if result.Error == nil || result.Error.Code != core.CodeToolOutcomeUnknown ||
		result.Projection().Content.PlainText() != core.ToolOutcomeUnknownText ||
		len(tail[0].SourceEventSeqs) != 1 || tail[0].SourceEventSeqs[0] != callSeq {
		t.Errorf("the %s's closing result = %+v citing %v (its %s call at seq %d)", who, result, tail[0].SourceEventSeqs, tool, callSeq)
	}
	if end.Reason.Kind != core.TurnInterrupted {
		t.Errorf("the %s's turn ended %+v, want interrupted", who, end.Reason)
	}
	return callSeq
}

// exportLog reads a session's log through GET /api/sessions/{id}/events.
func exportLog(t *testing.T, base, id string) *dsh.Log {
	t.Helper()
	logs, _, err := dsh.Decode(strings.NewReader(getOK(t, base+"/api/sessions/"+id+"/events")), -1, dsh.DefaultLimits())
	if err != nil || len(logs) != 1 {
		t.Fatalf("export %s: %d logs, %v", id, len(logs), err)
	}
	return logs[0]
}

// hasCall reports whether events hold a tool/call.
func hasCall(t *testing.T, events []core.Event) bool {
	t.Helper()
	for _, e := range events {
		if e.Type == core.EventToolCall {
			return true
		}
	}
	return false
}

func callID(t *testing.T, e core.Event) string {
	t.Helper()
	var c core.ToolCall
	if err := json.Unmarshal(e.Data, &c); err != nil {
		t.Fatal(err)
	}
	return c.CallID
}

// link is a session's one link note, as the API lists it.
type link struct {
	child, callID string
	atSeq         int64
}

// linkNote returns the one link note of session id (false: none yet).
func linkNote(t *testing.T, base, id string) (link, bool) {
	t.Helper()
	var got struct{ Notes []notes.Note }
	if err := json.Unmarshal([]byte(getOK(t, base+"/api/sessions/"+id+"/notes?kind="+notes.KindLink)), &got); err != nil {
		t.Fatal(err)
	}
	switch len(got.Notes) {
	case 0:
		return link{}, false
	case 1:
	default:
		t.Fatalf("session %s has %d link notes", id, len(got.Notes))
	}
	var d notes.LinkData
	if err := json.Unmarshal(got.Notes[0].Data, &d); err != nil {
		t.Fatal(err)
	}
	return link{child: d.Child, callID: got.Notes[0].CallID, atSeq: got.Notes[0].AtSeq}, true
}
