package views_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
)

const hostile = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1"><a href="javascript:window.__pwned=1">x</a>"' onmouseover="window.__pwned=1` + "\r\n\x1b[31mred\x1b[0m\x00"

// badPresenter returns broken views for some tools and panics for others.
type badPresenter struct{ views.Presenter }

func (p badPresenter) PresentCall(name, raw string) core.CallView {
	switch name {
	case "panic":
		panic("presenter bug")
	case "nilview":
		var v *core.TerminalCallView
		return v
	case "baddiff":
		return &core.DiffCallView{Title: "x", Diffs: []core.FileDiff{{Path: ""}}}
	}
	return p.Presenter.PresentCall(name, raw)
}

func (p badPresenter) PresentResult(name, raw string, r core.ToolResult) core.ResultView {
	switch name {
	case "panic":
		panic("presenter bug")
	case "nilview":
		var v *core.ReadResultView
		return v
	case "baddiff":
		return &core.DiffResultView{}
	case "badterm":
		n := 1
		return &core.TerminalResultView{ExitCode: &n, Signal: "SIGTERM"}
	case "badread":
		return &core.ReadResultView{Path: "x", Lines: []core.ReadFileLine{{Number: -5, Text: hostile}}, TotalLines: -1}
	}
	return p.Presenter.PresentResult(name, raw, r)
}

var testMeta = views.PageMeta{Title: "t", Assets: views.Assets{CSS: "/static/app.css", HighlightCSS: "/static/highlight.css", JS: "/static/app.js", Datastar: "/static/datastar.js", Icon: "/static/icon.svg"}}

func hostileSession() []core.Event {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User(hostile)
	b.Chunks(hostile)
	b.Assistant("# hi\n" + hostile + "\n[link](javascript:window.__pwned=1) <iframe src=x></iframe>\n![img](https://evil.example/x.png)")
	b.Call("c-script", "bash", `{"command":"echo \"<script>window.__pwned=1</script>\""}`).Result("c-script", hostile, false, nil, nil)
	b.Call(`call "quoted" id with spaces </article>`, "note", `{"x":"`+strings.ReplaceAll(hostile, `"`, `\"`)+`"}`)
	b.Result(`call "quoted" id with spaces </article>`, hostile, true, nil, &core.ErrorInfo{Name: "<b>X</b>", Code: `"><script>`})
	b.Call("big", "bash", `{"command":"cat big"}`).Result("big", strings.Repeat("A", 10<<20), false, nil, nil)
	b.Call("many", "bash", `{"command":"seq 100000"}`).Result("many", strings.Repeat("line\n", 100000), false, nil, nil)
	for _, n := range []string{"panic", "nilview", "baddiff", "badterm", "badread"} {
		b.Call("k-"+n, n, `not json {`).Result("k-"+n, hostile, false, []byte(`{"oops":`), nil)
	}
	b.Call("web", "web_search", `{}`).Result("web", "x", false, map[string]any{"sources": []map[string]any{
		{"url": "javascript:window.__pwned=1", "title": hostile}, {"url": "data:text/html,<script>1</script>"}, {"url": "https://ok.example/?q=\"<x>"}}}, nil)
	b.AddRaw("vendor/"+hostile, []byte("{\"bad\":\"\xff\xfe\"}"), nil)
	b.StepEnd().TurnEnd(core.TurnCompleted)
	return b.Events
}

// assertSafe parses a page and fails on any executable or unescaped markup
// a tool could have injected.
func assertSafe(t *testing.T, page string) {
	t.Helper()
	if !utf8.ValidString(page) {
		t.Error("page is not valid UTF-8")
	}
	if strings.ContainsAny(page, "\r\x00\x1b") {
		t.Error("page carries CR, NUL or ESC bytes")
	}
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script":
				src := ""
				for _, a := range n.Attr {
					if a.Key == "src" {
						src = a.Val
					}
				}
				if !strings.HasPrefix(src, "/static/") {
					t.Errorf("a script element that is not ours: %v", n.Attr)
				}
			case "iframe", "object", "embed", "img":
				for _, a := range n.Attr {
					if a.Key == "src" && !strings.HasPrefix(a.Val, "/static/") {
						t.Errorf("<%s src=%q>", n.Data, a.Val)
					}
				}
			}
			for _, a := range n.Attr {
				k := strings.ToLower(a.Key)
				if strings.HasPrefix(k, "on") {
					t.Errorf("event handler attribute %s=%q on <%s>", a.Key, a.Val, n.Data)
				}
				if (k == "href" || k == "src" || k == "action") && !(strings.HasPrefix(a.Val, "/") || strings.HasPrefix(a.Val, "https://") || strings.HasPrefix(a.Val, "http://") || strings.HasPrefix(a.Val, "#")) {
					t.Errorf("%s=%q on <%s>", a.Key, a.Val, n.Data)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

func TestBadInput_PageRendersSafelyAndBounded(t *testing.T) {
	events := hostileSession()
	tl := views.Fold(hdr(), events, badPresenter{presenters(t)})
	page, err := views.Render(context.Background(), views.SessionPage(views.NewSessionPage(testMeta, tl, 1000, true)))
	if err != nil {
		t.Fatal(err)
	}
	assertSafe(t, page)
	if len(page) > 2<<20 {
		t.Errorf("page is %d bytes; a 10 MB line and 100k lines must be bounded", len(page))
	}
	for _, want := range []string{"showing 12 of 100,000 lines", "+10,484,760 chars", "&lt;script&gt;window.__pwned=1&lt;/script&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Broken views fall back to the generic card.
	for _, n := range []string{"panic", "nilview", "baddiff", "badterm", "badread"} {
		c := tl.CardsByCallID("k-" + n)[0]
		v := views.NewCardView(c, "s1", "/work")
		if _, generic := v.Body.(*views.GenericBody); v.Kind != core.CardGeneric || !generic {
			t.Errorf("tool %s: card kind %q, want the generic fallback", n, v.Kind)
		}
	}
	q := tl.CardsByCallID(`call "quoted" id with spaces </article>`)
	if len(q) != 1 || strings.ContainsAny(q[0].ID, ` "<>`) {
		t.Errorf("quoted call id card: %v", q)
	}
}

func TestBadInput_SSEPatchesAreSafe(t *testing.T) {
	events := hostileSession()
	tl := views.NewTimeline(hdr(), badPresenter{presenters(t)})
	for i := range events {
		u := tl.Apply(&events[i])
		ps, err := views.RenderUpdate(context.Background(), tl, u)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if strings.ContainsAny(p.HTML, "\r") {
				t.Fatalf("seq %d: a CR in a patch would split an SSE line", events[i].Seq)
			}
			assertSafe(t, "<!doctype html><body>"+p.HTML)
		}
	}
}

func FuzzCard(f *testing.F) {
	f.Add("c1", "bash", `{"command":"ls"}`, "out\n[exit code: 3]", false)
	f.Add(`a"b c`, "read", `{"path":"<x>"}`, hostile, true)
	for _, r := range invisibles { // a seed with each invisible character
		s := "RTL-" + string(r) + "override"
		f.Add("c"+string(r), "note", `{"title":"`+s+`"}`, s+"\n"+s, r%2 == 0)
	}
	reg := presenters(f)
	f.Fuzz(func(t *testing.T, callID, name, args, out string, isErr bool) {
		b := coretest.NewBuilder(t0)
		b.TurnStart().StepStart().Call(callID, name, args).Result(callID, out, isErr, nil, nil)
		tl := views.Fold(hdr(), b.Events, reg)
		cs := tl.CardsByCallID(callID)
		if len(cs) == 0 {
			t.Skip() // the builder's JSON carries the id as given; Go may have replaced invalid UTF-8
		}
		h, err := views.Render(context.Background(), views.CardComponent(views.NewCardView(cs[0], "s1", "/")))
		if err != nil {
			t.Fatal(err)
		}
		assertSafe(t, "<!doctype html><body>"+h)
		for _, r := range invisibles {
			if strings.ContainsRune(h, r) {
				t.Errorf("the card carries U+%04X", r)
			}
		}
	})
}

// TestBadInput_CRInModelAndSessionFields: a model name, a session id, a
// parent id or a title with a CR renders without it (a CR would end an SSE
// data line and let the rest become a field of its own).
func TestBadInput_CRInModelAndSessionFields(t *testing.T) {
	const evil = "x\rdata: mode remove\x00"
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart()
	m := core.Message{ID: "a1", Role: core.RoleAssistant, Content: core.Text("hi"),
		Source: core.Source{Kind: core.SourceModel, Provider: "p", Model: "m1" + evil}}
	b.Add(core.EventAssistantMessage, core.AssistantMessage{Turn: 1, Step: 1, Message: m}, core.AppendOp())
	tl := views.Fold(core.SessionHeader{ID: "s" + evil, ParentSession: "p" + evil, CreatedAt: t0}, b.Events, presenters(t))
	page, err := views.Render(context.Background(), views.SessionPage(views.NewSessionPage(testMeta, tl, 10, true)))
	if err != nil {
		t.Fatal(err)
	}
	row, err := views.Render(context.Background(), views.SessionRow(&views.SessionRowView{
		ID: "s" + evil, Title: "t" + evil, Status: "idle" + evil, Parent: "p" + evil, URL: "/sessions/x"}))
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]string{"session page": page, "session row": row} {
		if strings.ContainsAny(h, "\r\x00") {
			t.Errorf("%s carries a CR or NUL: %q", name, h)
		}
	}
	if !strings.Contains(page, `<span class="model">m1x</span>`) {
		t.Errorf("model name not shown as its first line: %s", page)
	}
}
