package views_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/core/tools"
	"prism/views"
)

// Example_toolCard shows how a tool author checks the cards of a tool: run
// a call through a registry, log it as the agent loop would, fold the log
// and render the card — the same HTML the inspector serves, live or
// replayed.
func Example_toolCard() {
	ctx := context.Background()
	reg := core.NewRegistry(nil)
	reg.MustRegister(tools.NewNote())

	call := core.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "note", Arguments: `{"title":"Demo"}`}
	res := reg.Execute(ctx, core.Call{CallID: call.CallID, Name: call.Name, RawArguments: call.Arguments})
	p := res.Projection()

	s, _ := core.NewSession(ctx, core.SessionHeader{ID: "example"}, core.SessionOptions{})
	s.Append(ctx, core.EventTurnStart, core.TurnStart{Turn: 1}, core.AppendOptions{})
	s.Append(ctx, core.EventStepStart, core.StepBoundary{Turn: 1, Step: 1}, core.AppendOptions{})
	logged, _ := s.Append(ctx, core.EventToolCall, call, core.AppendOptions{})
	s.Append(ctx, core.EventToolResult, core.ToolResultData{Turn: 1, Step: 1,
		Message: core.NewToolResultMessage("r1", call.CallID, p.Content, p.IsError), Meta: p.Meta},
		core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{logged.Seq}})

	timeline := views.Fold(s.Header(), s.Events(), reg)
	card := timeline.CardsByCallID("c1")[0]
	html, _ := views.Render(ctx, views.CardComponent(views.NewCardView(card, "example", "")))

	doc, _ := goquery.NewDocumentFromReader(strings.NewReader(html))
	el := doc.Find(`[data-testid="tool-card"]`)
	state, _ := el.Attr("data-state")
	callID, _ := el.Attr("data-call-id")
	fmt.Println(callID, state)
	fmt.Println(strings.Contains(el.Text(), "Note completed"))
	// Output:
	// c1 ok
	// true
}
