package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	"prism/core"
)

// CardView is the screen model of one tool card. Build it with NewCardView;
// components render it and never look further.
type CardView struct {
	ID, CallID, Tool string
	// Server is the MCP server of a tool named mcp__<server>__<tool>
	// (Tool is then the server's tool name and FullName the whole name).
	Server, FullName string
	State            string // pending | running | ok | error | stopped
	Outcome          string // see Card.Outcome
	Kind             string // the card kind shown: generic, terminal, diff, read, search, web
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

	Terminal *TerminalBody
	Diff     *DiffBody
	Read     *ReadBody
	Matches  *MatchesBody
	Paths    *PathsBody
	WebSrch  *WebSearchBody
	Fetch    *WebFetchBody
	Generic  *GenericBody
	Image    *ImageBody

	// Model is what the model received from the call (nil while pending).
	Model *ModelView
}

// ImageBody is the image card: thumbnails and the result text.
type ImageBody struct {
	Images []ImageThumb
	Out    Clip
}

// ImageThumb is one inline thumbnail. Src is a data: URL built only from a
// validated raster image carried in durable data (core.InlineImage), never
// a remote address.
type ImageThumb struct {
	Src           string
	Width, Height int
	Caption       string
}

// TerminalBody is a command, where it ran and what it printed.
type TerminalBody struct {
	Description string
	Command     []string // one row per command line
	Cwd         string
	Output      Clip
	Exit        string // "exit code 2" / "signal SIGKILL"; "" for a clean exit
	Running     bool
}

// DiffBody is a list of file changes.
type DiffBody struct {
	Files          []DiffFile
	Added, Removed int
	Intent         bool // a pending call's intended change
}

// DiffFile is one file's change, as numbered lines.
type DiffFile struct {
	Path   string
	Lines  []DiffLine
	Hidden int // lines beyond the card's bound
	New    bool
	// Numbered: the rows carry the file's line numbers (else none: the
	// snippet's place in the file is unknown).
	Numbered bool
}

// DiffLine is one row of a diff: Op is ' ', '+', '-' or '~' (a hunk gap).
type DiffLine struct {
	Op       byte
	Old, New int // line numbers in the old and new file (0 = none)
	Text     string
	Expanded bool // beyond the collapsed preview
}

// ReadBody is a line-numbered, highlighted file window.
type ReadBody struct {
	Label, Lang string
	Lines       []CodeLine
	Shown       int
	TotalLines  int
	Partial     bool
	Empty       bool
}

// CodeLine is one highlighted line with the file's own number.
type CodeLine struct {
	N        int
	Tokens   []Token
	Cut      int
	Expanded bool
}

// Token is a run of text with a highlighter class ("" for plain).
type Token struct{ Class, Text string }

// MatchesBody is grep-like matches grouped by file.
type MatchesBody struct {
	Files     []MatchFile
	Count     int
	Total     int
	Truncated bool
	Hidden    int
	Recovery  Clip
}

// MatchFile is one file's matches.
type MatchFile struct {
	Path    string
	Matches []Line
}

// PathsBody is glob-like paths.
type PathsBody struct {
	Paths     Clip
	Total     int
	Truncated bool
	Recovery  Clip
}

// WebSearchBody is a web search's answer and sources.
type WebSearchBody struct {
	Answer    Clip
	Sources   []WebSourceView
	Truncated bool
}

// WebSourceView is one cited source; Href is set only for http(s) URLs.
type WebSourceView struct {
	URL, Href, Title, Snippet, Date string
}

// WebFetchBody is a fetched URL and its HTTP status.
type WebFetchBody struct {
	URL, Href  string
	StatusCode int
	Truncated  bool
}

// GenericBody is the IN/OUT card: the input and the result text.
type GenericBody struct {
	In       Clip
	Out      Clip
	OutError bool
	HasOut   bool
	Images   []string // image attachments, described
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
	switch cv := vs.call.(type) {
	case *core.GenericCallView:
		title = cv.Title
	case *core.TerminalCallView:
		title = cv.Title
	case *core.DiffCallView:
		title = cv.Title
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
		v.pendingBody(c, vs.call, cwd)
	} else {
		v.resultBody(c, vs.call, vs.result, cwd)
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

func (v *CardView) pendingBody(c *Card, cv core.CallView, cwd string) {
	running := c.Result == nil && !c.Stopped && !c.Approval.Waiting()
	switch x := cv.(type) {
	case *core.TerminalCallView:
		v.Kind = core.CardTerminal
		v.Terminal = &TerminalBody{
			Description: firstLine(clean(x.Description), 300),
			Command:     commandLines(x.Title),
			Cwd:         resolveCwd(cwd, x.Cwd, true),
			Running:     running,
		}
	case *core.DiffCallView:
		v.Kind = core.CardDiff
		v.Diff = newDiffBody(x.Diffs, true)
	default:
		v.Kind = core.CardGeneric
		v.Generic = &GenericBody{In: inputClip(c, cv)}
	}
}

func (v *CardView) resultBody(c *Card, cv core.CallView, rv core.ResultView, cwd string) {
	res := c.Result.Projection()
	switch x := rv.(type) {
	case *core.TerminalResultView:
		v.Kind = core.CardTerminal
		t := &TerminalBody{}
		cmd := x.Title
		if tc, ok := cv.(*core.TerminalCallView); ok {
			if cmd == "" {
				cmd = tc.Title
			}
			t.Description = firstLine(clean(tc.Description), 300)
			t.Cwd = resolveCwd(cwd, tc.Cwd, true)
		}
		t.Command = commandLines(cmd)
		if x.Output != nil {
			t.Output = newClip(*x.Output, maxLines)
		} else {
			t.Output = Clip{Empty: true}
		}
		switch {
		case x.Signal != "":
			t.Exit = "signal " + clean(x.Signal)
		case x.ExitCode != nil && *x.ExitCode != 0:
			t.Exit = fmt.Sprintf("exit code %d", *x.ExitCode)
		}
		v.Terminal = t
		if v.Title == c.Name || v.Title == "" {
			v.Title = firstLine(clean(cmd), 200)
		}
	case *core.DiffResultView:
		v.Kind = core.CardDiff
		v.Diff = newDiffBody(x.Diffs, false)
	case *core.ReadResultView:
		v.Kind = core.CardRead
		v.Read = newReadBody(x)
	case *core.SearchMatchesView:
		v.Kind = core.CardSearch
		v.Matches = newMatchesBody(x, res)
	case *core.SearchPathsView:
		v.Kind = core.CardSearch
		b := &PathsBody{Paths: newClip(strings.Join(x.Paths, "\n"), maxLines), Total: x.Total, Truncated: x.Truncated}
		if x.Truncated {
			b.Recovery = newClip(res.Content.PlainText(), 40)
		}
		v.Paths = b
	case *core.WebSearchView:
		v.Kind = core.CardWeb
		b := &WebSearchBody{Answer: newClip(x.Answer, maxLines), Truncated: x.Truncated}
		for i, s := range x.Sources {
			if i == 100 {
				break
			}
			b.Sources = append(b.Sources, WebSourceView{
				URL: firstLine(clean(s.URL), 500), Href: safeHref(s.URL),
				Title: firstLine(clean(s.Title), 300), Snippet: firstLine(clean(s.Snippet), 600),
				Date: firstLine(clean(s.PublishedAt), 40),
			})
		}
		v.WebSrch = b
	case *core.ImageResultView:
		v.Kind = core.CardImage
		v.Image = newImageBody(x)
	case *core.WebFetchView:
		v.Kind = core.CardWeb
		v.Fetch = &WebFetchBody{URL: firstLine(clean(x.URL), 500), Href: safeHref(x.URL), StatusCode: x.StatusCode, Truncated: x.Truncated}
	default: // generic, or no valid view
		v.Kind = core.CardGeneric
		g := &GenericBody{OutError: res.IsError, HasOut: true}
		if _, single := cv.(*core.DiffCallView); !single {
			g.In = inputClip(c, cv)
		} else {
			g.In = Clip{Empty: true}
		}
		if gv, ok := rv.(*core.GenericResultView); ok && len(gv.Content) > 0 {
			res.Content = gv.Content
		}
		var text []string
		for _, b := range res.Content {
			switch x := b.(type) {
			case *core.TextBlock:
				text = append(text, x.Text)
			case *core.ImageBlock:
				g.Images = append(g.Images, clean(fmt.Sprintf("%s %s %d×%d (%s)", x.Attachment.Name, x.Attachment.MediaType, x.Attachment.Width, x.Attachment.Height, Bytes(x.Attachment.Bytes))))
			default:
				text = append(text, core.Content{b}.PlainText())
			}
		}
		out := strings.Join(text, "\n")
		if out == "" && c.Result.Error != nil {
			out = c.Result.Error.Name + ": " + c.Result.Error.Code
		}
		g.Out = newClip(out, maxLines)
		v.Generic = g
	}
}

// inputClip is the IN section: the generic view's raw input (or content), or
// the raw argument string, pretty-printed when it is JSON.
func inputClip(c *Card, cv core.CallView) Clip {
	if g, ok := cv.(*core.GenericCallView); ok {
		if len(g.Content) > 0 {
			return newClip(g.Content.PlainText(), maxLines)
		}
		if g.RawInput != nil {
			if s, ok := g.RawInput.(string); ok {
				return newClip(s, maxLines)
			}
			if b, err := json.MarshalIndent(g.RawInput, "", "  "); err == nil {
				return newClip(string(b), maxLines)
			}
		}
	}
	return newClip(prettyJSON(c.Args), maxLines)
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

func commandLines(cmd string) []string {
	cmd, _ = capBytes(clean(cmd), 16<<10)
	lines := strings.Split(strings.TrimRight(cmd, "\n"), "\n")
	if len(lines) > 40 {
		lines = append(lines[:40:40], fmt.Sprintf("… %s more lines", Count(len(lines)-40)))
	}
	for i, l := range lines {
		lines[i], _ = cutLine(l, maxLineRunes)
	}
	return lines
}

// resolveCwd resolves a terminal's cwd against the session cwd; an omitted
// cwd is the session's.
func resolveCwd(session, cwd string, known bool) string {
	session, cwd = clean(session), clean(cwd)
	switch {
	case !known:
		return ""
	case cwd == "":
		return session
	case strings.HasPrefix(cwd, "/") || session == "":
		return cwd
	}
	return path.Join(session, cwd)
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
	switch x := v.(type) {
	case *core.GenericCallView:
		return x == nil
	case *core.TerminalCallView:
		return x == nil
	case *core.DiffCallView:
		return x == nil
	case *core.GenericResultView:
		return x == nil
	case *core.TerminalResultView:
		return x == nil
	case *core.DiffResultView:
		return x == nil
	case *core.SearchMatchesView:
		return x == nil
	case *core.SearchPathsView:
		return x == nil
	case *core.ReadResultView:
		return x == nil
	case *core.WebSearchView:
		return x == nil
	case *core.WebFetchView:
		return x == nil
	case *core.ImageResultView:
		return x == nil
	}
	return false
}

// newImageBody builds the image card from a validated view: each image
// becomes a data: URL of its own (checked) bytes.
func newImageBody(x *core.ImageResultView) *ImageBody {
	b := &ImageBody{Out: newClip(x.Content.PlainText(), maxLines)}
	for _, im := range x.Images {
		if im.Validate() != nil {
			continue
		}
		t := ImageThumb{Src: "data:" + im.MediaType + ";base64," + im.Data, Width: im.Width, Height: im.Height}
		caption := []string{}
		if n := firstLine(clean(im.Name), 120); n != "" {
			caption = append(caption, n)
		}
		w, h := im.Width, im.Height
		if im.Original != nil {
			w, h = im.Original.Width, im.Original.Height
		}
		caption = append(caption, fmt.Sprintf("%d×%d", w, h))
		if im.Bytes > 0 {
			caption = append(caption, Bytes(im.Bytes))
		}
		t.Caption = strings.Join(caption, " · ")
		b.Images = append(b.Images, t)
	}
	return b
}

// attachDownloads links the call's full parts from the card's truncation
// notes: the output clips' counts and the bodies' "truncated" marks.
func (v *CardView) attachDownloads(d *Downloads) {
	if d == nil {
		return
	}
	v.Downloads = d
	for _, c := range []*Clip{v.outputClip(), v.pathsClip()} {
		if c != nil {
			c.Full = d
		}
	}
}

// outputClip is the clip of the card's output, nil when it has none.
func (v *CardView) outputClip() *Clip {
	switch {
	case v.Terminal != nil:
		return &v.Terminal.Output
	case v.Generic != nil:
		return &v.Generic.Out
	case v.Image != nil:
		return &v.Image.Out
	case v.WebSrch != nil:
		return &v.WebSrch.Answer
	}
	return nil
}

func (v *CardView) pathsClip() *Clip {
	if v.Paths != nil {
		return &v.Paths.Paths
	}
	return nil
}
