package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/core/agent"
	"prism/core/model"
	"prism/mcp"
	"prism/mcp/mcptest"
	"prism/views"
)

// TestAgentLoopCallsMCPTools drives the agent loop on a scripted model that
// calls each kind of MCP tool — text, image, SVG "image", erroring, hanging
// — in one step, and checks the durable log, the model-facing transcript
// and the cards the inspector renders from the log.
func TestAgentLoopCallsMCPTools(t *testing.T) {
	// Two servers from the same binary: "test" with the default deadline,
	// "slow" with a short one for its hanging tool.
	_, reg := connect(t, mcp.Options{})
	slowCfg, err := mcp.ParseSpec(spec(t, "slow"))
	if err != nil {
		t.Fatal(err)
	}
	slow, err := mcp.Connect(context.Background(), slowCfg, mcp.Options{CallTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slow.Close() })
	hang, _ := func() (*core.Tool, bool) {
		for _, tool := range slow.Tools() {
			if tool.Name() == "mcp__slow__hang" {
				return tool, true
			}
		}
		return nil, false
	}()
	reg.MustRegister(hang)
	ctx := context.Background()
	sess, err := core.NewSession(ctx, core.SessionHeader{Cwd: t.TempDir()}, core.SessionOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	script := model.Script{Steps: []model.Step{
		{Calls: []model.ScriptCall{
			{ID: "c-echo", Name: "mcp__test__echo", Arguments: `{"text":"hello"}`},
			{ID: "c-chart", Name: "mcp__test__render_chart", Arguments: `{}`},
			{ID: "c-svg", Name: "mcp__test__render_chart", Arguments: `{"kind":"svg"}`},
			{ID: "c-fail", Name: "mcp__test__fail", Arguments: `{}`},
			{ID: "c-hang", Name: "mcp__slow__hang", Arguments: `{}`},
		}},
		{Text: "done"},
	}}
	a, err := agent.New(agent.Config{Session: sess, Tools: reg, Model: model.NewScripted(model.ScriptedConfig{Script: script}),
		ChunkInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	reason, err := a.Turn(ctx, core.NewUserMessage(core.NewID(), "draw the chart"))
	if err != nil || reason.Kind != "completed" {
		t.Fatalf("turn = %+v, %v", reason, err)
	}
	events := sess.Events()
	if err := core.CheckRelations(events); err != nil {
		t.Errorf("CheckRelations: %v", err)
	}

	// The durable log: content as the model sees it, the error identity,
	// the meta (server, tool, thumbnails only for the real image).
	type logged struct {
		Text   string
		Images int
		Error  string
		Thumbs int
	}
	got := map[string]logged{}
	for _, e := range events {
		if e.Type != core.EventToolResult {
			continue
		}
		var d core.ToolResultData
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		block := d.Message.Content[0].(*core.ToolResultBlock)
		l := logged{}
		for _, b := range block.Content {
			switch x := b.(type) {
			case *core.TextBlock:
				l.Text += x.Text + "|"
			case *core.ImageBlock:
				l.Images++
			}
		}
		if d.Error != nil {
			l.Error = d.Error.Name + "/" + d.Error.Code
		}
		var m struct{ Images []json.RawMessage }
		_ = json.Unmarshal(d.Meta, &m)
		l.Thumbs = len(m.Images)
		got[d.CallID()] = l
	}
	want := map[string]logged{
		"c-echo":  {Text: "echo: hello|[resource link] echo.txt <file:///tmp/echo.txt> (text/plain)|"},
		"c-chart": {Text: "Revenue by quarter|", Images: 1, Thumbs: 1},
		"c-svg":   {Text: "Revenue by quarter|[image image/svg+xml not shown: not a PNG, JPEG, GIF or WebP image]|"},
		"c-fail":  {Text: "Error: disk on fire|", Error: "McpToolError/" + mcp.CodeToolError},
		"c-hang":  {Text: "Error: tool call timed out after 1000ms|", Error: "ToolTimeoutError/" + core.CodeToolTimeout},
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s logged %+v, want %+v", id, got[id], w)
		}
	}

	// The model transcript: the tool results, then the final answer.
	var transcript []string
	for _, m := range sess.DeriveMessages() {
		for _, b := range m.Content {
			if r, ok := b.(*core.ToolResultBlock); ok {
				transcript = append(transcript, r.ToolCallID)
			}
		}
	}
	if strings.Join(transcript, ",") != "c-echo,c-chart,c-svg,c-fail,c-hang" {
		t.Errorf("transcript tool results = %v", transcript)
	}

	// The cards, rendered from the log as the inspector does.
	tl := views.Fold(sess.Header(), events, reg)
	card := func(id string) *goquery.Selection {
		t.Helper()
		cs := tl.CardsByCallID(id)
		if len(cs) != 1 {
			t.Fatalf("%d cards for %s", len(cs), id)
		}
		html, err := views.Render(ctx, views.CardComponent(views.NewCardView(cs[0], sess.Header().ID, "")))
		if err != nil {
			t.Fatal(err)
		}
		d, err := goquery.NewDocumentFromReader(strings.NewReader(html))
		if err != nil {
			t.Fatal(err)
		}
		return d.Find(`[data-testid="tool-card"]`)
	}
	for id, w := range map[string]struct{ state, kind string }{
		"c-echo": {"ok", "generic"}, "c-chart": {"ok", "image"}, "c-svg": {"ok", "generic"},
		"c-fail": {"error", "generic"}, "c-hang": {"error", "generic"},
	} {
		c := card(id)
		if s, _ := c.Attr("data-state"); s != w.state {
			t.Errorf("%s state = %s, want %s", id, s, w.state)
		}
		if k, _ := c.Attr("data-card"); k != w.kind {
			t.Errorf("%s card = %s, want %s", id, k, w.kind)
		}
		wantServer := "test"
		if id == "c-hang" {
			wantServer = "slow"
		}
		if srv := c.Find(`[data-testid="mcp-server"]`).Text(); srv != wantServer {
			t.Errorf("%s shows server %q, want %s", id, srv, wantServer)
		}
		if n := c.Find("img").Length(); (n == 1) != (id == "c-chart") {
			t.Errorf("%s has %d images", id, n)
		}
	}
	chart := card("c-chart")
	src, _ := chart.Find(`[data-testid="image"] img`).Attr("src")
	if !strings.HasPrefix(src, "data:image/png;base64,iVBORw0KGgo") {
		t.Errorf("thumbnail src = %.60q…, want a data: PNG", src)
	}
	if cap := chart.Find("figcaption").Text(); cap != "800×500 · "+views.Bytes(int64(len(chartBytes()))) {
		t.Errorf("caption = %q", cap)
	}
	if txt, full := chart.Find(".tool").Text(), chart.Find(".tool").AttrOr("title", ""); txt != "render_chart" || full != "mcp__test__render_chart" {
		t.Errorf("tool name shown = %q (title %q)", txt, full)
	}
	if title := chart.Find(".title").Text(); title != "" {
		t.Errorf("a tool without a title repeats its name as the title: %q", title)
	}
	if title := card("c-echo").Find(".title").Text(); title != "Echo text" {
		t.Errorf("echo title = %q, want the server's title", title)
	}
	if id := card("c-fail").Find(`[data-testid="error-identity"]`).Text(); id != "McpToolError · MCP_TOOL_ERROR" {
		t.Errorf("fail identity = %q", id)
	}
}

func chartBytes() []byte { return mcptest.ChartPNG(800, 500) }
