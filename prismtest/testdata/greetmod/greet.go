// Package greet is a tool defined outside prism's module, as a tool author
// defines one: prism's project tests run its tests, which use prismtest
// only, to prove prismtest works from another module.
package greet

import (
	"context"
	"errors"

	"prism/core"
)

// Args are greet's arguments.
type Args struct {
	Name string `json:"name"`
}

// Greeting is greet's value.
type Greeting struct {
	Text string `json:"text"`
}

// New returns the greet tool: it answers "Hello, NAME!" and fails for
// "nobody".
func New() *core.Tool {
	return core.MustDefine(core.Definition[Args, Greeting]{
		Name:        "greet",
		Description: "Greet someone by name.",
		Parameters:  `{"name": {"type": "string", "required": true, "description": "Who to greet"}}`,
		Output: core.Output[Args, Greeting]{
			Schema: `{"type":"object","additionalProperties":false,"properties":{"text":{"type":"string","required":true}}}`,
			Render: func(_ Args, v Greeting) (core.Content, error) { return core.Text(v.Text), nil },
		},
		Execute: func(_ context.Context, a Args, _ *core.Run) (Greeting, error) {
			if a.Name == "nobody" {
				return Greeting{}, errors.New("there is nobody to greet")
			}
			return Greeting{Text: "Hello, " + a.Name + "!"}, nil
		},
		PresentCall: func(a Args) core.CallView { return &core.GenericCallView{Title: "Greet " + a.Name} },
		PresentResult: func(a Args, r core.ToolResult) core.ResultView {
			if r.IsError {
				return &core.GenericResultView{Title: "Could not greet " + a.Name, Content: r.Content}
			}
			return &core.GenericResultView{Title: "Greeted " + a.Name, Content: r.Content}
		},
	})
}
