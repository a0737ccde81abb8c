// Package mcptest is a real MCP server built from the official SDK, for
// tests of prism's MCP tools: a text tool (echo, read-only), an image tool
// (render.chart: a PNG, a small PNG or an SVG), an erroring tool (fail), a
// tool that hangs until cancelled (hang, which first writes "hang started
// pid=N" to stderr) and a structured-only tool (stats). A test binary runs
// it as its own child process: call RunIfChild first in TestMain and use
// Command as the server's command line.
package mcptest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"log"
	"os"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Env makes a test binary run as the test server.
const Env = "PRISM_MCP_TEST_SERVER"

// RunIfChild runs the test server over stdio and exits when the process was
// started by Command; otherwise it returns at once.
func RunIfChild() {
	if os.Getenv(Env) != "1" {
		return
	}
	if err := NewServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		log.Fatalf("mcptest server: %v", err)
	}
	os.Exit(0)
}

// Spec is the --mcp value that runs the current test binary as the test
// server under name: NAME='env' 'PRISM_MCP_TEST_SERVER=1' '<binary>' … with
// every word quoted as a shell would need.
func Spec(name string) (string, error) {
	cmd, err := Command()
	if err != nil {
		return "", err
	}
	q := make([]string, len(cmd))
	for i, w := range cmd {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return name + "=" + strings.Join(q, " "), nil
}

// Command is the command line that runs the current test binary as the
// test server: env PRISM_MCP_TEST_SERVER=1 <binary> -test.run=^$.
func Command() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return []string{"env", Env + "=1", exe, "-test.run=^$"}, nil
}

type textArgs struct {
	Text string `json:"text"`
}

type imageArgs struct {
	Kind string `json:"kind,omitempty"`
}

// NewServer is a real MCP server built from the SDK with a text tool,
// an image tool, an erroring tool, a hanging tool and a structured one.
func NewServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "prism-test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Title: "Echo text", Description: "Echo the text back.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, a textArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "echo: " + a.Text},
				&sdk.ResourceLink{URI: "file:///tmp/echo.txt", Name: "echo.txt", MIMEType: "text/plain"},
			}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "render.chart", Description: "Render a chart image."},
		func(_ context.Context, _ *sdk.CallToolRequest, a imageArgs) (*sdk.CallToolResult, any, error) {
			res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Revenue by quarter"}}}
			switch a.Kind {
			case "svg":
				res.Content = append(res.Content, &sdk.ImageContent{MIMEType: "image/svg+xml",
					Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`)})
			case "small":
				res.Content = append(res.Content, &sdk.ImageContent{MIMEType: "image/png", Data: ChartPNG(48, 32)})
			default:
				res.Content = append(res.Content, &sdk.ImageContent{MIMEType: "image/png", Data: ChartPNG(800, 500)})
			}
			return res, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk on fire"}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answers until cancelled."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			// Tell the test (through stderr, which prism logs) that the call
			// arrived and which process to kill.
			fmt.Fprintf(os.Stderr, "hang started pid=%d\n", os.Getpid())
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	sdk.AddTool(s, &sdk.Tool{Name: "stats", Description: "Structured output only."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"files": 3}}, nil, nil
		})
	return s
}

// ChartPNG draws a deterministic bar chart (drawn once per size).
func ChartPNG(w, h int) []byte {
	chartMu.Lock()
	defer chartMu.Unlock()
	key := [2]int{w, h}
	if b, ok := charts[key]; ok {
		return b
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.RGBA{0xf8, 0xfa, 0xfc, 0xff}), image.Point{}, draw.Src)
	bars := []color.RGBA{{0x3b, 0x82, 0xf6, 0xff}, {0x10, 0xb9, 0x81, 0xff}, {0xf5, 0x9e, 0x0b, 0xff}, {0xef, 0x44, 0x44, 0xff}}
	slot := w / len(bars)
	for i, c := range bars {
		top := h - h*(i+1)*2/(len(bars)*2+1)
		r := image.Rect(i*slot+slot/6, top, (i+1)*slot, h)
		draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	charts[key] = buf.Bytes()
	return buf.Bytes()
}

var (
	chartMu sync.Mutex
	charts  = map[[2]int][]byte{}
)
