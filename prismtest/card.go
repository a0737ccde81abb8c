package prismtest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/core/agent"
	"prism/core/agent/agenttest"
	"prism/views"
)

// SessionID is the id of the session Card runs its call in.
const SessionID = "prismtest"

// CardSelector selects the tool card of callID in a page, a frame or a
// card's document.
func CardSelector(callID string) string {
	return `[data-testid="tool-card"][data-call-id=` + cssString(callID) + `]`
}

// cssString quotes s as a CSS string.
func cssString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\%x `, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// CardResult is one call run by Card: its two cards, as the inspector
// renders them, and what the call logged.
type CardResult struct {
	// Tool and Args are the call as the model asked for it; CallID is its id.
	Tool, Args, CallID string
	// Cwd is the working directory the call ran in.
	Cwd string
	// Pending is the card the inspector shows when the model has asked for
	// the call (its tool/call is logged); Completed the same card once the
	// result is committed — the element the live page morphs the pending
	// card into, and what a replay shows.
	Pending, Completed Rendered
	// Result is the call's durable projection, as logged in tool/result:
	// the model content, isError and the presentation meta.
	Result core.ToolResult
	// Error is the failure's identity {name, code} (INVALID_ARGS, …); nil
	// when the call succeeded.
	Error *core.ErrorInfo
	// Header and Events are the session the call was logged in: one turn of
	// the agent loop (the user message, the model step asking for the
	// call, tool/call, tool/result, the final answer).
	Header core.SessionHeader
	Events []core.Event

	// cwds are the forms of the cwd Golden writes as {cwd}: nil for Cwd
	// and its resolved form on this machine; a recording's own (Present).
	cwds []string
}

// Rendered is one card: the HTML element the inspector serves (on the
// page, in an SSE patch, on replay) and its parsed document.
type Rendered struct {
	HTML string
	Doc  *goquery.Document
}

// Card returns the card element: <article data-testid="tool-card">.
func (r Rendered) Card() *goquery.Selection { return r.Doc.Find(`[data-testid="tool-card"]`).First() }

// Find finds selector inside the card.
func (r Rendered) Find(selector string) *goquery.Selection { return r.Card().Find(selector) }

// State returns the card's data-state: pending, running, awaiting, ok,
// error or stopped.
func (r Rendered) State() string { return r.Card().AttrOr("data-state", "") }

// Kind returns the card's data-card: the kind of body it shows (generic,
// terminal, diff, read, search, web, image).
func (r Rendered) Kind() string { return r.Card().AttrOr("data-card", "") }

// Title returns the title shown in the card's header.
func (r Rendered) Title() string { return r.Find(".card-head .title").Text() }

// Text returns the card's text with runs of white space collapsed.
func (r Rendered) Text() string { return strings.Join(strings.Fields(r.Card().Text()), " ") }

// State returns the completed card's data-state: ok, or error for a
// failed call (a command that exits non-zero completed: ok).
func (c *CardResult) State() string { return c.Completed.State() }

// Title returns the completed card's title.
func (c *CardResult) Title() string { return c.Completed.Title() }

// Content returns the model content's text: its text blocks, joined by
// newlines (what the model reads of a text-only result).
func (c *CardResult) Content() string { return c.Result.Content.PlainText() }

// DecodeMeta decodes the presentation meta into v, failing t when it does
// not decode.
func (c *CardResult) DecodeMeta(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(c.Result.Meta, v); err != nil {
		t.Fatalf("%s: decode its meta %s: %v", c, c.Result.Meta, err)
	}
}

// String names the call, for failure messages.
func (c *CardResult) String() string { return describe(c.Tool, c.Args) }

func describe(tool, args string) string {
	const maxArgs = 120
	if len(args) > maxArgs {
		args = strings.ToValidUTF8(args[:maxArgs], "") + "…"
	}
	return fmt.Sprintf("call %s %s", tool, args)
}

// CardOption adjusts how Card runs its call.
type CardOption func(*cardConfig)

type cardConfig struct {
	cwd, callID string
}

// WithCwd runs the call in dir (the session's working directory, which the
// file tools are confined to) instead of a fresh empty t.TempDir().
func WithCwd(dir string) CardOption { return func(c *cardConfig) { c.cwd = dir } }

// WithCallID gives the call this id instead of call_1.
func WithCallID(id string) CardOption { return func(c *cardConfig) { c.callID = id } }

// Card runs one call of toolName with the raw argument string rawArgs —
// exactly what a model sends, invalid JSON included — through reg, and
// renders its cards.
//
// The call runs as in prism: one turn of the real agent loop, on a scripted
// model that asks for the call and then answers "Done.", logs the session in
// memory (tool/call, then the pipeline's tool/result), and the pending and
// the completed card are rendered from that log with the inspector's own
// fold and components — the bytes its page, its SSE patches and its replays
// carry. A failing call is not a test failure: its card, its content and
// its error identity are the result. Card fails t only when the loop
// itself cannot run.
//
// The output is the same on every run: the session is SessionID, created
// at T0, its clock advances Tick per event, the call is call_1
// (WithCallID), and the cwd is a fresh t.TempDir() (WithCwd) that Golden
// writes as {cwd}.
func Card(t testing.TB, reg *core.Registry, toolName, rawArgs string, opts ...CardOption) *CardResult {
	t.Helper()
	cfg := cardConfig{callID: "call_1"}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.cwd == "" {
		cfg.cwd = t.TempDir()
	}
	c := &CardResult{Tool: toolName, Args: rawArgs, CallID: cfg.callID, Cwd: cfg.cwd}
	if reg == nil {
		t.Fatalf("prismtest.Card(%s): the registry is nil", c)
	}
	ctx := context.WithoutCancel(t.Context())
	log := testLogger(t, slog.LevelWarn)
	clock := &stepClock{}
	sess, err := core.NewSession(ctx, core.SessionHeader{ID: SessionID, CreatedAt: T0, Cwd: cfg.cwd},
		core.SessionOptions{Now: clock.now, Logger: log})
	if err != nil {
		t.Fatalf("prismtest.Card(%s): %v", c, err)
	}
	script := NewScript().Step("", Call(toolName, rawArgs).WithID(cfg.callID)).Final("Done.")
	m, err := agenttest.Script(script.Steps()...).New("")
	if err != nil {
		t.Fatalf("prismtest.Card(%s): %v", c, err)
	}
	a, err := agent.New(agent.Config{
		Session: sess,
		Tools:   reg,
		Model:   m,
		// Chunks are appended as they merge, never on a timer: the log is
		// the same on every run.
		ChunkInterval: time.Hour,
		Logger:        log,
	})
	if err != nil {
		t.Fatalf("prismtest.Card(%s): %v", c, err)
	}
	reason, err := a.Turn(t.Context(), core.NewUserMessage("m-prompt", "Call "+toolName+"."))
	if err != nil {
		t.Fatalf("prismtest.Card(%s): the agent loop failed: %v", c, err)
	}
	c.Header, c.Events = sess.Header(), sess.Events()
	callSeq, result := int64(-1), (*core.ToolResultData)(nil)
	for i := range c.Events {
		e := &c.Events[i]
		switch e.Type {
		case core.EventToolCall:
			var d core.ToolCall
			if e.DecodeData(&d) == nil && d.CallID == cfg.callID && callSeq < 0 {
				callSeq = e.Seq
			}
		case core.EventToolResult:
			var d core.ToolResultData
			if e.DecodeData(&d) == nil && d.CallID() == cfg.callID && result == nil {
				result = &d
			}
		}
	}
	if callSeq < 0 || result == nil {
		t.Fatalf("prismtest.Card(%s): the turn ended (%s) without logging the call and its result; its events: %s",
			c, reason.Kind, eventTypes(c.Events))
	}
	c.Result, c.Error = result.Projection(), result.Error
	c.Pending = renderCard(t, c, c.Events[:callSeq+1], reg)
	c.Completed = renderCard(t, c, c.Events, reg)
	return c
}

// renderCard folds events as the inspector does and renders the card of
// c.CallID with the page's own component.
func renderCard(t testing.TB, c *CardResult, events []core.Event, p views.Presenter) Rendered {
	t.Helper()
	tl := views.Fold(c.Header, events, p)
	cards := tl.CardsByCallID(c.CallID)
	if len(cards) == 0 {
		t.Fatalf("prismtest.Card(%s): the fold of the log up to seq %d has no card for %s", c, events[len(events)-1].Seq, c.CallID)
	}
	html, err := views.Render(context.Background(), views.NodeComponent(views.NewR(tl, views.SessionLinks(c.Header.ID)), cards[0]))
	if err != nil {
		t.Fatalf("prismtest.Card(%s): render its card: %v", c, err)
	}
	return parsed(t, html)
}

// parsed parses an HTML fragment into a Rendered.
func parsed(t testing.TB, html string) Rendered {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatalf("prismtest: parse HTML: %v", err)
	}
	return Rendered{HTML: html, Doc: doc}
}

// eventTypes lists events as "seq type" for failure messages.
func eventTypes(events []core.Event) string {
	var b strings.Builder
	for i, e := range events {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d %s", e.Seq, e.Type)
	}
	return b.String()
}
