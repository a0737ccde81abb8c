// Package testgen turns a recorded tool call into a Go test of its cards
// ("save as test"): the recording (testdata/NAME.call.json: the raw
// arguments and the durable result — content, isError, meta — with the
// error identity), the golden of both cards as this build renders them
// (testdata/NAME.golden), and a test file that uses prismtest to put the
// recording through the tool's presenters again and compare the cards with
// the golden. prism testgen writes the files into a directory; the call
// page's "save as test" button downloads them as a zip.
//
// The cards are rendered from the recording alone, as replay renders them:
// a log holding the call and its recorded result is folded and the card is
// drawn by the page's own components, so a tool whose workspace is gone
// (read, edit, bash, an MCP server's tool) is tested all the same.
// prismtest.Present renders a recording the same way, which is why a
// golden written here is what the generated test compares with.
package testgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"prism/core"
	"prism/views"
)

// Version is the format version of a recording file.
const Version = 1

// Recording is one recorded call: what testdata/NAME.call.json holds.
type Recording struct {
	// Version is the file's format (Version).
	Version int `json:"version"`
	// Session is the id of the session the call was recorded in; CallID the
	// call's id. The cards' links and element ids use both.
	Session string `json:"session"`
	CallID  string `json:"callId"`
	// Tool is the tool's name; Arguments the raw argument string the model
	// sent, byte for byte.
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	// Logged is false for a result-only card: the call's tool/call was
	// never logged (crash repair's "not started"), so there is no pending
	// card, and the completed card takes the tool and the arguments from the
	// model's request.
	Logged bool `json:"logged"`
	// Cwd is the session's working directory; goldens write it as {cwd}.
	// CwdResolved is its form with symbolic links resolved, when that
	// differed where the call was recorded (goldens write it as {cwd} too,
	// on any machine).
	Cwd         string `json:"cwd,omitempty"`
	CwdResolved string `json:"cwdResolved,omitempty"`
	// CallTime and ResultTime are when the call and its result were logged
	// (epoch ms): the cards show the time and the duration.
	CallTime   int64 `json:"callTime"`
	ResultTime int64 `json:"resultTime"`
	// Result is the durable result a presenter receives: the model content,
	// isError and the presentation meta.
	Result core.ToolResult `json:"result"`
	// Error is the failure's identity {name, code}; nil for a success.
	Error *core.ErrorInfo `json:"error,omitempty"`
	// Approval is the outcome of the approval the call waited for, if it
	// asked (allowed-once, rejected, cancelled, unavailable).
	Approval core.ApprovalOutcome `json:"approval,omitempty"`
}

// FromBody reports whether the recorded result can be the tool body's: the
// call was logged, no person refused it, and it was not interrupted, timed
// out or closed by crash repair. Only such a call of a pure tool is run
// again by the generated test.
func (r Recording) FromBody() bool {
	if !r.Logged || (r.Approval != "" && r.Approval != core.ApprovalAllowedOnce) {
		return false
	}
	if r.Error == nil {
		return true
	}
	switch r.Error.Code {
	case core.CodeToolNotStarted, core.CodeToolOutcomeUnknown, core.CodeAbortedBeforeDispatch,
		core.CodeAborted, core.CodeToolTimeout:
		return false
	}
	return true
}

// FromCard records a completed card of a fold: its call, as the log has
// it, and its result.
func FromCard(h core.SessionHeader, c *views.Card) (Recording, error) {
	if c == nil {
		return Recording{}, errors.New("testgen: no card")
	}
	if c.Result == nil {
		return Recording{}, fmt.Errorf("testgen: call %q of session %q has no result yet: only a completed call can be saved as a test", c.CallID, h.ID)
	}
	callTime := c.CallTime
	if !c.HasCall {
		callTime = c.ResultTime
	}
	var approval core.ApprovalOutcome
	if c.Approval != nil && c.Approval.Decided {
		approval = c.Approval.Outcome
	}
	var resolved string
	if real, err := filepath.EvalSymlinks(h.Cwd); h.Cwd != "" && err == nil && real != h.Cwd {
		resolved = real
	}
	return Recording{
		Approval:    approval,
		CwdResolved: resolved,
		Version:     Version,
		Session:     h.ID,
		CallID:      c.CallID,
		Tool:        c.Name,
		Arguments:   c.Args,
		Logged:      c.HasCall,
		Cwd:         h.Cwd,
		CallTime:    callTime,
		ResultTime:  c.ResultTime,
		Result:      c.Result.Projection(),
		Error:       c.Result.Error,
	}, nil
}

// Encode returns the recording as the indented JSON of a .call.json file.
func (r Recording) Encode() ([]byte, error) {
	data, err := core.MarshalNoEscape(r)
	if err != nil {
		return nil, fmt.Errorf("testgen: encode the recording of call %q: %w", r.CallID, err)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, data, "", "  "); err != nil {
		return nil, fmt.Errorf("testgen: indent the recording of call %q: %w", r.CallID, err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// Decode reads a .call.json file's content.
func Decode(data []byte) (Recording, error) {
	var r Recording
	if err := json.Unmarshal(data, &r); err != nil {
		return Recording{}, fmt.Errorf("testgen: decode the recording: %w", err)
	}
	if r.Version != Version {
		return Recording{}, fmt.Errorf("testgen: the recording has version %d; this build reads version %d", r.Version, Version)
	}
	if r.Tool == "" || r.CallID == "" {
		return Recording{}, errors.New("testgen: the recording names no tool or no call id")
	}
	return r, nil
}

// Log is the session log of the recording that the cards are folded from:
// the model's step requesting the call, the call (unless it was never
// logged) and the recorded result. pendingEnd is the length of the prefix
// whose fold shows the pending card (0: there is none).
func (r Recording) Log() (h core.SessionHeader, events []core.Event, pendingEnd int, err error) {
	h = core.SessionHeader{ID: r.Session, CreatedAt: r.CallTime, Cwd: r.Cwd}
	if h.ID == "" {
		h.ID = "recorded"
	}
	add := func(typ string, t int64, data any, op *core.SurfaceOp) *core.Event {
		if err != nil {
			return nil
		}
		raw, e := core.MarshalNoEscape(data)
		if e != nil {
			err = fmt.Errorf("testgen: build the log of call %q: %w", r.CallID, e)
			return nil
		}
		events = append(events, core.Event{Type: typ, Seq: int64(len(events)), Time: t, Data: raw, SurfaceOp: op})
		return &events[len(events)-1]
	}
	add(core.EventTurnStart, r.CallTime, core.TurnStart{Turn: 1}, nil)
	add(core.EventStepStart, r.CallTime, core.StepBoundary{Turn: 1, Step: 1}, nil)
	req := core.Message{ID: "m-request", Role: core.RoleAssistant,
		Content: core.Content{&core.ToolCallBlock{ID: r.CallID, Name: r.Tool, Arguments: r.Arguments}},
		Source:  core.Source{Kind: core.SourceModel}}
	add(core.EventAssistantMessage, r.CallTime, core.AssistantMessage{Turn: 1, Step: 1, Message: req}, core.AppendOp())
	callSeq := int64(-1)
	if r.Logged {
		if e := add(core.EventToolCall, r.CallTime, core.ToolCall{Turn: 1, Step: 1, CallID: r.CallID, Name: r.Tool, Arguments: r.Arguments}, nil); e != nil {
			callSeq = e.Seq
			pendingEnd = len(events)
		}
	}
	res := core.ToolResultData{Turn: 1, Step: 1, Error: r.Error, Meta: r.Result.Meta,
		Message: core.NewToolResultMessage("m-result", r.CallID, r.Result.Content, r.Result.IsError)}
	if e := add(core.EventToolResult, r.ResultTime, res, core.AppendOp()); e != nil && callSeq >= 0 {
		e.SourceEventSeqs = []int64{callSeq}
	}
	return h, events, pendingEnd, err
}

// Cards renders the recording's pending and completed cards with p's
// presenters and the page's components ("" for the pending card of a
// result-only card).
func Cards(ctx context.Context, p views.Presenter, r Recording) (pending, completed string, err error) {
	h, events, pendingEnd, err := r.Log()
	if err != nil {
		return "", "", err
	}
	if pendingEnd > 0 {
		if pending, err = renderCard(ctx, h, events[:pendingEnd], p, r.CallID); err != nil {
			return "", "", err
		}
	}
	if completed, err = renderCard(ctx, h, events, p, r.CallID); err != nil {
		return "", "", err
	}
	return pending, completed, nil
}

// renderCard folds events and renders the first card of callID.
func renderCard(ctx context.Context, h core.SessionHeader, events []core.Event, p views.Presenter, callID string) (string, error) {
	tl := views.Fold(h, events, p)
	cards := tl.CardsByCallID(callID)
	if len(cards) == 0 {
		return "", fmt.Errorf("testgen: the fold of the recorded log has no card for call %q", callID)
	}
	html, err := views.Render(ctx, views.NodeComponent(views.NewR(tl, views.SessionLinks(h.ID)), cards[0]))
	if err != nil {
		return "", fmt.Errorf("testgen: render the card of call %q: %w", callID, err)
	}
	return html, nil
}

// NoPending is what a golden holds in place of the pending card of a
// result-only card.
const NoPending = "(none: the call was never logged)\n"

// Golden returns the content of a golden file of a call's two cards: the
// call (tool and raw arguments), then the pending and the completed card as
// outlines (Outline), with each of cwds (the call's working directory and
// its resolved form; "" is skipped) written as {cwd}. prismtest's Golden
// writes and compares this text.
func Golden(tool, args string, cwds []string, pending, completed string) (string, error) {
	var b strings.Builder
	b.WriteString("call " + strconv.Quote(tool) + " " + strconv.Quote(args) + "\n")
	b.WriteString("\n" + PendingHeading + "\n")
	if pending == "" {
		b.WriteString(NoPending)
	} else {
		out, err := Outline(withoutCwd(pending, cwds))
		if err != nil {
			return "", err
		}
		b.WriteString(out)
	}
	b.WriteString("\n" + CompletedHeading + "\n")
	out, err := Outline(withoutCwd(completed, cwds))
	if err != nil {
		return "", err
	}
	b.WriteString(out)
	return b.String(), nil
}

// The headings of a golden's two sections.
const (
	PendingHeading   = "-- pending --"
	CompletedHeading = "-- completed --"
)

// withoutCwd writes each of cwds in s as {cwd}, the longest first.
func withoutCwd(s string, cwds []string) string {
	sorted := slices.Clone(cwds)
	slices.SortFunc(sorted, func(a, b string) int { return len(b) - len(a) })
	for _, c := range sorted {
		if c != "" {
			s = strings.ReplaceAll(s, c, "{cwd}")
		}
	}
	return s
}

// Cwds returns the forms of the recording's cwd that goldens write as
// {cwd}.
func (r Recording) Cwds() []string { return []string{r.Cwd, r.CwdResolved} }

// Sections splits a golden's text into its call line, pending and
// completed sections (ok is false when the headings are missing).
func Sections(golden string) (call, pending, completed string, ok bool) {
	call, rest, ok1 := strings.Cut(golden, "\n"+PendingHeading+"\n")
	pending, completed, ok2 := strings.Cut(rest, "\n"+CompletedHeading+"\n")
	return call, pending, completed, ok1 && ok2
}

// FirstDifference names where two outlines first differ: the changed line
// with the chain of its enclosing elements (by indentation), e.g.
// `article.card > header.card-head > span.title: "Read a.txt"` — the field
// of the card that changed. It returns "" when the outlines are equal.
func FirstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl == gl {
			continue
		}
		lines := g
		if i >= len(g) {
			lines = w
		}
		path := ancestry(lines, i)
		return fmt.Sprintf("%s: golden %s, got %s", path, describeLine(wl), describeLine(gl))
	}
	return ""
}

// ancestry names the elements enclosing line i of an outline.
func ancestry(lines []string, i int) string {
	depth := indent(lines[i])
	var chain []string
	for j := i - 1; j >= 0 && depth > 0; j-- {
		if d := indent(lines[j]); d < depth && strings.HasPrefix(strings.TrimSpace(lines[j]), "<") {
			chain = append(chain, elementName(lines[j]))
			depth = d
		}
	}
	for l, r := 0, len(chain)-1; l < r; l, r = l+1, r-1 {
		chain[l], chain[r] = chain[r], chain[l]
	}
	if len(chain) == 0 {
		return "the card"
	}
	return strings.Join(chain, " > ")
}

// indent is the outline depth of a line.
func indent(line string) int { return (len(line) - len(strings.TrimLeft(line, " "))) / 2 }

// elementName writes an outline's element line as tag.class (or
// tag[data-testid=…]).
func elementName(line string) string {
	s := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(line), "<"), ">")
	tag, attrs, _ := strings.Cut(s, " ")
	for _, key := range []string{"data-testid", "class"} {
		if _, v, ok := strings.Cut(attrs, key+`="`); ok {
			v, _, _ = strings.Cut(v, `"`)
			if key == "class" {
				return tag + "." + strings.Join(strings.Fields(v), ".")
			}
			return tag + "[" + key + "=" + v + "]"
		}
	}
	return tag
}

// describeLine quotes an outline line for a failure message.
func describeLine(l string) string {
	if l == "" {
		return "(nothing)"
	}
	const max = 160
	l = strings.TrimSpace(l)
	if len(l) > max {
		l = strings.ToValidUTF8(l[:max], "") + "…"
	}
	return l
}

// ErrNoCall is wrapped by Find's error for a call the fold does not have.
var ErrNoCall = errors.New("no such call")

// Find returns the card of callID in a fold — the call id as the log
// spells it, or what a hand-written reference means by it
// (views.CallRefs) — and, when card is not "", the card of that element
// id among the call's cards (a reused call id). The error names the call.
func Find(t *views.Timeline, sessionID, callID, card string) (*views.Card, error) {
	for _, ref := range views.CallRefs(callID) {
		cards := t.CardsByCallID(ref)
		if len(cards) == 0 {
			continue
		}
		if card == "" {
			return cards[0], nil
		}
		for _, k := range cards {
			if k.ID == card {
				return k, nil
			}
		}
		return nil, fmt.Errorf("session %q has no card %q of call %q: %w", sessionID, card, callID, ErrNoCall)
	}
	return nil, fmt.Errorf("session %q has no call %q: %w", sessionID, callID, ErrNoCall)
}
