package memstore

import (
	"context"
	"log/slog"
	"time"

	"prism/core"
)

// DemoSessionID is the id of the demo session.
const DemoSessionID = "demo-session"

// DemoEvents returns a scripted session that shows every card kind: a
// terminal command, a read, an edit, a grep, a glob, a web fetch, a failing
// command and a call that fails with an error identity.
func DemoEvents(t0 int64) []core.Event {
	b := NewBuilder(t0)
	b.TurnStart().StepStart().User("Find why the tests fail and fix it.")
	b.Chunks("Let me ", "run the ", "tests first.")
	b.Assistant("Let me run the tests first.", [3]string{"c1", "bash", `{"command":"go test ./...","description":"Run the test suite"}`})
	b.Call("c1", "bash", `{"command":"go test ./...","description":"Run the test suite"}`)
	b.Result("c1", "ok  \tprism/core\t0.41s\n--- FAIL: TestParse (0.00s)\n    parse_test.go:31: got 3, want 4\nFAIL\tprism/parse\t0.02s\n[exit code: 1]", false, nil, nil)
	b.StepEnd().StepStart()
	b.Assistant("", [3]string{"c2", "read", `{"path":"parse/parse.go"}`}, [3]string{"c3", "grep", `{"pattern":"func Parse"}`})
	b.Call("c2", "read", `{"path":"parse/parse.go"}`)
	b.Call("c3", "grep", `{"pattern":"func Parse"}`)
	b.Result("c2", "package parse\n…", false, map[string]any{"path": "parse/parse.go", "offset": 1, "totalLines": 40, "lang": "go", "lines": []map[string]any{
		{"number": 1, "text": "package parse"}, {"number": 2, "text": ""}, {"number": 3, "text": "import \"strings\""}, {"number": 4, "text": ""},
		{"number": 5, "text": "// Parse counts the fields of s."}, {"number": 6, "text": "func Parse(s string) int {"},
		{"number": 7, "text": "\treturn len(strings.Fields(s)) - 1 // off by one"}, {"number": 8, "text": "}"}}}, nil)
	b.Result("c3", "parse/parse.go:6: func Parse(s string) int {", false, map[string]any{"shape": "matches", "truncated": false, "total": 1,
		"files": []map[string]any{{"path": "parse/parse.go", "matches": []map[string]any{{"lineNumber": 6, "line": "func Parse(s string) int {"}}}}}, nil)
	b.StepEnd().StepStart()
	b.Assistant("The count is off by one.", [3]string{"c4", "edit", `{"path":"parse/parse.go","old_string":"\treturn len(strings.Fields(s)) - 1 // off by one","new_string":"\treturn len(strings.Fields(s))"}`})
	b.Call("c4", "edit", `{"path":"parse/parse.go","old_string":"\treturn len(strings.Fields(s)) - 1 // off by one","new_string":"\treturn len(strings.Fields(s))"}`)
	old := "func Parse(s string) int {\n\treturn len(strings.Fields(s)) - 1 // off by one\n}"
	b.Result("c4", "Edited parse/parse.go", false, map[string]any{"diffs": []map[string]any{{"path": "parse/parse.go", "oldText": old, "newText": "func Parse(s string) int {\n\treturn len(strings.Fields(s))\n}"}}}, nil)
	b.StepEnd().StepStart()
	b.Assistant("", [3]string{"c5", "bash", `{"command":"go test ./parse/","description":"Re-run the parse tests"}`},
		[3]string{"c6", "web_fetch", `{"url":"https://go.dev/doc/"}`}, [3]string{"c7", "deploy", `{"target":"prod"}`})
	b.Call("c5", "bash", `{"command":"go test ./parse/","description":"Re-run the parse tests"}`)
	b.Call("c6", "web_fetch", `{"url":"https://go.dev/doc/"}`)
	b.Call("c7", "deploy", `{"target":"prod"}`)
	b.Result("c5", "ok  \tprism/parse\t0.02s", false, nil, nil)
	b.Result("c6", "# Documentation\n…", false, map[string]any{"url": "https://go.dev/doc/", "statusCode": 200, "truncated": false}, nil)
	b.Result("c7", "Error: deploys are not allowed from a demo", true, nil, &core.ErrorInfo{Name: "PolicyError", Code: "DEPLOY_FORBIDDEN"})
	b.StepEnd().StepStart()
	b.Chunks("Fixed: ", "`Parse` no longer ", "subtracts one, and the ", "parse tests pass.")
	b.Assistant("Fixed: `Parse` no longer subtracts one, and the parse tests pass.")
	b.StepEnd().TurnEnd(core.TurnCompleted)
	return b.Events
}

// StartDemo creates the demo session now and appends its events in the
// background with pauses, so a newcomer watches cards appear pending and
// complete. The playback stops when ctx is done.
func StartDemo(ctx context.Context, s *Store, log *slog.Logger) error {
	now := s.Now().UnixMilli()
	if err := s.CreateSession(ctx, core.SessionHeader{ID: DemoSessionID, CreatedAt: now, Cwd: "/work/demo"}); err != nil {
		return err
	}
	go playDemo(ctx, s, log, DemoEvents(now))
	return nil
}

func playDemo(ctx context.Context, s *Store, log *slog.Logger, events []core.Event) {
	for _, e := range events {
		pause := 120 * time.Millisecond
		switch e.Type {
		case core.EventToolResult:
			pause = 1200 * time.Millisecond
		case core.EventAssistantChunk:
			pause = 250 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		e.Time = s.Now().UnixMilli()
		if err := s.AppendEvents(ctx, DemoSessionID, []core.Event{e}); err != nil {
			log.Warn("demo event not appended", "seq", e.Seq, "err", err)
			return
		}
	}
}
