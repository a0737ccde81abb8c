// Package prismtest tests tools defined with prism's core the way prism
// shows them: their cards, rendered by the inspector's own components, and
// whole agent runs through the real stack.
//
// Card runs one call through a registry — the real pipeline, driven by one
// turn of the real agent loop and logged as the loop logs it — and returns
// the pending and the completed card, with the call's content, meta and
// error identity:
//
//	func TestGreetCards(t *testing.T) {
//		reg := core.NewRegistry(nil)
//		reg.MustRegister(greet.New())
//		c := prismtest.Card(t, reg, "greet", `{"name":"Ada"}`)
//		if c.Pending.State() != "pending" || c.State() != "ok" || c.Title() != "Greeted Ada" {
//			t.Errorf("%s: %s → %s %q", c, c.Pending.State(), c.State(), c.Title())
//		}
//		c.Golden(t, "testdata/greet-ada.golden") // go test -update writes it
//	}
//
// A failing call is a result, not a test failure: its card, its content
// and its error identity (INVALID_ARGS for arguments the schema refuses)
// are what the test checks.
//
// NewServer starts the whole stack on an httptest server — the SQLite
// store in t.TempDir(), the agent runner over your registry on the
// scripted model playing your Script (a few lines: steps with text and
// calls, parallel calls, the final answer), the web server — and gives a
// test the browser's view of it: Start a session, Wait for it, read its
// Page, its Events, or its Stream of SSE frames as they arrive, where a
// pending card turns into the completed one. Hold keeps a tool's calls
// pending until the test releases them, so the swap is observed live,
// without sleeps.
//
// Present is Card without running anything: it renders the two cards of a
// recorded call — the Recording that prism testgen and the call page's
// "save as test" button write as testdata/NAME.call.json (LoadRecording
// reads it) — through the tool's presenters, as a replay does, so a tool
// whose workspace or server is gone is tested all the same. The tests
// prism generates compare those cards with the golden written beside the
// recording, take prism's built-in tools from Builtins, fail with
// directions (RequireTool) until a user's own tool is registered on their
// marked line, and Rerun the call of a pure tool (core.Definition.Pure)
// through the real pipeline to compare its isError, content and meta with
// the recording.
//
// Everything is cleaned up by t.Cleanup. Outputs are deterministic where
// tests compare them: Card's session is SessionID and its call call_1, a
// Script's calls are call_1, call_2… in order, event times start at T0 and
// advance Tick per event, and Golden writes the call's cwd as {cwd}.
//
// prismtest imports prism's public packages (core, views, web, db,
// backend) and its test helpers — what a tool author's module can import
// too — and production code never imports it.
package prismtest
