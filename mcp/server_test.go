package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log"
	"os"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverEnv makes the test binary run as the MCP test server.
const serverEnv = "PRISM_MCP_TEST_SERVER"

// TestMain runs the test MCP server when the test binary is started as a
// child process with serverEnv set, and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		if err := newTestServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			log.Fatalf("test server: %v", err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serverCommand is the --mcp command that runs this test binary as the
// test server.
func serverCommand(t testing.TB) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"env", serverEnv + "=1", exe, "-test.run=^$"}
}

type textArgs struct {
	Text string `json:"text"`
}

type imageArgs struct {
	Kind string `json:"kind,omitempty"`
}

// newTestServer is a real MCP server built from the SDK with a text tool,
// an image tool, an erroring tool, a hanging tool and a structured one.
func newTestServer() *sdk.Server {
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
				res.Content = append(res.Content, &sdk.ImageContent{MIMEType: "image/png", Data: chartPNG(48, 32)})
			default:
				res.Content = append(res.Content, &sdk.ImageContent{MIMEType: "image/png", Data: chartPNG(800, 500)})
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

// chartPNG draws a deterministic bar chart.
func chartPNG(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	bars := []color.RGBA{{0x3b, 0x82, 0xf6, 0xff}, {0x10, 0xb9, 0x81, 0xff}, {0xf5, 0x9e, 0x0b, 0xff}, {0xef, 0x44, 0x44, 0xff}}
	for y := range h {
		for x := range w {
			c := color.RGBA{0xf8, 0xfa, 0xfc, 0xff}
			bar := x * len(bars) / w
			top := h - h*(bar+1)*2/(len(bars)*2+1)
			if x%(w/len(bars)) > w/(len(bars)*6) && y >= top {
				c = bars[bar]
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

