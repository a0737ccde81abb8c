package mcp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"prism/core"
	"prism/core/logkey"
	"prism/mcp"
	"prism/mcp/mcptest"
)

// stderrWatch is a slog handler that hands the test servers' stderr lines
// to a channel, so a test can wait for a server to reach a point.
type stderrWatch struct {
	lines chan string
}

func newStderrWatch() *stderrWatch { return &stderrWatch{lines: make(chan string, 64)} }

func (w *stderrWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w *stderrWatch) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "mcp server stderr" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == logkey.Line {
			select {
			case w.lines <- a.Value.String():
			default:
			}
		}
		return true
	})
	return nil
}
func (w *stderrWatch) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *stderrWatch) WithGroup(string) slog.Handler      { return w }

// wait returns the first stderr line matching re.
func (w *stderrWatch) wait(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l := <-w.lines:
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("the server never logged %s", re)
		}
	}
}

// connect starts the test server over stdio as a child process.
func connect(t *testing.T, opts mcp.Options) (*mcp.Server, *core.Registry) {
	t.Helper()
	cfg, err := mcp.ParseSpec(spec(t, "test"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcp.Connect(context.Background(), cfg, opts)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	reg := core.NewRegistry(nil)
	if err := reg.Register(srv.Tools()...); err != nil {
		t.Fatal(err)
	}
	return srv, reg
}

func execute(reg *core.Registry, name, raw string) core.Result {
	return reg.Execute(context.Background(), core.Call{CallID: "c-" + name, Name: name, RawArguments: raw})
}

func failure(t *testing.T, r core.Result) *core.Failure {
	t.Helper()
	f, ok := r.(*core.Failure)
	if !ok {
		t.Fatalf("result = %s, want a failure", mustJSON(r))
	}
	return f
}

func success(t *testing.T, r core.Result) *core.Success {
	t.Helper()
	s, ok := r.(*core.Success)
	if !ok {
		t.Fatalf("result = %s, want a success", mustJSON(r))
	}
	return s
}

func mustJSON(v any) string {
	b, err := core.MarshalNoEscape(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func TestToolsAreListedAsRawTools(t *testing.T) {
	_, reg := connect(t, mcp.Options{})
	var names []string
	for _, s := range reg.Schemas() {
		names = append(names, s.Name)
	}
	want := []string{"mcp__test__echo", "mcp__test__fail", "mcp__test__hang", "mcp__test__render_chart", "mcp__test__stats"}
	if diff := cmp.Diff(want, sortedCopy(names)); diff != "" {
		t.Errorf("tool names (-want +got):\n%s", diff)
	}
	echo, _ := reg.Get("mcp__test__echo")
	var params map[string]any
	if err := json.Unmarshal(echo.Schema().Parameters, &params); err != nil {
		t.Fatal(err)
	}
	props, _ := params["properties"].(map[string]any)
	if params["type"] != "object" || props["text"] == nil {
		t.Errorf("the server's input schema is not sent as is: %s", echo.Schema().Parameters)
	}
	if reg.ExecutionMode("mcp__test__echo", map[string]any{}) != core.Parallel {
		t.Error("a readOnlyHint tool is not parallel")
	}
	if reg.ExecutionMode("mcp__test__fail", map[string]any{}) != core.Exclusive {
		t.Error("a tool without readOnlyHint is not exclusive")
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestCallProjections(t *testing.T) {
	_, reg := connect(t, mcp.Options{})

	t.Run("text and resource link", func(t *testing.T) {
		s := success(t, execute(reg, "mcp__test__echo", `{"text":"hi"}`))
		got := s.Content.PlainText()
		want := "echo: hi\n[resource link] echo.txt <file:///tmp/echo.txt> (text/plain)"
		if got != want {
			t.Errorf("content = %q, want %q", got, want)
		}
		var value map[string]any
		_ = json.Unmarshal(s.Value, &value)
		if _, ok := value["content"].([]any); !ok || len(value) != 1 {
			t.Errorf("value = %s, want dsh's {content}", s.Value)
		}
		if string(s.Meta) != `{"server":"test","tool":"echo"}` {
			t.Errorf("meta = %s", s.Meta)
		}
		if v := reg.PresentResult("mcp__test__echo", `{"text":"hi"}`, s.Projection()); v.Card() != core.CardGeneric {
			t.Errorf("text result card = %s, want generic", v.Card())
		}
		if v, ok := reg.PresentCall("mcp__test__echo", `{"text":"hi"}`).(*core.GenericCallView); !ok || v.Title != "Echo text" {
			t.Errorf("call view = %+v, want the server's title", v)
		}
	})

	t.Run("image", func(t *testing.T) {
		s := success(t, execute(reg, "mcp__test__render_chart", `{}`))
		if len(s.Content) != 2 {
			t.Fatalf("content = %s, want the text and one image reference", mustJSON(s.Content))
		}
		img, ok := s.Content[1].(*core.ImageBlock)
		if !ok {
			t.Fatalf("content[1] = %T, want an image block", s.Content[1])
		}
		a := img.Attachment
		if a.MediaType != "image/png" || a.Width != 800 || a.Height != 500 || a.Bytes != int64(len(mcptest.ChartPNG(800, 500))) ||
			!strings.HasPrefix(a.AttachmentID, "sha256:") {
			t.Errorf("attachment = %+v", a)
		}
		if strings.Contains(mustJSON(s.Content), base64.StdEncoding.EncodeToString(mcptest.ChartPNG(800, 500))[:64]) {
			t.Error("model content embeds the image bytes")
		}
		v, ok := reg.PresentResult("mcp__test__render_chart", `{}`, s.Projection()).(*core.ImageResultView)
		if !ok {
			t.Fatalf("result view = %T, want the image card", v)
		}
		th := v.Images[0]
		if th.Width != 320 || th.Height != 200 || th.Original.Width != 800 || th.MediaType != "image/png" {
			t.Errorf("thumbnail = %dx%d %s (of %+v)", th.Width, th.Height, th.MediaType, th.Original)
		}
		if len(th.Data)*3/4 > core.MaxInlineImageBytes || th.Validate() != nil {
			t.Errorf("thumbnail of %d base64 bytes invalid: %v", len(th.Data), th.Validate())
		}
		if len(v.Content) != 1 || v.Content.PlainText() != "Revenue by quarter" {
			t.Errorf("image card text = %q", v.Content.PlainText())
		}
	})

	t.Run("small image is its own thumbnail", func(t *testing.T) {
		s := success(t, execute(reg, "mcp__test__render_chart", `{"kind":"small"}`))
		v := reg.PresentResult("mcp__test__render_chart", `{"kind":"small"}`, s.Projection()).(*core.ImageResultView)
		if v.Images[0].Data != base64.StdEncoding.EncodeToString(mcptest.ChartPNG(48, 32)) {
			t.Error("a small image was re-encoded")
		}
	})

	t.Run("svg is never an image", func(t *testing.T) {
		s := success(t, execute(reg, "mcp__test__render_chart", `{"kind":"svg"}`))
		want := "Revenue by quarter\n[image image/svg+xml not shown: not a PNG, JPEG, GIF or WebP image]"
		if got := s.Content.PlainText(); got != want {
			t.Errorf("content = %q, want %q", got, want)
		}
		if v := reg.PresentResult("mcp__test__render_chart", `{"kind":"svg"}`, s.Projection()); v.Card() != core.CardGeneric {
			t.Errorf("card = %s, want generic", v.Card())
		}
	})

	t.Run("isError is a failure with the server's text", func(t *testing.T) {
		f := failure(t, execute(reg, "mcp__test__fail", `{}`))
		if f.Content.PlainText() != "Error: disk on fire" || f.Error.Info == nil || *f.Error.Info != (core.ErrorInfo{Name: "McpToolError", Code: mcp.CodeToolError}) {
			t.Errorf("failure = %s", mustJSON(f))
		}
	})

	t.Run("structured content only", func(t *testing.T) {
		s := success(t, execute(reg, "mcp__test__stats", `{}`))
		if got := s.Content.PlainText(); got != "{\n  \"files\": 3\n}" {
			t.Errorf("content = %q", got)
		}
		if !strings.Contains(string(s.Value), `"structuredContent":{"files":3}`) {
			t.Errorf("value = %s", s.Value)
		}
	})

	t.Run("arguments that are not an object", func(t *testing.T) {
		for _, raw := range []string{`[1,2]`, `{"text":`} {
			f := failure(t, execute(reg, "mcp__test__echo", raw))
			if f.Content.PlainText() != `Error: invalid arguments: "arguments" must be an object` {
				t.Errorf("%s: %s", raw, mustJSON(f))
			}
		}
	})

	t.Run("the server validates its own input", func(t *testing.T) {
		f := failure(t, execute(reg, "mcp__test__echo", `{"text":7}`))
		if f.Error.Info == nil || f.Error.Info.Code != mcp.CodeRequestFailed && f.Error.Info.Code != mcp.CodeToolError {
			t.Errorf("failure = %s", mustJSON(f))
		}
	})
}

func TestHangingToolTimesOut(t *testing.T) {
	_, reg := connect(t, mcp.Options{CallTimeout: time.Second})
	f := failure(t, execute(reg, "mcp__test__hang", `{}`))
	if f.Content.PlainText() != "Error: tool call timed out after 1000ms" || f.Error.Info.Code != core.CodeToolTimeout {
		t.Errorf("failure = %s", mustJSON(f))
	}
	// The session goes on: the same connection answers the next call.
	success(t, execute(reg, "mcp__test__echo", `{"text":"after"}`))
}

func TestServerKilledMidCallReconnects(t *testing.T) {
	watch := newStderrWatch()
	_, reg := connect(t, mcp.Options{Logger: slog.New(watch)})
	done := make(chan core.Result, 1)
	go func() { done <- execute(reg, "mcp__test__hang", `{}`) }()
	m := watch.wait(t, regexp.MustCompile(`hang started pid=(\d+)`))
	pid, _ := strconv.Atoi(m[1])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	f := failure(t, <-done)
	if f.Error.Info == nil || f.Error.Info.Code != mcp.CodeUnavailable ||
		!strings.HasPrefix(f.Content.PlainText(), `Error: mcp server "test": tools/call "hang" failed: `) ||
		!strings.HasSuffix(f.Content.PlainText(), "the next call reconnects)") {
		t.Errorf("failure = %s", mustJSON(f))
	}
	s := success(t, execute(reg, "mcp__test__echo", `{"text":"again"}`))
	if !strings.HasPrefix(s.Content.PlainText(), "echo: again") {
		t.Errorf("after reconnect: %q", s.Content.PlainText())
	}
	go func() { done <- execute(reg, "mcp__test__hang", `{}`) }()
	m2 := watch.wait(t, regexp.MustCompile(`hang started pid=(\d+)`))
	if m2[1] == m[1] {
		t.Errorf("the next call reached the killed process %s", m[1])
	}
	_ = syscall.Kill(mustAtoi(m2[1]), syscall.SIGKILL)
	<-done
}

func mustAtoi(s string) int { n, _ := strconv.Atoi(s); return n }

func TestUnreachableServerIsAClearError(t *testing.T) {
	cfg, _ := mcp.ParseSpec("gone=/nonexistent/mcp-server --stdio")
	_, err := mcp.Connect(context.Background(), cfg, mcp.Options{ConnectTimeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), `mcp server "gone" is unavailable`) || core.ErrorCode(err) != mcp.CodeUnavailable {
		t.Errorf("Connect = %v", err)
	}
}

func TestStreamableHTTP(t *testing.T) {
	srv := mcptest.NewServer()
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer ts.Close()
	cfg, err := mcp.ParseSpec("web=" + ts.URL + "/mcp")
	if err != nil || cfg.URL == "" {
		t.Fatalf("ParseSpec = %+v, %v", cfg, err)
	}
	s, err := mcp.Connect(context.Background(), cfg, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reg := core.NewRegistry(nil)
	reg.MustRegister(s.Tools()...)
	got := success(t, execute(reg, "mcp__web__echo", `{"text":"over http"}`))
	if !strings.HasPrefix(got.Content.PlainText(), "echo: over http") {
		t.Errorf("content = %q", got.Content.PlainText())
	}
}

// TestPresentersByName: a Go program attaches presenters to an MCP tool by
// its full name, like any tool's; other tools keep the defaults.
func TestPresentersByName(t *testing.T) {
	_, reg := connect(t, mcp.Options{Presenters: map[string]mcp.Presenter{
		"mcp__test__echo": {
			Call: func(args any) core.CallView {
				return &core.TerminalCallView{Title: "echo " + args.(map[string]any)["text"].(string)}
			},
			Result: func(_ any, r core.ToolResult) core.ResultView {
				out := r.Content.PlainText()
				return &core.TerminalResultView{Output: &out}
			},
		},
	}})
	s := success(t, execute(reg, "mcp__test__echo", `{"text":"hi"}`))
	if v, ok := reg.PresentCall("mcp__test__echo", `{"text":"hi"}`).(*core.TerminalCallView); !ok || v.Title != "echo hi" {
		t.Errorf("call view = %#v", v)
	}
	if v, ok := reg.PresentResult("mcp__test__echo", `{"text":"hi"}`, s.Projection()).(*core.TerminalResultView); !ok || !strings.HasPrefix(*v.Output, "echo: hi") {
		t.Errorf("result view = %#v", v)
	}
	if v := reg.PresentCall("mcp__test__fail", `{}`); v.Card() != core.CardGeneric {
		t.Errorf("another tool's call view = %s", v.Card())
	}
}
