package views_test

import (
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/views"
	"prism/web/memstore"
)

const t0 = 1767225600000 // 2026-01-01T00:00:00Z

// cardCase builds a session whose card (by call id) is the one under test.
type cardCase struct {
	name    string
	callID  string
	build   func(b *memstore.Builder)
	state   string
	card    string // expected data-card
	outcome string
}

func cardCases() []cardCase {
	bash := func(cmd string) string { return `{"command":` + jsonStr(cmd) + `,"description":"run it"}` }
	return []cardCase{
		{"terminal-pending", "c1", func(b *memstore.Builder) { b.Call("c1", "bash", bash("make test")) }, "pending", "terminal", ""},
		{"terminal-ok", "c1", func(b *memstore.Builder) {
			b.Call("c1", "bash", bash("echo hi")).Result("c1", "hi", false, nil, nil)
		}, "ok", "terminal", ""},
		{"terminal-exit", "c1", func(b *memstore.Builder) {
			b.Call("c1", "bash", bash("false")).Result("c1", "boom\n[exit code: 2]", false, nil, nil)
		}, "error", "terminal", ""},
		{"terminal-signal", "c1", func(b *memstore.Builder) {
			b.Call("c1", "bash", bash("sleep 100")).Result("c1", "[killed by signal: SIGKILL]", false, nil, nil)
		}, "error", "terminal", ""},
		{"terminal-stopped", "c1", func(b *memstore.Builder) {
			b.Call("c1", "bash", bash("sleep 100")).StepEnd()
		}, "stopped", "terminal", ""},
		{"diff-pending", "c1", func(b *memstore.Builder) {
			b.Call("c1", "edit", `{"path":"a.go","old_string":"x := 1","new_string":"x := 2"}`)
		}, "pending", "diff", ""},
		{"diff-ok", "c1", func(b *memstore.Builder) {
			b.Call("c1", "write", `{"path":"a.go","content":"package a\n"}`).
				Result("c1", "wrote a.go", false, map[string]any{"diffs": []map[string]any{{"path": "a.go", "oldText": "package a\n\nvar x = 1\nvar y = 2\n", "newText": "package a\n\nvar x = 3\nvar y = 2\n"}}}, nil)
		}, "ok", "diff", ""},
		{"read-ok", "c1", func(b *memstore.Builder) {
			b.Call("c1", "read", `{"path":"main.go"}`).Result("c1", "…", false, map[string]any{"path": "main.go", "offset": 10, "totalLines": 200, "lang": "go",
				"lines": []map[string]any{{"number": 10, "text": "func main() {"}, {"number": 11, "text": "\tfmt.Println(\"<hi>\")"}, {"number": 12, "text": "}"}}}, nil)
		}, "ok", "read", ""},
		{"search-matches", "c1", func(b *memstore.Builder) {
			b.Call("c1", "grep", `{"pattern":"TODO"}`).Result("c1", "a.go:3: // TODO\n[full list stored at /tmp/spill-1]", false, map[string]any{"shape": "matches", "truncated": true, "total": 40,
				"files": []map[string]any{{"path": "a.go", "matches": []map[string]any{{"lineNumber": 3, "line": "// TODO"}}}}}, nil)
		}, "ok", "search", ""},
		{"search-paths", "c1", func(b *memstore.Builder) {
			b.Call("c1", "glob", `{"pattern":"**/*.go"}`).Result("c1", "a.go\nb.go", false, map[string]any{"shape": "paths", "truncated": false, "total": 2, "paths": []string{"a.go", "b.go"}}, nil)
		}, "ok", "search", ""},
		{"web-search", "c1", func(b *memstore.Builder) {
			b.Call("c1", "web_search", `{"queries":["go templ"]}`).Result("c1", "…", false, map[string]any{"title": "go templ", "truncated": false, "answer": "templ is a Go HTML templating language.",
				"sources": []map[string]any{{"url": "https://templ.guide/", "title": "templ docs", "snippet": "Build HTML with Go"}, {"url": "javascript:alert(1)", "title": "evil"}}}, nil)
		}, "ok", "web", ""},
		{"web-fetch", "c1", func(b *memstore.Builder) {
			b.Call("c1", "web_fetch", `{"url":"https://example.com/"}`).Result("c1", "…", false, map[string]any{"url": "https://example.com/", "statusCode": 404, "truncated": true}, nil)
		}, "ok", "web", ""},
		{"generic-pending", "c1", func(b *memstore.Builder) { b.Call("c1", "note", `{"title":"x","body":"y"}`) }, "pending", "generic", ""},
		{"generic-ok", "c1", func(b *memstore.Builder) {
			b.Call("c1", "note", `{"title":"x"}`).Result("c1", "saved note x", false, nil, nil)
		}, "ok", "generic", ""},
		{"generic-error", "c1", func(b *memstore.Builder) {
			b.Call("c1", "read", `{"path":"/etc/shadow"}`).Result("c1", "Error: permission denied", true, nil, &core.ErrorInfo{Name: "FsError", Code: "FS_DENIED"})
		}, "error", "generic", ""},
		{"outcome-unknown", "c1", func(b *memstore.Builder) {
			b.Call("c1", "bash", bash("rm -rf build")).Result("c1", "The tool call was interrupted after it was recorded, but no result was durably recorded.", true, nil, &core.ErrorInfo{Name: "ToolOutcomeUnknownError", Code: core.CodeToolOutcomeUnknown})
		}, "error", "generic", "outcome-unknown"},
		{"not-started", "c9", func(b *memstore.Builder) {
			b.Result("c9", "The tool call was interrupted before the Harness recorded it as started.", true, nil, &core.ErrorInfo{Name: "ToolNotStartedError", Code: core.CodeToolNotStarted})
		}, "error", "generic", "not-started"},
		{"aborted-before-dispatch", "c1", func(b *memstore.Builder) {
			b.Call("c1", "note", `{}`).Result("c1", "Error: tool call aborted before dispatch", true, nil, &core.ErrorInfo{Name: "AbortError", Code: core.CodeAbortedBeforeDispatch})
		}, "error", "generic", "aborted-before-dispatch"},
		{"approval-asked", "c1", func(b *memstore.Builder) {
			b.Call("c1", "bash", bash("deploy")).Add(core.EventApprovalAsked, map[string]any{"id": "a1", "toolName": "bash", "callId": "c1"}, nil)
		}, "pending", "terminal", ""},
		{"running-approved", "c1", func(b *memstore.Builder) {
			b.Call("c1", "bash", bash("deploy")).Add(core.EventApprovalAsked, map[string]any{"id": "a1", "toolName": "bash", "callId": "c1"}, nil)
			b.Add(core.EventApprovalDecided, map[string]any{"id": "a1", "outcome": "allowed-once"}, nil)
		}, "running", "terminal", ""},
	}
}

func jsonStr(s string) string {
	b, _ := core.MarshalNoEscape(s)
	return string(b)
}

func foldCase(c cardCase) *views.Timeline {
	b := memstore.NewBuilder(t0)
	b.TurnStart().StepStart()
	c.build(b)
	return views.Fold(core.SessionHeader{ID: "s1", CreatedAt: t0, Cwd: "/work"}, b.Events, memstore.Presenter{})
}

func renderCard(t *testing.T, tl *views.Timeline, callID string) string {
	t.Helper()
	cards := tl.CardsByCallID(callID)
	if len(cards) == 0 {
		t.Fatalf("no card for %q", callID)
	}
	html, err := views.Render(context.Background(), views.CardComponent(views.NewCardView(cards[0], "s1", "/work")))
	if err != nil {
		t.Fatal(err)
	}
	return html
}

func TestCardGolden(t *testing.T) {
	for _, c := range cardCases() {
		t.Run(c.name, func(t *testing.T) {
			tl := foldCase(c)
			html := renderCard(t, tl, c.callID)
			golden(t, "views/cards", c.name, html)
			doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
			if err != nil {
				t.Fatal(err)
			}
			card := doc.Find(`[data-testid="tool-card"]`)
			if card.Length() != 1 {
				t.Fatalf("found %d tool cards, want 1", card.Length())
			}
			if got, _ := card.Attr("data-call-id"); got != c.callID {
				t.Errorf("data-call-id = %q, want %q", got, c.callID)
			}
			if got, _ := card.Attr("data-state"); got != c.state {
				t.Errorf("data-state = %q, want %q", got, c.state)
			}
			if got, _ := card.Attr("data-card"); got != c.card {
				t.Errorf("data-card = %q, want %q", got, c.card)
			}
			if got, _ := card.Attr("data-outcome"); got != c.outcome {
				t.Errorf("data-outcome = %q, want %q", got, c.outcome)
			}
			if id, _ := card.Attr("id"); id != views.CallElemID(c.callID) {
				t.Errorf("id = %q, want %q", id, views.CallElemID(c.callID))
			}
		})
	}
}

func TestCardDetails(t *testing.T) {
	find := func(name string) cardCase {
		for _, c := range cardCases() {
			if c.name == name {
				return c
			}
		}
		t.Fatalf("no case %s", name)
		return cardCase{}
	}
	doc := func(name string) *goquery.Document {
		c := find(name)
		d, err := goquery.NewDocumentFromReader(strings.NewReader(renderCard(t, foldCase(c), c.callID)))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if got := doc("terminal-exit").Find(`[data-testid="exit"]`).Text(); got != "exit code 2" {
		t.Errorf("exit pill = %q, want %q", got, "exit code 2")
	}
	if got := doc("terminal-signal").Find(`[data-testid="exit"]`).Text(); got != "signal SIGKILL" {
		t.Errorf("signal pill = %q", got)
	}
	if got := doc("generic-error").Find(`[data-testid="error-identity"]`).Text(); got != "FsError · FS_DENIED" {
		t.Errorf("error identity = %q", got)
	}
	d := doc("diff-ok")
	if d.Find("tr.add").Length() != 1 || d.Find("tr.del").Length() != 1 {
		t.Errorf("diff rows: %d added, %d removed, want 1 and 1", d.Find("tr.add").Length(), d.Find("tr.del").Length())
	}
	r := doc("read-ok")
	if got := r.Find(".code-table .ln").First().Text(); got != "10" {
		t.Errorf("read keeps file line numbers: first = %q, want 10", got)
	}
	if !strings.Contains(r.Find(".window").Text(), "showing 3 of 200 lines") {
		t.Errorf("read window label = %q", r.Find(".window").Text())
	}
	if r.Find(".code-table span[class]").Length() == 0 {
		t.Error("read lines are not highlighted")
	}
	w := doc("web-search")
	if w.Find(`a[href^="javascript"]`).Length() != 0 {
		t.Error("a javascript: URL became a link")
	}
	if w.Find(`a[href="https://templ.guide/"]`).Length() != 1 {
		t.Error("the https source is not a link")
	}
	if doc("terminal-ok").Find(`[data-testid="duration"]`).Text() != "10 ms" {
		t.Errorf("duration = %q", doc("terminal-ok").Find(`[data-testid="duration"]`).Text())
	}
	if doc("search-matches").Find(".recovery").Length() != 1 {
		t.Error("a truncated search does not show the recovery text")
	}
}
