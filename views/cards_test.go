package views_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
)

const t0 = 1767225600000 // 2026-01-01T00:00:00Z

// cardCase builds a session whose card (by call id) is the one under test.
// Results come from the real tools, run in the workspace ws (the seeded
// cardWorkspace), as the agent loop logs them.
type cardCase struct {
	name    string
	callID  string
	build   func(b *coretest.Builder, reg *core.Registry, ws string)
	state   string
	card    string // expected data-card
	outcome string
}

func cardCases() []cardCase {
	bash := func(cmd string) string { return `{"command":` + jsonStr(cmd) + `,"description":"run it"}` }
	ctx := context.Background()
	return []cardCase{
		{"terminal-pending", "c1", func(b *coretest.Builder, _ *core.Registry, _ string) { b.Call("c1", "bash", bash("make test")) }, "pending", "terminal", ""},
		{"terminal-ok", "c1", func(b *coretest.Builder, reg *core.Registry, ws string) {
			b.Exec(ctx, reg, ws, "c1", "bash", bash("echo hi"))
		}, "ok", "terminal", ""},
		// dsh's rule: a command that exits non-zero completed (an exit
		// pill), it is not an error.
		{"terminal-exit", "c1", func(b *coretest.Builder, reg *core.Registry, ws string) {
			b.Exec(ctx, reg, ws, "c1", "bash", bash("echo boom; exit 2"))
		}, "ok", "terminal", ""},
		{"terminal-signal", "c1", func(b *coretest.Builder, reg *core.Registry, ws string) {
			b.Exec(ctx, reg, ws, "c1", "bash", bash("kill -KILL $$"))
		}, "ok", "terminal", ""},
		{"terminal-stopped", "c1", func(b *coretest.Builder, _ *core.Registry, _ string) {
			b.Call("c1", "bash", bash("sleep 100")).StepEnd()
		}, "stopped", "terminal", ""},
		{"diff-pending", "c1", func(b *coretest.Builder, _ *core.Registry, _ string) {
			b.Call("c1", "edit", `{"file_path":"a.go","old_string":"var x = 1","new_string":"var x = 3"}`)
		}, "pending", "diff", ""},
		{"diff-ok", "c1", func(b *coretest.Builder, reg *core.Registry, ws string) {
			b.Exec(ctx, reg, ws, "c1", "write", `{"file_path":"a.go","content":"package a\n\nvar x = 3\nvar y = 2\n"}`)
		}, "ok", "diff", ""},
		// An edit deep in a file is numbered as the file is (8–14, as the
		// read card numbers the same lines), not from the snippet's 1.
		{"diff-edit-file-lines", "c1", func(b *coretest.Builder, reg *core.Registry, ws string) {
			b.Exec(ctx, reg, ws, "c1", "edit", `{"file_path":"main.go","old_string":"\tfmt.Println(\"<hi>\")","new_string":"\tfmt.Println(\"<hello>\")"}`)
		}, "ok", "diff", ""},
		{"read-ok", "c1", func(b *coretest.Builder, reg *core.Registry, ws string) {
			b.Exec(ctx, reg, ws, "c1", "read", `{"file_path":"main.go","offset":10,"limit":3}`)
		}, "ok", "read", ""},
		{"search-matches", "c1", func(b *coretest.Builder, reg *core.Registry, ws string) {
			b.Exec(ctx, reg, ws, "c1", "grep", `{"pattern":"TODO","path":"todo.txt"}`)
		}, "ok", "search", ""},
		{"search-paths", "c1", func(b *coretest.Builder, reg *core.Registry, ws string) {
			b.Exec(ctx, reg, ws, "c1", "glob", `{"pattern":"*.go"}`)
		}, "ok", "search", ""},
		{"web-search", "c1", func(b *coretest.Builder, reg *core.Registry, ws string) {
			b.Exec(ctx, reg, ws, "c1", "web_search", `{"query":"go templ"}`)
		}, "ok", "web", ""},
		{"web-fetch", "c1", func(b *coretest.Builder, reg *core.Registry, ws string) {
			b.Exec(ctx, reg, ws, "c1", "web_fetch", `{"url":"https://example.com/"}`)
		}, "ok", "web", ""},
		{"generic-pending", "c1", func(b *coretest.Builder, _ *core.Registry, _ string) { b.Call("c1", "deploy", `{"target":"prod"}`) }, "pending", "generic", ""},
		{"generic-ok", "c1", func(b *coretest.Builder, reg *core.Registry, ws string) {
			b.Exec(ctx, reg, ws, "c1", "note", `{"title":"x"}`)
		}, "ok", "generic", ""},
		{"generic-error", "c1", func(b *coretest.Builder, reg *core.Registry, ws string) {
			b.Exec(ctx, reg, ws, "c1", "read", `{"file_path":"../../etc/shadow"}`)
		}, "error", "generic", ""},
		{"outcome-unknown", "c1", func(b *coretest.Builder, _ *core.Registry, _ string) {
			b.Assistant("", [3]string{"c1", "bash", bash("rm -rf build")})
			b.Call("c1", "bash", bash("rm -rf build")).Repair()
		}, "error", "generic", "outcome-unknown"},
		{"not-started", "c9", func(b *coretest.Builder, _ *core.Registry, _ string) {
			b.Assistant("", [3]string{"c9", "read", `{"file_path":"main.go"}`}).Repair()
		}, "error", "generic", "not-started"},
		{"aborted-before-dispatch", "c1", func(b *coretest.Builder, _ *core.Registry, _ string) {
			b.Call("c1", "note", `{"title":"x"}`).Logged("c1", core.AbortedBeforeDispatch())
		}, "error", "generic", "aborted-before-dispatch"},
		{"approval-awaiting", "c1", func(b *coretest.Builder, _ *core.Registry, _ string) {
			b.Call("c1", "bash", bash("rm -rf build/")).Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a1", ToolName: "bash", CallID: "c1", Reason: `command matches "^rm "`}, nil)
		}, "awaiting", "terminal", ""},
		{"approval-awaiting-diff", "c1", func(b *coretest.Builder, _ *core.Registry, _ string) {
			b.Call("c1", "write", `{"file_path":"/etc/motd","content":"hello\nworld\n"}`).
				Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a1", ToolName: "write", CallID: "c1", Reason: `file_path does not match "^src/"`}, nil)
		}, "awaiting", "diff", ""},
		{"running-approved", "c1", func(b *coretest.Builder, _ *core.Registry, _ string) {
			b.Call("c1", "bash", bash("deploy")).Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a1", ToolName: "bash", CallID: "c1", Reason: "bash calls need approval"}, nil)
			b.Add(core.EventApprovalDecided, core.ApprovalDecided{ID: "a1", Outcome: core.ApprovalAllowedOnce, By: "the owner", Note: "ship it"}, nil)
		}, "running", "terminal", ""},
		{"approval-rejected", "c1", func(b *coretest.Builder, _ *core.Registry, _ string) {
			b.Call("c1", "bash", bash("rm -rf build/")).Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a1", ToolName: "bash", CallID: "c1", Reason: `command matches "^rm "`}, nil)
			b.Add(core.EventApprovalDecided, core.ApprovalDecided{ID: "a1", Outcome: core.ApprovalRejected, By: "a page in Chrome at 127.0.0.1", Note: "use make clean"}, nil)
			b.Result("c1", `Error: the user rejected tool "bash": use make clean`, true, nil, nil)
		}, "error", "generic", ""},
		{"approval-timed-out", "c1", func(b *coretest.Builder, _ *core.Registry, _ string) {
			b.Call("c1", "bash", bash("deploy")).Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a1", ToolName: "bash", CallID: "c1"}, nil)
			b.Add(core.EventApprovalDecided, core.ApprovalDecided{ID: "a1", Outcome: core.ApprovalCancelled, Reason: "nobody decided within 5m0s"}, nil)
			b.Result("c1", `Error: approval for tool "bash" was cancelled: nobody decided within 5m0s`, true, nil, nil)
		}, "error", "generic", ""},
		{"approval-repaired", "c1", func(b *coretest.Builder, _ *core.Registry, _ string) {
			b.Assistant("", [3]string{"c1", "bash", bash("rm -rf build/")})
			b.Call("c1", "bash", bash("rm -rf build/")).Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a1", ToolName: "bash", CallID: "c1", Reason: `command matches "^rm "`}, nil)
			b.Repair()
		}, "error", "generic", "not-started"},
	}
}

func jsonStr(s string) string {
	b, _ := core.MarshalNoEscape(s)
	return string(b)
}

// cardWorkspace seeds a workspace for the card cases: a 200-line main.go,
// a.go and a few TODO lines; many/ holds more TODO lines than grep shows
// inline.
func cardWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	var main strings.Builder
	main.WriteString("package main\n\nimport \"fmt\"\n\n")
	for i := 5; i <= 200; i++ {
		switch i {
		case 10:
			main.WriteString("func main() {\n")
		case 11:
			main.WriteString("\tfmt.Println(\"<hi>\")\n")
		case 12:
			main.WriteString("}\n")
		default:
			main.WriteString("// line " + strconv.Itoa(i) + "\n")
		}
	}
	files := map[string]string{
		"main.go":       main.String(),
		"a.go":          "package a\n\nvar x = 1\nvar y = 2\n",
		"todo.txt":      "TODO: one thing\nnot this\nTODO: <another> thing\n",
		"many/todo.txt": strings.Repeat("TODO: one more thing\n", 300),
	}
	if err := os.Mkdir(filepath.Join(ws, "many"), 0o755); err != nil {
		t.Fatal(err)
	}
	// One modification time for every file: glob lists paths oldest
	// first, then by path, and files written in a map's order could fall
	// either side of a tick of the file system's clock (the golden once
	// listed main.go before a.go).
	mod := time.UnixMilli(t0)
	for name, body := range files {
		path := filepath.Join(ws, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// foldCase builds the case's log, its tools run in a fresh workspace ws,
// and folds it with the production presenters.
func foldCase(t *testing.T, c cardCase) (tl *views.Timeline, ws string) {
	t.Helper()
	ws = cardWorkspace(t)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart()
	c.build(b, toolRegistry(t, ws), ws)
	return views.Fold(core.SessionHeader{ID: "s1", CreatedAt: t0, Cwd: "/work"}, b.Events, presenters(t)), ws
}

// renderCard renders the card of callID in a session whose cwd is /work;
// the tools' own mentions of their workspace ws are written as /work too, so
// goldens do not depend on the temporary directory.
func renderCard(t *testing.T, tl *views.Timeline, ws, callID string) string {
	t.Helper()
	cards := tl.CardsByCallID(callID)
	if len(cards) == 0 {
		t.Fatalf("no card for %q", callID)
	}
	html, err := views.Render(context.Background(), views.CardComponent(views.NewCardView(cards[0], "s1", "/work")))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(html, ws, "/work")
}

func TestCardGolden(t *testing.T) {
	for _, c := range cardCases() {
		t.Run(c.name, func(t *testing.T) {
			tl, ws := foldCase(t, c)
			html := renderCard(t, tl, ws, c.callID)
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
		tl, ws := foldCase(t, c)
		d, err := goquery.NewDocumentFromReader(strings.NewReader(renderCard(t, tl, ws, c.callID)))
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
	if got := doc("generic-error").Find(`[data-testid="error-identity"]`).Text(); got != "FsError · FS_SANDBOX_DENIED" {
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
	truncated := cardCase{name: "search-truncated", callID: "c1", build: func(b *coretest.Builder, reg *core.Registry, ws string) {
		b.Exec(context.Background(), reg, ws, "c1", "grep", `{"pattern":"TODO","path":"many"}`)
	}}
	tl, ws := foldCase(t, truncated)
	d, err := goquery.NewDocumentFromReader(strings.NewReader(renderCard(t, tl, ws, "c1")))
	if err != nil {
		t.Fatal(err)
	}
	if d.Find(".recovery").Length() != 1 {
		t.Error("a truncated search does not show the recovery text")
	}
}
