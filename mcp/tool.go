package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"prism/core"
)

// Error identities of MCP failures, persisted as tool/result.data.error.
const (
	// CodeToolError: the server answered the call with isError; the message
	// is the server's text.
	CodeToolError = "MCP_TOOL_ERROR"
	// CodeUnavailable: the server could not be started or reached, or its
	// connection broke during the call; the next call reconnects.
	CodeUnavailable = "MCP_UNAVAILABLE"
	// CodeRequestFailed: the server refused the request with a JSON-RPC
	// error (an unknown tool, invalid parameters, an internal error).
	CodeRequestFailed = "MCP_REQUEST_FAILED"
)

// ToolName returns dsh's name of a server's tool: mcp__<server>__<tool>,
// with characters a model API would refuse (outside A–Z, a–z, 0–9, '_'
// and '-') replaced by '_'.
func ToolName(server, tool string) string {
	return "mcp__" + server + "__" + unsafeChars.ReplaceAllString(tool, "_")
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// SplitToolName splits an MCP tool name into its server and tool parts;
// ok is false for a name that is not mcp__<server>__<tool>.
func SplitToolName(name string) (server, tool string, ok bool) { return core.SplitMCPName(name) }

// Presenter draws the cards of one MCP tool; either function may be nil
// (the default card). Attach one with Options.Presenters, keyed by the
// tool's full name (mcp__<server>__<tool>).
type Presenter struct {
	Call   func(args any) core.CallView
	Result func(args any, result core.ToolResult) core.ResultView
}

// outputSchema is the canonical value's schema: dsh's {content,
// structuredContent?}.
const outputSchema = `{"type":"object","properties":{"content":{"type":"array"},"structuredContent":{}},"required":["content"],"additionalProperties":false}`

// meta is the presentation meta of an MCP result: which server and tool
// answered (their names as the server spells them) and the thumbnails of
// the images it sent.
type meta struct {
	Server string             `json:"server"`
	Tool   string             `json:"tool"`
	Images []core.InlineImage `json:"images,omitempty"`
}

// define builds the raw core tool of one server tool.
func (s *Server) define(t *sdk.Tool) (*core.Tool, error) {
	name := ToolName(s.cfg.Name, t.Name)
	params := json.RawMessage(`{"type":"object"}`)
	if t.InputSchema != nil {
		data, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
		}
		params = data
	}
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	readOnly := t.Annotations != nil && t.Annotations.ReadOnlyHint
	p := s.opts.Presenters[name]
	remote := t.Name
	def := core.RawDefinition{
		Name:        name,
		Description: t.Description,
		Parameters:  params,
		Timeout:     s.opts.timeout(),
		Output: &core.RawOutput{
			Schema: json.RawMessage(outputSchema),
			Render: func(_, value any) (core.Content, error) { return render(value), nil },
			PresentationMeta: func(_, value any) (any, error) {
				return meta{Server: s.cfg.Name, Tool: remote, Images: thumbnails(value)}, nil
			},
		},
		Execute: func(ctx context.Context, args any, _ *core.Run) (any, error) {
			return s.call(ctx, remote, args)
		},
		FinalizeContent:   finalize,
		IsConcurrencySafe: func(any) bool { return readOnly },
		PresentCall:       presentCall(p, name, title),
		PresentResult:     presentResult(p),
	}
	return core.DefineRaw(def)
}

// presentCall is an MCP tool's call presenter: p's, else the generic card
// titled with the server's title of the tool (its full name without one).
func presentCall(p Presenter, name, title string) func(args any) core.CallView {
	return func(args any) core.CallView {
		if p.Call != nil {
			return p.Call(args)
		}
		v := &core.GenericCallView{Title: title, RawInput: args}
		if v.Title == "" {
			v.Title = name // the card then shows the server and tool alone
		}
		return v
	}
}

// presentResult is an MCP tool's result presenter: p's, else PresentImages.
func presentResult(p Presenter) func(args any, r core.ToolResult) core.ResultView {
	return func(args any, r core.ToolResult) core.ResultView {
		if p.Result != nil {
			return p.Result(args, r)
		}
		return PresentImages(r)
	}
}

// Standin returns a tool of an MCP server's tool that only presents: its
// cards are drawn by the same presenters as the tool's (p's functions, else
// MCP's defaults, with title as the server's title of the tool; "" for
// none), and every call fails with MCP_UNAVAILABLE without reaching any
// server. It draws the cards of logged calls, and of recorded calls in
// tests, when the server is not at hand. name is the full name,
// mcp__<server>__<tool>.
func Standin(name, title string, p Presenter) (*core.Tool, error) {
	server, tool, ok := SplitToolName(name)
	if !ok {
		return nil, fmt.Errorf("mcp stand-in: %q is not an MCP tool name (mcp__<server>__<tool>)", name)
	}
	return core.DefineRaw(core.RawDefinition{
		Name:        name,
		Description: "A stand-in for MCP tool " + tool + " of server " + server + ": it draws cards and runs nothing.",
		Parameters:  json.RawMessage(`{"type":"object"}`),
		Output: &core.RawOutput{
			Schema: json.RawMessage(outputSchema),
			Render: func(_, value any) (core.Content, error) { return render(value), nil },
		},
		Execute: func(context.Context, any, *core.Run) (any, error) {
			return nil, &core.Error{Name: "McpConnectionError", Code: CodeUnavailable,
				Message: fmt.Sprintf("tool %q is a stand-in: no MCP server runs it", name)}
		},
		PresentCall:   presentCall(p, name, title),
		PresentResult: presentResult(p),
	})
}

// blocks returns the MCP content blocks of a canonical value's tree.
func blocks(value any) []map[string]any {
	v, _ := value.(map[string]any)
	items, _ := v["content"].([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if b, ok := it.(map[string]any); ok {
			out = append(out, b)
		}
	}
	return out
}

// render maps the server's content to model content: text as text,
// resource links and embedded resources as text that names them, audio as
// a note; images are left to finalize. With no text at all, structured
// content is given as JSON.
func render(value any) core.Content {
	out := core.Content{}
	for _, b := range blocks(value) {
		typ, _ := b["type"].(string)
		switch typ {
		case "text":
			s, _ := b["text"].(string)
			out = append(out, &core.TextBlock{Text: s})
		case "image":
		case "resource_link":
			out = append(out, &core.TextBlock{Text: resourceLinkText(b)})
		case "resource":
			out = append(out, &core.TextBlock{Text: resourceText(b)})
		case "audio":
			mt, _ := b["mimeType"].(string)
			data, _ := b["data"].(string)
			out = append(out, &core.TextBlock{Text: fmt.Sprintf("[audio %s, %d bytes, not shown]", mt, len(data)*3/4)})
		default:
			raw, _ := core.MarshalNoEscape(b)
			out = append(out, &core.TextBlock{Text: string(raw)})
		}
	}
	if len(out) == 0 {
		if sc, ok := value.(map[string]any)["structuredContent"]; ok {
			raw, _ := json.MarshalIndent(sc, "", "  ")
			out = append(out, &core.TextBlock{Text: string(raw)})
		}
	}
	return out
}

func str(b map[string]any, key string) string {
	s, _ := b[key].(string)
	return s
}

func resourceLinkText(b map[string]any) string {
	label := str(b, "title")
	if label == "" {
		label = str(b, "name")
	}
	s := fmt.Sprintf("[resource link] %s <%s>", label, str(b, "uri"))
	if mt := str(b, "mimeType"); mt != "" {
		s += " (" + mt + ")"
	}
	if d := str(b, "description"); d != "" {
		s += "\n" + d
	}
	return s
}

func resourceText(b map[string]any) string {
	r, _ := b["resource"].(map[string]any)
	if t, ok := r["text"].(string); ok {
		return fmt.Sprintf("[resource] <%s>\n%s", str(r, "uri"), t)
	}
	blob, _ := r["blob"].(string)
	return fmt.Sprintf("[resource] <%s> (%s, %d bytes, not shown)", str(r, "uri"), str(r, "mimeType"), len(blob)*3/4)
}

// finalize is dsh's MCP finalizeContent: the images of a successful result
// are appended to its content as image references (after post-execute, so
// text-only policies such as a spill see the text alone); an image that is
// not a well-formed PNG, JPEG, GIF or WebP becomes a note instead. A failed
// result keeps its content.
func finalize(_ *core.Execution, r core.Result) core.Content {
	s, ok := r.(*core.Success)
	if !ok || !strings.Contains(string(s.Value), `"image"`) {
		return nil
	}
	var value any
	if json.Unmarshal(s.Value, &value) != nil {
		return nil
	}
	var extra core.Content
	for _, b := range blocks(value) {
		if str(b, "type") != "image" {
			continue
		}
		im, err := decodeImage(str(b, "data"))
		if err != nil {
			extra = append(extra, &core.TextBlock{Text: fmt.Sprintf("[image %s not shown: %v]", str(b, "mimeType"), err)})
			continue
		}
		extra = append(extra, im.ref())
	}
	if len(extra) == 0 {
		return nil
	}
	return append(append(core.Content{}, s.Content...), extra...)
}

// thumbnails returns bounded thumbnails of the value's images.
func thumbnails(value any) []core.InlineImage {
	var out []core.InlineImage
	total := 0
	for _, b := range blocks(value) {
		if str(b, "type") != "image" || len(out) == maxThumbs {
			continue
		}
		im, err := decodeImage(str(b, "data"))
		if err != nil {
			continue
		}
		th, ok := im.thumbnail()
		if !ok || total+len(th.Data) > maxThumbTotal {
			continue
		}
		total += len(th.Data)
		out = append(out, th)
	}
	return out
}

// PresentImages is the default result presenter of MCP tools: the image
// card when the result's meta holds thumbnails (the text blocks shown
// beside them), else nil — the generic card.
func PresentImages(r core.ToolResult) core.ResultView {
	if r.IsError || len(r.Meta) == 0 {
		return nil
	}
	var m meta
	if json.Unmarshal(r.Meta, &m) != nil || len(m.Images) == 0 {
		return nil
	}
	v := &core.ImageResultView{Images: m.Images}
	for _, b := range r.Content {
		if t, ok := b.(*core.TextBlock); ok {
			v.Content = append(v.Content, t)
		}
	}
	return v
}
