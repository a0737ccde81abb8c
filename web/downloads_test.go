package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/core/coretest"
)

// TestCallDownloads: a call's content.txt, arguments.txt and meta.json —
// exact bytes, 404 where a part does not exist yet, ?card= for a reused
// call id, the same under a share link (redacted) — and the card's
// truncation note links them.
func TestCallDownloads(t *testing.T) {
	e, _ := shareEnv(t, nil)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("go")
	long := strings.Repeat("line\n", 300) + "last"
	bad := `{"file_path": "README.md"` // invalid JSON, kept raw
	b.Assistant("", [3]string{"c-long", "bash", `{"command":"seq 300"}`}, [3]string{"c-bad", "read", bad})
	b.Call("c-long", "bash", `{"command":"seq 300"}`).Result("c-long", long, false, map[string]any{"exitCode": 0, "command": "seq 300"}, nil)
	b.Call("c-bad", "read", bad).Result("c-bad", `Error: invalid arguments: "arguments" must be an object`, true, nil, &core.ErrorInfo{Name: "ToolInputError", Code: "INVALID_ARGS"})
	b.StepEnd().StepStart()
	b.Assistant("", [3]string{"c-long", "note", `{"title":"again, token=sk-abcdefghijklmnopqrstuvwx"}`})
	b.Call("c-long", "note", `{"title":"again, token=sk-abcdefghijklmnopqrstuvwx"}`).Result("c-long", "second", false, nil, nil)
	b.Call("c-pending", "note", `{"title":"waits"}`)
	e.session(t, "dl", b.Events)

	get := func(path string) (int, string, string) {
		res, body := e.do(t, http.MethodGet, path, nil)
		return res.StatusCode, res.Header.Get("Content-Type"), body
	}
	tests := []struct {
		path, ctype, body string
		status            int
	}{
		{"/sessions/dl/calls/c-long/content.txt", "text/plain; charset=utf-8", long, 200},
		{"/sessions/dl/calls/c-long/arguments.txt", "text/plain; charset=utf-8", `{"command":"seq 300"}`, 200},
		{"/sessions/dl/calls/c-long/meta.json", "application/json", "{\n  \"command\": \"seq 300\",\n  \"exitCode\": 0\n}\n", 200},
		{"/sessions/dl/calls/c-bad/arguments.txt", "text/plain; charset=utf-8", bad, 200},
		{"/sessions/dl/calls/c-bad/meta.json", "application/json", "null\n", 200},
		{"/sessions/dl/calls/c-pending/arguments.txt", "text/plain; charset=utf-8", `{"title":"waits"}`, 200},
		{"/sessions/dl/calls/c-pending/content.txt", "", "", 404},
		{"/sessions/dl/calls/c-pending/meta.json", "", "", 404},
		{"/sessions/dl/calls/c-nope/arguments.txt", "", "", 404},
		{"/sessions/nope/calls/c-long/arguments.txt", "", "", 404},
	}
	for _, tt := range tests {
		status, ctype, body := get(tt.path)
		if status != tt.status || tt.status == 200 && (ctype != tt.ctype || body != tt.body) {
			t.Errorf("GET %s = %d %q %q, want %d %q %q", tt.path, status, ctype, body, tt.status, tt.ctype, tt.body)
		}
	}
	// A reused call id: ?card= picks the second card.
	_, page := e.get(t, "/sessions/dl")
	cards := doc(t, page).Find(`[data-call-id="c-long"]`)
	if cards.Length() != 2 {
		t.Fatalf("%d cards of c-long", cards.Length())
	}
	second, _ := cards.Eq(1).Attr("id")
	if _, _, body := get("/sessions/dl/calls/c-long/content.txt?card=" + second); body != "second" {
		t.Errorf("content.txt?card=%s = %q, want the second card's", second, body)
	}
	// The long output's card links its downloads from its line count; each
	// link answers.
	links := cards.Eq(0).Find(`[data-testid="call-downloads"] a`)
	if links.Length() != 3 {
		t.Fatalf("truncated card has %d download links, want 3", links.Length())
	}
	links.Each(func(_ int, a *goquery.Selection) {
		href, _ := a.Attr("href")
		if status, _, _ := get(href); status != 200 {
			t.Errorf("download link %s = %d", href, status)
		}
	})
	if n := doc(t, page).Find(`[data-call-id="c-bad"] [data-testid="call-downloads"]`).Length(); n != 0 {
		t.Errorf("a card that shows everything links downloads (%d)", n)
	}

	// Through a share link: the same files, redacted; pending still 404.
	_, link := e.share(t, "dl", "{}")
	if status, _, body := get(link + "/calls/c-long/arguments.txt?card=" + second); status != 200 || strings.Contains(body, "sk-abc") || !strings.Contains(body, "[redacted:") {
		t.Errorf("shared arguments.txt = %d %q, want it redacted", status, body)
	}
	if status, _, body := get(link + "/calls/c-long/meta.json"); status != 200 || !json.Valid([]byte(body)) {
		t.Errorf("shared meta.json = %d %q", status, body)
	}
	if status, _, _ := get(link + "/calls/c-pending/content.txt"); status != 404 {
		t.Errorf("shared content.txt of a pending call = %d", status)
	}
}

// TestCallDownloads_notStarted: a call the crash never logged (its card
// "not started") serves the arguments of the turn's assistant request, and
// its projections page names the tool, though the call's own events hold
// neither (the handlers fold the whole log for such a card).
func TestCallDownloads_notStarted(t *testing.T) {
	e := newEnv(t, nil)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("go").Assistant("", [3]string{"c9", "bash", `{"command":"go test ./..."}`}).Repair()
	e.session(t, "ns", b.Events)
	res, body := e.do(t, http.MethodGet, "/sessions/ns/calls/c9/arguments.txt", nil)
	if res.StatusCode != 200 || body != `{"command":"go test ./..."}` {
		t.Errorf("arguments.txt of a never-logged call = %d %q, want 200 and the requested arguments", res.StatusCode, body)
	}
	res, page := e.get(t, "/sessions/ns/calls/c9")
	if got := strings.TrimSpace(doc(t, page).Find(`[data-testid="tool-card"] .tool`).First().Text()); res.StatusCode != 200 || got != "bash" {
		t.Errorf("projections page of a never-logged call = %d, tool %q, want bash", res.StatusCode, got)
	}
}
