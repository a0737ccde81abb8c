package prismtest_test

import (
	"encoding/json"
	"fmt"

	"prism/core"
	"prism/prismtest"
)

// A tool's two cards: Card runs one call through the registry as the agent
// loop does and renders the card the inspector shows while the call is
// pending and once its result is committed.
func ExampleCard() {
	t := newExampleT() // in a test: the test's t
	defer t.done()

	reg := core.NewRegistry(nil)
	reg.MustRegister(greetTool())

	c := prismtest.Card(t, reg, "greet", `{"name":"Ada"}`)
	fmt.Println(c.Pending.State(), "→", c.State())
	fmt.Println(c.Pending.Title(), "→", c.Title())
	fmt.Println(c.Content())
	fmt.Println(string(c.Result.Meta))
	fmt.Println(c.Completed.Find(`[data-testid="generic"] .io-sec`).Last().Find("pre").Text())
	// Output:
	// pending → ok
	// Greet Ada → Greeted Ada
	// Hello, Ada!
	// {"length":11}
	// Hello, Ada!
}

// A failing call is not a test failure: its card is the result. Arguments
// that break the tool's schema — or are not JSON — fail before the body
// runs, with the identity INVALID_ARGS; a body that returns a plain error
// fails with the tool's own message and no identity.
func ExampleCard_failing() {
	t := newExampleT()
	defer t.done()
	reg := greetRegistry()

	for _, args := range []string{`{"name":42}`, `{"name":`, `{"name":"nobody"}`} {
		c := prismtest.Card(t, reg, "greet", args)
		identity := "no identity"
		if c.Error != nil {
			identity = c.Error.Name + " " + c.Error.Code
		}
		fmt.Println(c.State(), "|", identity, "|", c.Content())
	}
	// Output:
	// error | ToolArgsError INVALID_ARGS | Error: invalid arguments: "name" must be a string
	// error | ToolArgsError INVALID_ARGS | Error: invalid arguments: "arguments" must be an object
	// error | no identity | Error: there is nobody to greet
}

// A golden card: Golden compares both cards with a file under testdata and
// rewrites it when the test runs with go test -update.
func ExampleCardResult_Golden() {
	t := newExampleT()
	defer t.done()

	c := prismtest.Card(t, greetRegistry(), "greet", `{"name":"Ada"}`)
	c.Golden(t, "testdata/greet-ada.golden")
	fmt.Println("failed:", t.Failed())
	// Output:
	// failed: false
}

// A recorded call's cards, presenters only: Present puts a recording —
// what prism testgen and the call page's "save as test" write as
// testdata/NAME.call.json, made here by hand — through the tool's
// PresentCall and PresentResult, as a replay does, without running the
// tool. A generated test then compares both cards with the golden prism
// wrote beside the recording (LoadRecording reads it) and, for a pure
// tool, reruns the call (Rerun).
func ExamplePresent() {
	t := newExampleT()
	defer t.done()

	rec := prismtest.Recording{
		Version: 1, Session: "s1", CallID: "call_7", Tool: "greet", Arguments: `{"name":"Ada"}`, Logged: true,
		CallTime: prismtest.T0, ResultTime: prismtest.T0 + 40,
		Result: core.ToolResult{Content: core.Text("Hello, Ada!"), Meta: json.RawMessage(`{"length":11}`)},
	}
	c := prismtest.Present(t, greetRegistry(), rec)
	fmt.Println(c.Pending.State(), "→", c.State())
	fmt.Println(c.Pending.Title(), "→", c.Title())
	fmt.Println(c.Completed.Find(`[data-testid="duration"]`).Text())
	c.Golden(t, "testdata/greet-recorded.golden")
	fmt.Println("failed:", t.Failed())
	// Output:
	// pending → ok
	// Greet Ada → Greeted Ada
	// 40 ms
	// failed: false
}

// A scripted agent run through the whole stack: the session starts as the
// inspector's form starts it, the stream shows the call's card pending —
// Hold keeps the call at its gate — and then the completed card the page
// morphs it into; the saved page shows the same card.
func ExampleServer_Stream() {
	t := newExampleT()
	defer t.done()

	reg := greetRegistry()
	gate := prismtest.Hold(t, reg, "greet")
	srv := prismtest.NewServer(t, prismtest.Options{
		Tools: reg,
		Script: prismtest.NewScript().
			Step("Let me greet Ada.", prismtest.Call("greet", `{"name":"Ada"}`)).
			Final("I greeted Ada."),
	})

	id := srv.Start("Greet Ada, please.")
	stream := srv.Stream(id)
	pending := stream.Card("call_1", "pending")
	fmt.Println(squash(pending.Find(".card-head .title").Text()))

	gate.Release()
	done := stream.Card("call_1", "ok")
	fmt.Println(squash(done.Find(".card-head .title").Text()))

	srv.Wait(id)
	page := srv.Page(id)
	fmt.Println(page.Find(prismtest.CardSelector("call_1")).AttrOr("data-state", ""))
	fmt.Println(len(srv.Events(id)) > 0)
	// Output:
	// Greet Ada
	// Greeted Ada
	// ok
	// true
}

// A script states an agent run in a few lines: text and a call, parallel
// calls, the final answer. Calls get the ids call_1, call_2… in order.
func ExampleScript() {
	t := newExampleT()
	defer t.done()

	srv := prismtest.NewServer(t, prismtest.Options{
		Tools: greetRegistry(),
		Script: prismtest.NewScript().
			Step("First Ada.", prismtest.Call("greet", `{"name":"Ada"}`)).
			Parallel(prismtest.Call("greet", `{"name":"Grace"}`), prismtest.Call("greet", `{"name":"nobody"}`)).
			Final("Greeted two of three."),
	})
	id := srv.Start("Greet everyone.")
	srv.Wait(id)
	page := srv.Page(id)
	for _, callID := range []string{"call_1", "call_2", "call_3"} {
		card := page.Find(prismtest.CardSelector(callID))
		fmt.Println(callID, card.AttrOr("data-state", ""), squash(card.Find(".card-head .title").Text()))
	}
	// Output:
	// call_1 ok Greeted Ada
	// call_2 ok Greeted Grace
	// call_3 error Could not greet nobody
}
