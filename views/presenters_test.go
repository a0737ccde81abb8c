package views_test

import (
	"context"
	"encoding/json"
	"testing"

	"prism/core"
	"prism/core/tools"
)

// presenters returns the production presenters — the registry of every
// built-in tool, bash included, that prism serves cards with — plus the
// test web tools below.
func presenters(t testing.TB) *core.Registry {
	t.Helper()
	return toolRegistry(t, "")
}

// toolRegistry returns the built-in tools (bash included) confined to
// workspace ws ("" = each call's session cwd) and the test web tools.
func toolRegistry(t testing.TB, ws string) *core.Registry {
	t.Helper()
	builtins, err := tools.Builtins(tools.Options{Workspace: ws, AllowBash: true})
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(nil)
	reg.MustRegister(builtins...)
	reg.MustRegister(webSearchTool(), webFetchTool())
	return reg
}

// The web card kind has no built-in tool (prism ships no web tools); these
// stand for a tool author's, defined the way any tool is and answering from
// fixed data: the value is the request, the meta the card's view.

type webArgs struct {
	Query string `json:"query,omitempty"`
	URL   string `json:"url,omitempty"`
}

const webValueSchema = `{"type": "object", "additionalProperties": false, "properties": {
	"query": {"type": "string"}, "url": {"type": "string"}}}`

func webTool(name, params string, meta func(webArgs) any, call func(webArgs) core.CallView, result func(json.RawMessage) core.ResultView) *core.Tool {
	return core.MustDefine(core.Definition[webArgs, webArgs]{
		Name:       name,
		Parameters: params,
		Output: core.Output[webArgs, webArgs]{
			Schema:           webValueSchema,
			Render:           func(a webArgs, _ webArgs) (core.Content, error) { return core.Text("answered " + a.Query + a.URL), nil },
			PresentationMeta: func(a webArgs, _ webArgs) (any, error) { return meta(a), nil },
		},
		Execute:       func(_ context.Context, a webArgs, _ *core.Run) (webArgs, error) { return a, nil },
		PresentCall:   call,
		PresentResult: func(_ webArgs, r core.ToolResult) core.ResultView { return result(r.Meta) },
	})
}

func webSearchTool() *core.Tool {
	return webTool("web_search", `{"query": {"type": "string", "required": true}}`,
		func(a webArgs) any {
			return core.WebSearchView{Title: a.Query, Answer: "templ is a Go HTML templating language.", Sources: []core.WebSource{
				{URL: "https://templ.guide/", Title: "templ docs", Snippet: "Build HTML with Go"},
				{URL: "javascript:alert(1)", Title: "evil"},
			}}
		},
		func(a webArgs) core.CallView {
			return &core.GenericCallView{Title: "Search the web", Kind: core.KindSearch, RawInput: a.Query}
		},
		func(meta json.RawMessage) core.ResultView {
			var v core.WebSearchView
			if json.Unmarshal(meta, &v) != nil {
				return nil
			}
			return &v
		})
}

func webFetchTool() *core.Tool {
	return webTool("web_fetch", `{"url": {"type": "string", "required": true}}`,
		func(a webArgs) any { return core.WebFetchView{URL: a.URL, StatusCode: 404, Truncated: true} },
		func(a webArgs) core.CallView {
			return &core.GenericCallView{Title: "Fetch " + a.URL, Kind: core.KindFetch}
		},
		func(meta json.RawMessage) core.ResultView {
			var v core.WebFetchView
			if json.Unmarshal(meta, &v) != nil {
				return nil
			}
			return &v
		})
}
