package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/a-h/templ"

	"prism/core"
)

// CardView is the screen model of one tool card. Build it with NewCardView;
// components render it and never look further.
type CardView struct {
	ID, CallID, Tool string
	// Labels are the people's labels on the call (owner pages only);
	// LabelForm, when set, offers a new one.
	Labels    []LabelView
	LabelForm *LabelForm
	// Attention are the attention rules' open firings on the call at the
	// seq the page shows (owner pages only): the card is outlined.
	Attention    []AttentionView
	LabelChoices []string
	// Replayed is set on a fork's call answered with its source's
	// recorded result (owner pages only, like the labels).
	Replayed *ReplayedView
	// Server is the MCP server of a tool named mcp__<server>__<tool>
	// (Tool is then the server's tool name and FullName the whole name).
	Server, FullName string
	State            string // pending | running | ok | error | stopped
	Outcome          string // see Card.Outcome
	Kind             string // the card kind shown: the view's Card(), or generic
	Title, Summary   string
	Started          string // call time, HH:MM:SS UTC
	StartedISO       string
	Duration         string // "" while pending
	ErrName, ErrCode string
	// Approval is the call's approval panel (nil: the call never asked).
	Approval   *ApprovalView
	StateLabel string
	// ReadOnly is set where no decision can be taken (a share link, a
	// session this server does not run): an awaiting card shows its
	// waiting state without the Approve and Reject buttons.
	ReadOnly   bool
	InspectURL string
	Fallback   string // why a view fell back to generic, for the tooltip
	// Downloads link the call's full content, raw arguments and meta from
	// the card's truncation notes (nil while pending, and in saved files).
	Downloads *Downloads
	Current   bool // the page's current element (a jump's target)

	// Body is the card kind's body, built from the views by the rows of
	// callKinds and resultKinds (views/cardkinds.templ): *TerminalBody,
	// *DiffBody… or, for a view without a row, *GenericBody.
	Body CardBody

	// Model is what the model received from the call (nil while pending).
	Model *ModelView

	// Child is the subagent a subagent call started, nested (nil: none).
	Child *ChildView
}

// ApprovalView is a card's approval: why the call asks, and either the
// decision form (awaiting, not read-only) or what was decided.
type ApprovalView struct {
	ID string
	// State is awaiting, or the outcome: allowed-once, rejected,
	// cancelled, unavailable.
	State  string
	Label  string // "awaiting approval", "approved", "rejected"…
	Reason string // why the call asks
	// Decision: who, their note, why no person decided, when.
	By, Note, Why string
	When, WhenISO string
	// DecideURL is where the form posts ("" when read-only or decided).
	DecideURL string
}

// cardTitle is a card's title: the call view's, replaced by a non-empty
// result title, else the tool's name or the call id; one clean line.
func cardTitle(c *Card, vs cardViews) string {
	title := ""
	if vs.call != nil {
		title = vs.call.ViewTitle()
	}
	if vs.result != nil && vs.result.ViewTitle() != "" {
		title = vs.result.ViewTitle()
	}
	if title == "" {
		title = c.Name
	}
	if title == "" {
		title = c.CallID
	}
	return firstLine(clean(title), 200)
}

// Filter states: how the session's filter bar groups cards.
const (
	filterPending     = "pending"     // waiting for a result or an approval (running too)
	filterOK          = "ok"          // completed (a non-zero exit included)
	filterError       = "error"       // failed
	filterInterrupted = "interrupted" // stopped without a result, cancelled, or closed by crash repair
)

// FilterState returns the card's filter state: filterPending, filterOK,
// filterError or filterInterrupted.
func (v *CardView) FilterState() string {
	switch {
	case v.State == StateStopped, v.Outcome != "":
		return filterInterrupted
	case v.State == StatePending, v.State == StateRunning, v.State == StateAwaiting:
		return filterPending
	case v.State == StateError:
		return filterError
	}
	return filterOK
}

// NewCardView builds the screen model of a card. sessionID is used for the
// inspect link; cwd resolves a terminal's relative cwd.
func NewCardView(c *Card, sessionID, cwd string) *CardView {
	return NewCardViewIn(c, R{SessionID: sessionID, Cwd: cwd})
}

// NewCardViewIn builds the screen model of a card in render context r:
// its session's links and cwd, and whether decisions can be taken there.
func NewCardViewIn(c *Card, r R) *CardView {
	sessionID, cwd := r.SessionID, r.Cwd
	vs := c.Views()
	v := &CardView{
		ID:      c.ID,
		CallID:  clean(c.CallID),
		Tool:    clean(c.Name),
		State:   c.State(),
		Outcome: c.Outcome(),
	}
	v.InspectURL = r.links().Call(c.CallID, "")
	v.Labels, v.LabelForm = labelViews(c.CallID, c.ID, r)
	if c.CallID != "" {
		v.Attention = attentionViews(c.CallID, r)
	}
	if r.Labels && c.Result != nil && c.CallID != "" {
		for i := range v.Labels {
			v.Labels[i].TestURL = CallTestURL(sessionID, c.CallID, c.ID)
		}
	}
	v.LabelChoices = labelChoices(r)
	v.Replayed = replayedView(c.CallID, r)
	v.Child = childView(c, r)
	v.Current = r.current(c.ID)
	if c.HasCall {
		v.Started, v.StartedISO = clock(c.CallTime)
	} else if c.Result != nil {
		v.Started, v.StartedISO = clock(c.ResultTime)
	}
	if c.Result != nil && c.HasCall {
		v.Duration = duration(c.ResultTime - c.CallTime)
	}
	if c.Result != nil && c.Result.Error != nil {
		v.ErrName, v.ErrCode = clean(c.Result.Error.Name), clean(c.Result.Error.Code)
	}
	v.ReadOnly = r.ReadOnly
	v.Approval = newApprovalView(c, sessionID, r.ReadOnly)
	v.StateLabel = stateLabel(v.State, v.Outcome)
	if v.State == StateError && v.Outcome == "" && c.Result != nil && errorInferred(c.Result.Meta) {
		v.StateLabel = "error inferred"
	}
	if server, tool, ok := core.SplitMCPName(v.Tool); ok {
		v.Server, v.FullName, v.Tool = server, v.Tool, tool // an MCP tool: show its server
	}

	v.Title = cardTitle(c, vs)
	if v.Server != "" && v.Title == v.FullName {
		v.Title = "" // the header already shows the server and the tool
	}
	v.Summary = summary(c)
	if cwd != "" && strings.HasPrefix(v.Summary, cwd+"/") {
		v.Summary = v.Summary[len(cwd)+1:]
	}

	if c.Result == nil {
		v.pendingBody(c, vs.call, cwd, r.Highlights)
	} else {
		v.resultBody(c, vs.call, vs.result, cwd, r.Highlights)
	}
	if c.Result != nil {
		v.attachDownloads(r.links().Downloads(c.CallID, c.ID))
	}
	v.Model = newModelView(c, vs.result)
	// A failed call's summary is the first line of its error output (dsh).
	if c.Result != nil && (c.Result.Projection().IsError || v.Summary == "") && v.State == StateError {
		if l := v.errorLine(c); l != "" {
			v.Summary = l
		}
	}
	return v
}

func newApprovalView(c *Card, sessionID string, readOnly bool) *ApprovalView {
	a := c.Approval
	if a == nil {
		return nil
	}
	v := &ApprovalView{ID: clean(a.ID), Reason: firstLine(clean(a.Reason), 300)}
	if !a.Decided {
		v.State, v.Label = StateAwaiting, approvalLabel(StateAwaiting)
		if !readOnly && c.State() == StateAwaiting {
			v.DecideURL = ApprovalURL(sessionID, a.ID)
		}
		return v
	}
	v.State = clean(string(a.Outcome))
	v.Label = approvalLabel(v.State)
	v.By, v.Note, v.Why = firstLine(clean(a.By), 200), clean(a.Note), firstLine(clean(a.Why), 300)
	v.When, v.WhenISO = clock(a.DecidedTime)
	return v
}

func stateLabel(state, outcome string) string {
	switch outcome {
	case "outcome-unknown":
		return "outcome unknown"
	case "not-started":
		return "not started"
	case "aborted-before-dispatch":
		return "cancelled before start"
	case "aborted":
		return "aborted"
	}
	if state == StateAwaiting {
		return "awaiting approval"
	}
	return state
}

// errorInferred reports whether a result's meta records that its error was
// inferred ({"inferredError": {"kind": …}}): a source that stores no error
// flag (a Codex rollout) read the failure from the output, and the card
// says so.
func errorInferred(meta json.RawMessage) bool {
	if len(meta) == 0 {
		return false
	}
	var m struct {
		InferredError *struct {
			Kind string `json:"kind"`
		} `json:"inferredError"`
	}
	return json.Unmarshal(meta, &m) == nil && m.InferredError != nil && m.InferredError.Kind != ""
}

func (v *CardView) errorLine(c *Card) string {
	return firstLine(clean(c.Result.Projection().Content.PlainText()), 160)
}

// pendingBody builds the body of a card still waiting for its result:
// its call view's row of callKinds, else the generic card.
func (v *CardView) pendingBody(c *Card, cv core.CallView, cwd string, hl *HighlightCache) {
	in := bodyInput{card: c, call: cv, cwd: cwd, view: v, hl: hl}
	for _, k := range callKinds {
		if b, ok := k.body(cv, in); ok {
			v.Kind, v.Body = cv.Card(), b
			return
		}
	}
	v.Kind, v.Body = core.CardGeneric, newGenericCallBody(c, cv)
}

// resultBody builds the body of a completed card: its result view's row of
// resultKinds, else the generic card.
func (v *CardView) resultBody(c *Card, cv core.CallView, rv core.ResultView, cwd string, hl *HighlightCache) {
	in := bodyInput{card: c, call: cv, cwd: cwd, view: v, hl: hl}
	for _, k := range resultKinds {
		if b, ok := k.body(rv, in); ok {
			v.Kind, v.Body = rv.Card(), b
			return
		}
	}
	v.Kind, v.Body = core.CardGeneric, newGenericResultBody(rv, in)
}

// CardBody is the body of one card kind: its screen model, which renders
// itself with its component (views/cardkinds.templ). A body whose clips
// may cut text also implements clipBody.
type CardBody interface {
	component(v *CardView) templ.Component
}

// clipBody is a body with clips that link the call's downloads when the
// card shows only part of them.
type clipBody interface {
	clips() []*Clip
}

// bodyInput is what a body is built from besides its own view: the card,
// its call view (nil when invalid), the session's cwd, the screen model
// being built, whose title a body may refine, and the render's memo of
// highlighted code (nil: none).
type bodyInput struct {
	card *Card
	call core.CallView
	cwd  string
	view *CardView
	hl   *HighlightCache
}

// A bodyKind is the registration of one core view type with the views: how
// its body is built and, for a result, what it says the tool cut before
// the model saw it. Make one with kindOf.
type bodyKind struct {
	// body builds the body of view x, or reports x is another type.
	body func(x any, in bodyInput) (CardBody, bool)
	// cut lists what the tool cut (nil for another type or nothing cut).
	cut func(x any) []string
}

// kindOf registers the view type V: body builds its card body; cut, when
// not nil, says what the tool cut.
func kindOf[V any](body func(x V, in bodyInput) CardBody, cut func(x V) []string) bodyKind {
	k := bodyKind{body: func(x any, in bodyInput) (CardBody, bool) {
		v, ok := x.(V)
		if !ok {
			return nil, false
		}
		return body(v, in), true
	}}
	if cut != nil {
		k.cut = func(x any) []string {
			if v, ok := x.(V); ok {
				return cut(v)
			}
			return nil
		}
	}
	return k
}

// prettyJSON indents s when it is JSON and returns it unchanged otherwise.
func prettyJSON(s string) string {
	if len(s) > 4<<20 {
		return s
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(s), "", "  "); err == nil {
		return buf.String()
	}
	return s
}

// summary derives the one-line summary from the arguments, dsh's way: the
// first of the usual keys, else the first string argument.
func summary(c *Card) string {
	if !c.HasCall || c.Args == "" || len(c.Args) > 1<<20 {
		return ""
	}
	var m map[string]any
	if json.Unmarshal([]byte(c.Args), &m) != nil {
		return ""
	}
	for _, k := range []string{"description", "command", "path", "file_path", "url", "query", "pattern"} {
		if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
			return firstLine(clean(s), 160)
		}
	}
	return ""
}

// safeHref returns u when it is an absolute http(s) URL, else "": only such
// URLs become links.
func safeHref(u string) string {
	u = strings.TrimSpace(u)
	p, err := url.Parse(u)
	if err != nil || p.Host == "" || (p.Scheme != "http" && p.Scheme != "https") {
		return ""
	}
	if strings.ContainsAny(u, "\n\r\t") || !isClean(u) {
		return ""
	}
	return p.String()
}

func isClean(s string) bool { return clean(s) == s }

// clock formats epoch ms as HH:MM:SS (UTC) and as RFC 3339.
func clock(ms int64) (string, string) {
	if ms <= 0 {
		return "", ""
	}
	t := time.UnixMilli(ms).UTC()
	return t.Format("15:04:05"), t.Format("2006-01-02T15:04:05.000Z")
}

// duration formats a millisecond duration compactly: 840 ms, 1.2 s, 3m 05s.
func duration(ms int64) string {
	switch {
	case ms < 0:
		return "—"
	case ms < 1000:
		return fmt.Sprintf("%d ms", ms)
	case ms < 10_000:
		return fmt.Sprintf("%.2f s", float64(ms)/1000)
	case ms < 60_000:
		return fmt.Sprintf("%.1f s", float64(ms)/1000)
	case ms < 3_600_000:
		return fmt.Sprintf("%dm %02ds", ms/60_000, ms/1000%60)
	}
	return fmt.Sprintf("%dh %02dm", ms/3_600_000, ms/60_000%60)
}

// Bytes formats a byte count.
func Bytes(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}

// safeCallView runs the presenter and validates its view; a nil, invalid or
// panicking presenter gives nil (the generic card).
func safeCallView(p Presenter, name, args string) (v core.CallView) {
	if p == nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			v = nil
		}
	}()
	v = p.PresentCall(name, args)
	if v == nil || isNilView(v) || v.Validate() != nil {
		return nil
	}
	return v
}

func safeResultView(p Presenter, name, args string, res core.ToolResult) (v core.ResultView) {
	if p == nil {
		return &core.GenericResultView{Content: res.Content}
	}
	defer func() {
		if recover() != nil {
			v = &core.GenericResultView{Content: res.Content}
		}
	}()
	v = p.PresentResult(name, args, res)
	if v == nil || isNilView(v) || v.Validate() != nil {
		return &core.GenericResultView{Content: res.Content}
	}
	return v
}

// isNilView reports a typed nil pointer inside a view interface.
func isNilView(v any) bool {
	r := reflect.ValueOf(v)
	return r.Kind() == reflect.Pointer && r.IsNil()
}

// attachDownloads links the call's full parts from the card's truncation
// notes: the output clips' counts and the bodies' "truncated" marks.
func (v *CardView) attachDownloads(d *Downloads) {
	if d == nil {
		return
	}
	v.Downloads = d
	if b, ok := v.Body.(clipBody); ok {
		for _, c := range b.clips() {
			c.Full = d
		}
	}
}
