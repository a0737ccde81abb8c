package codex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"prism/core"
)

// EventRaw is the type of the log-only event that keeps a rollout line the
// decoder does not map: {source, line, record}, always marked ignorable.
const EventRaw = "source/raw"

// SourceName is the source field of this package's source/raw events and
// the plugin name of its context messages.
const SourceName = "codex"

// DefaultProvider is the model provider of assistant messages when the
// rollout's session_meta names none.
const DefaultProvider = "openai"

// UnknownModel is the model of assistant messages written before any
// turn_context named one.
const UnknownModel = "unknown"

// Options tune Decode.
type Options struct {
	// ID is the session id used when the rollout has no session_meta with
	// an id (IDFromFileName gives it from the file's name).
	ID string
}

// Rollout is a decoded rollout: the prism session and what else the
// rollout said about itself.
type Rollout struct {
	Header core.SessionHeader
	Events []core.Event
	// Malformed lists the lines that could not be read, in order; each is
	// also kept as a source/raw event.
	Malformed []*LineError
	// Lines is the number of lines read.
	Lines int

	// From the first session_meta:
	Originator, CLIVersion, Provider, GitBranch string
	// Source is session_meta.source as written ("cli", "exec", or an
	// object for a subagent).
	Source json.RawMessage
	// ForkedFromID is the rollout this one was forked from (forked_from_id).
	ForkedFromID string
	// SeedLines is the number of lines of a fork's inherited prefix (0:
	// not a fork).
	SeedLines int
	// ParentThreadID is the thread that spawned this one
	// (source.subagent.thread_spawn.parent_thread_id, or the older top-level
	// parent_thread_id).
	ParentThreadID string
}

// LineError is a rollout line that could not be read.
type LineError struct {
	Line int // 1-based
	Err  error
}

// Error names the line.
func (e *LineError) Error() string { return fmt.Sprintf("codex rollout line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// ErrNoSessionID is returned by Decode when the rollout names no session id
// and Options.ID is empty.
var ErrNoSessionID = errors.New("codex rollout: no session_meta with an id, and no id given")

// maxLine bounds one rollout line (a line holding a large tool output or an
// inline image can be megabytes).
const maxLine = 64 << 20

// Decode reads a rollout's JSONL lines from r and returns the prism session
// they make. A malformed line is reported in Rollout.Malformed with its line
// number, and the rest decodes. Decode fails only when r fails, a line
// exceeds 64 MiB, or no session id is known (ErrNoSessionID).
func Decode(r io.Reader, opts Options) (*Rollout, error) {
	d := NewDecoder(opts)
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(buf) > maxLine {
				return nil, fmt.Errorf("codex rollout line %d: longer than %d bytes", d.lineNo+1, maxLine)
			}
			continue
		}
		if len(buf) > 0 {
			d.Line(buf)
			buf = buf[:0]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("codex rollout: read line %d: %w", d.lineNo+1, err)
		}
	}
	return d.Finish()
}

// Decoder maps rollout lines one at a time; Decode is the usual way to use
// it. The zero value is not ready: use NewDecoder.
type Decoder struct {
	opts   Options
	out    Rollout
	lineNo int
	meta   bool // the first session_meta was read

	provider, model string
	now             int64 // the latest line time, ms

	turn     int  // the open turn's number, or the last one's
	turnOpen bool //
	turnBusy bool // the open turn has had a step
	markers  bool // the rollout writes task_started
	step     int  // the last step number of the open turn
	st       *stepBuf

	// seed decodes a fork's inherited prefix (the lines under the parent's
	// repeated session_meta) as the parent's own rollout, until the fork's
	// session_meta comes again.
	seed *Decoder
}

// stepBuf is the open step, emitted whole when it closes.
type stepBuf struct {
	start, lastModel int64
	last             int64 // the time of its latest line
	blocks           core.Content
	calls            []*call
	byID             map[string]*call
	results          int
	usage            *core.TokenUsage
	tail             []pendingEvent // results, user messages, raw lines, in order
}

type call struct {
	id, name, args string
	time           int64
	answered       bool
	asks           bool // a request for a person (AsksPerson): approval/asked follows its tool/call
}

// Tools whose call waits for a person: until its output lands the call is
// shown awaiting (approval/asked), read-only in prism.
const (
	ToolRequestPermissions = "request_permissions"
	ToolRequestUserInput   = "request_user_input"
)

// AsksPerson reports whether a call of the named tool waits for a person.
func AsksPerson(name string) bool {
	return name == ToolRequestPermissions || name == ToolRequestUserInput
}

// approvalID is the id of the approval/asked a call that waits for a
// person gets.
func approvalID(callID string) string { return "codex-ask-" + callID }

type pendingEvent struct {
	typ       string
	time      int64
	data      any
	surface   bool
	ignorable bool
}

// NewDecoder returns a decoder of one rollout.
func NewDecoder(opts Options) *Decoder {
	d := &Decoder{opts: opts, provider: DefaultProvider, model: UnknownModel}
	d.out.Header.ID = opts.ID
	return d
}

// envelope is one rollout line: {timestamp, type, payload}.
type envelope struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
	ID        json.RawMessage `json:"id"`
}

// responseItemTypes are the payload types of response_item, which the
// earliest rollouts wrote as bare lines.
var responseItemTypes = map[string]bool{
	"message": true, "reasoning": true, "function_call": true, "function_call_output": true,
	"custom_tool_call": true, "custom_tool_call_output": true, "local_shell_call": true,
	"web_search_call": true,
}

// Line decodes one line (its trailing newline optional). Blank lines are
// skipped.
func (d *Decoder) Line(b []byte) {
	d.lineNo++
	d.out.Lines = d.lineNo
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		if d.seed != nil {
			d.seed.Line(b)
		}
		return
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		if d.seed != nil {
			d.seed.Line(b)
			return
		}
		d.malformed(b, fmt.Errorf("not a JSON object: %w", err))
		return
	}
	if env.Type == "session_meta" && d.meta && d.forkMeta(b, env.Payload) {
		return
	}
	if d.seed != nil {
		d.seed.Line(b)
		return
	}
	if t, ok := parseTime(env.Timestamp); ok {
		d.now = t
	}
	payload := env.Payload
	typ := env.Type
	if len(payload) == 0 || string(payload) == "null" {
		switch {
		case typ == "" && len(env.ID) > 0 && !d.meta:
			typ, payload = "session_meta", b // the earliest rollouts' flat header
		case responseItemTypes[typ]:
			typ, payload = "response_item", b // the earliest rollouts' bare items
		case typ == "":
			d.raw(b, "") // an object of no known shape: kept as is
			return
		}
	}
	var mapped bool
	var err error
	switch typ {
	case "session_meta":
		mapped, err = d.sessionMeta(payload)
	case "turn_context":
		mapped, err = d.turnContext(payload)
	case "response_item":
		mapped, err = d.responseItem(payload)
	case "event_msg":
		mapped, err = d.eventMsg(payload)
	}
	if err != nil {
		d.malformed(b, fmt.Errorf("%s: %w", typ, err))
		return
	}
	if !mapped {
		d.raw(b, "")
	}
}

// malformed records a line that could not be read and keeps its text.
func (d *Decoder) malformed(b []byte, err error) {
	d.out.Malformed = append(d.out.Malformed, &LineError{Line: d.lineNo, Err: err})
	d.raw(b, err.Error())
}

// rawData is the data of a source/raw event.
type rawData struct {
	Source string          `json:"source"`
	Line   int             `json:"line"`
	Record json.RawMessage `json:"record"`
	Error  string          `json:"error,omitempty"`
}

// raw keeps line b as a source/raw event: its JSON when that is lossless,
// else its text as a string.
func (d *Decoder) raw(b []byte, errText string) {
	rec := json.RawMessage(nil)
	if errText == "" && core.CheckJSON(b) == nil {
		var buf bytes.Buffer
		if json.Compact(&buf, b) == nil {
			rec = buf.Bytes()
		}
	}
	if rec == nil {
		s, _ := core.MarshalNoEscape(string(b))
		rec = s
	}
	d.add(pendingEvent{typ: EventRaw, time: d.now, ignorable: true,
		data: rawData{Source: SourceName, Line: d.lineNo, Record: rec, Error: errText}})
}

// add emits ev now, or after the open step's calls.
func (d *Decoder) add(ev pendingEvent) {
	if d.st != nil {
		d.st.tail = append(d.st.tail, ev)
		d.st.last = ev.time
		return
	}
	d.emit(ev)
}

// emit appends ev to the log with the next seq.
func (d *Decoder) emit(ev pendingEvent) {
	data, err := core.MarshalNoEscape(ev.data)
	if err != nil { // only this package's own types reach here
		data, _ = core.MarshalNoEscape(rawData{Source: SourceName, Line: d.lineNo, Record: json.RawMessage(`null`), Error: err.Error()})
		ev.typ, ev.ignorable, ev.surface = EventRaw, true, false
	}
	e := core.Event{Type: ev.typ, Seq: int64(len(d.out.Events)), Time: ev.time, Data: data, Ignorable: ev.ignorable}
	if ev.surface {
		e.SurfaceOp = core.AppendOp()
	}
	d.out.Events = append(d.out.Events, e)
}

// parseTime reads an RFC 3339 timestamp as epoch milliseconds.
func parseTime(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, false
	}
	ms := t.UnixMilli()
	if ms < 0 || ms > 1<<53-1 {
		return 0, false
	}
	return ms, true
}

// sessionMetaWire is session_meta's payload, the fields prism reads.
type sessionMetaWire struct {
	ID             string          `json:"id"`
	Timestamp      string          `json:"timestamp"`
	Cwd            string          `json:"cwd"`
	Originator     string          `json:"originator"`
	CLIVersion     string          `json:"cli_version"`
	ModelProvider  string          `json:"model_provider"`
	Source         json.RawMessage `json:"source"`
	ForkedFromID   string          `json:"forked_from_id"`
	ParentThreadID string          `json:"parent_thread_id"`
	Git            *struct {
		Branch string `json:"branch"`
	} `json:"git"`
}

func (d *Decoder) sessionMeta(p json.RawMessage) (bool, error) {
	if d.meta {
		return false, nil // a fork's inherited prefix: kept raw
	}
	var m sessionMetaWire
	if err := json.Unmarshal(p, &m); err != nil {
		return false, err
	}
	d.meta = true
	h := &d.out.Header
	if m.ID != "" {
		h.ID = m.ID
	}
	if t, ok := parseTime(m.Timestamp); ok {
		h.CreatedAt = t
	} else {
		h.CreatedAt = d.now
	}
	if m.Cwd != "" && filepath.IsAbs(m.Cwd) {
		h.Cwd = filepath.Clean(m.Cwd)
	}
	o := &d.out
	o.Originator, o.CLIVersion, o.ForkedFromID = m.Originator, m.CLIVersion, m.ForkedFromID
	if m.Git != nil {
		o.GitBranch = m.Git.Branch
	}
	if m.ModelProvider != "" {
		o.Provider, d.provider = m.ModelProvider, m.ModelProvider
	}
	if len(m.Source) > 0 && string(m.Source) != "null" {
		o.Source = append(json.RawMessage(nil), m.Source...)
		var src struct {
			Subagent struct {
				ThreadSpawn struct {
					ParentThreadID string `json:"parent_thread_id"`
				} `json:"thread_spawn"`
			} `json:"subagent"`
		}
		if json.Unmarshal(m.Source, &src) == nil {
			o.ParentThreadID = src.Subagent.ThreadSpawn.ParentThreadID
		}
	}
	if o.ParentThreadID == "" {
		o.ParentThreadID = m.ParentThreadID
	}
	return true, nil
}

func (d *Decoder) turnContext(p json.RawMessage) (bool, error) {
	var tc struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(p, &tc); err != nil {
		return false, err
	}
	if tc.Model != "" {
		d.model = tc.Model
	}
	if d.turnOpen && d.turnBusy && !d.markers {
		// A rollout without turn markers: each turn_context starts a turn.
		d.endTurn(core.TurnEndReason{Kind: core.TurnCompleted}, false)
	}
	d.openTurn()
	d.add(pendingEvent{typ: core.EventRequestContext, time: d.now,
		data: core.RequestContext{Provider: d.provider, Model: d.model}})
	return true, nil
}

// openTurn opens a turn unless one is open.
func (d *Decoder) openTurn() {
	if d.turnOpen {
		return
	}
	d.turn++
	d.turnOpen, d.turnBusy, d.step = true, false, 0
	d.emit(pendingEvent{typ: core.EventTurnStart, time: d.now, data: core.TurnStart{Turn: d.turn}})
}

// endTurn closes the open step and turn. Unanswered calls get an aborted
// result when aborted, else an outcome-unknown one.
func (d *Decoder) endTurn(reason core.TurnEndReason, aborted bool) {
	if !d.turnOpen {
		return
	}
	d.closeStep(true, aborted)
	d.emit(pendingEvent{typ: core.EventTurnEnd, time: d.now, data: core.TurnEnd{Turn: d.turn, Reason: reason}})
	d.turnOpen = false
}

// openStep returns the open step, opening one (and a turn) if needed.
func (d *Decoder) openStep() *stepBuf {
	if d.st == nil {
		d.openTurn()
		d.st = &stepBuf{start: d.now, byID: map[string]*call{}}
		d.turnBusy = true
	}
	return d.st
}

// modelStep returns the step a model item joins: a new one once the open
// step has results and no call left unanswered (the next response).
func (d *Decoder) modelStep() *stepBuf {
	if st := d.st; st != nil && st.results > 0 && !st.unanswered() {
		d.closeStep(false, false)
	}
	st := d.openStep()
	st.lastModel, st.last = d.now, d.now
	return st
}

func (st *stepBuf) unanswered() bool {
	for _, c := range st.calls {
		if !c.answered {
			return true
		}
	}
	return false
}

// closeStep emits the open step and closes it: step/start, its
// assistant/message, its tool/calls, what followed them, a synthetic result
// for each unanswered call (aborted with the turn, or of unknown outcome),
// then step/end — at the time of the step's last line, or of the turn's
// end (final).
func (d *Decoder) closeStep(final, aborted bool) {
	st := d.st
	if st == nil {
		return
	}
	d.st = nil
	d.writeStep(st)
	end := st.last
	if final {
		end = d.now
	}
	for _, c := range st.calls {
		if !c.answered {
			if c.asks {
				d.emit(pendingEvent{typ: core.EventApprovalDecided, time: d.now, data: core.ApprovalDecided{
					ID: approvalID(c.id), Outcome: core.ApprovalCancelled, Reason: "the turn ended before an answer came"}})
			}
			d.emit(pendingEvent{typ: core.EventToolResult, time: d.now, surface: true,
				data: unansweredResult(d.turn, d.step, c, aborted, int64(len(d.out.Events)))})
		}
	}
	d.emit(pendingEvent{typ: core.EventStepEnd, time: end, data: core.StepBoundary{Turn: d.turn, Step: d.step}})
}

// writeStep writes st as the next step of the open turn, without its end.
func (d *Decoder) writeStep(st *stepBuf) {
	d.step++
	d.emit(pendingEvent{typ: core.EventStepStart, time: st.start, data: core.StepBoundary{Turn: d.turn, Step: d.step}})
	if len(st.blocks) > 0 {
		d.emit(pendingEvent{typ: core.EventAssistantMessage, time: st.lastModel, surface: true,
			data: core.AssistantMessage{Turn: d.turn, Step: d.step, Usage: st.usage, Message: core.Message{
				ID: fmt.Sprintf("codex-%s-t%d-s%d", d.out.Header.ID, d.turn, d.step), Role: core.RoleAssistant,
				Content: st.blocks, Source: core.Source{Kind: core.SourceModel, Provider: d.provider, Model: d.model}}}})
	}
	for _, c := range st.calls {
		d.emit(pendingEvent{typ: core.EventToolCall, time: c.time,
			data: core.ToolCall{Turn: d.turn, Step: d.step, CallID: c.id, Name: c.name, Arguments: c.args}})
	}
	for _, c := range st.calls {
		if c.asks {
			d.emit(pendingEvent{typ: core.EventApprovalAsked, time: c.time,
				data: core.ApprovalAsked{ID: approvalID(c.id), ToolName: c.name, CallID: c.id, Reason: "Codex asks the user"}})
		}
	}
	for _, ev := range st.tail {
		if r, ok := ev.data.(*core.ToolResultData); ok {
			r.Turn, r.Step = d.turn, d.step
		}
		d.emit(ev)
	}
}

// forkMeta handles a repeated session_meta line b (payload p): one naming
// another session starts the fork's seed, decoded as that session's own
// rollout (so the seed equals the parent's prefix); the fork's own again
// ends it (seedLength, session/end-seed). It reports whether the line was
// taken.
func (d *Decoder) forkMeta(b []byte, p json.RawMessage) bool {
	var m struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(p, &m) != nil || m.ID == "" {
		return false
	}
	switch {
	case d.seed == nil && m.ID != d.out.Header.ID && len(d.out.Events) == 0:
		d.seed = NewDecoder(Options{ID: m.ID})
		d.seed.Line(b)
		if d.out.ForkedFromID == "" {
			d.out.ForkedFromID = m.ID
		}
		return true
	case d.seed != nil && m.ID == d.out.Header.ID:
		d.endSeed()
		return true
	case d.seed != nil:
		d.seed.Line(b)
		return true
	}
	return false
}

// endSeed closes the seed: its events become the fork's first, then
// session/end-seed; the header names the parent (no origin: a fork is not
// a child) and the seed's length.
func (d *Decoder) endSeed() {
	seed := d.seed
	d.seed = nil
	ro, err := seed.Finish()
	if err != nil {
		return
	}
	d.out.Events = append(d.out.Events, ro.Events...)
	n := int64(len(d.out.Events))
	d.out.Header.SeedLength = &n
	d.out.Header.ParentSession = d.out.ForkedFromID
	d.out.SeedLines = seed.lineNo
	d.emit(pendingEvent{typ: core.EventSessionEndSeed, time: seed.now, data: struct{}{}})
	d.turn, d.now = seed.turn, max(d.now, seed.now)
	d.provider, d.model = seed.provider, seed.model
}

// Finish closes the input and returns the rollout. The open step's events
// are written, leaving it and its turn open in the log: a session still
// running, or cut short (import's crash repair closes it).
func (d *Decoder) Finish() (*Rollout, error) {
	if d.seed != nil {
		d.endSeed() // the fork's own lines never came: all of it is seed
	}
	if d.out.Header.ID == "" {
		return nil, ErrNoSessionID
	}
	if st := d.st; st != nil {
		d.st = nil
		d.writeStep(st)
	}
	out := d.out
	return &out, nil
}

// responseItem maps one response_item payload.
func (d *Decoder) responseItem(p json.RawMessage) (bool, error) {
	var it struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(p, &it); err != nil {
		return false, err
	}
	switch it.Type {
	case "message":
		return d.message(p)
	case "reasoning":
		return d.reasoning(p)
	case "function_call":
		var fc struct {
			Name      string  `json:"name"`
			Arguments *string `json:"arguments"`
			CallID    string  `json:"call_id"`
		}
		if err := json.Unmarshal(p, &fc); err != nil {
			return false, err
		}
		if fc.Arguments == nil {
			return false, errors.New(`function_call without "arguments"`)
		}
		d.addCall(fc.CallID, fc.Name, *fc.Arguments)
		return true, nil
	case "custom_tool_call":
		var cc struct {
			Name   string  `json:"name"`
			Input  *string `json:"input"`
			CallID string  `json:"call_id"`
		}
		if err := json.Unmarshal(p, &cc); err != nil {
			return false, err
		}
		if cc.Input == nil {
			return false, errors.New(`custom_tool_call without "input"`)
		}
		d.addCall(cc.CallID, cc.Name, *cc.Input)
		return true, nil
	case "local_shell_call":
		var lc struct {
			CallID string          `json:"call_id"`
			ID     string          `json:"id"`
			Action json.RawMessage `json:"action"`
		}
		if err := json.Unmarshal(p, &lc); err != nil {
			return false, err
		}
		id := lc.CallID
		if id == "" {
			id = lc.ID
		}
		var args bytes.Buffer
		if len(lc.Action) == 0 || json.Compact(&args, lc.Action) != nil || core.CheckJSON(args.Bytes()) != nil {
			args.Reset()
			args.WriteString("{}")
		}
		d.addCall(id, ToolLocalShell, args.String())
		return true, nil
	case "function_call_output", "custom_tool_call_output":
		return d.output(p)
	}
	return false, nil
}

// ToolLocalShell is the tool name given to a local_shell_call.
const ToolLocalShell = "local_shell"

// addCall adds a call to the step of the current response.
func (d *Decoder) addCall(id, name, args string) {
	st := d.modelStep()
	if id == "" || st.byID[id] != nil {
		id = fmt.Sprintf("codex-line-%d", d.lineNo)
	}
	if name == "" {
		name = "unknown"
	}
	c := &call{id: id, name: name, args: args, time: d.now, asks: AsksPerson(name)}
	st.calls = append(st.calls, c)
	st.byID[id] = c
	st.blocks = append(st.blocks, &core.ToolCallBlock{ID: id, Name: name, Arguments: args})
}

// output maps a call's output to its tool/result; an output whose call is
// not in the open step is kept raw.
func (d *Decoder) output(p json.RawMessage) (bool, error) {
	var o struct {
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(p, &o); err != nil {
		return false, err
	}
	st := d.st
	if st == nil || st.byID[o.CallID] == nil || st.byID[o.CallID].answered {
		return false, nil
	}
	c := st.byID[o.CallID]
	content, explicit := outputContent(o.Output)
	inf := Infer(content.PlainText(), explicit)
	res := &core.ToolResultData{Turn: d.turn, Message: core.NewToolResultMessage(
		fmt.Sprintf("codex-%s-line-%d", d.out.Header.ID, d.lineNo), c.id, content, inf != nil && inf.IsError())}
	if inf != nil {
		res.Meta = inf.meta()
	}
	c.answered = true
	st.results++
	st.last = d.now
	if c.asks {
		st.tail = append(st.tail, pendingEvent{typ: core.EventApprovalDecided, time: d.now,
			data: core.ApprovalDecided{ID: approvalID(c.id), Outcome: core.ApprovalAllowedOnce, By: "codex", Reason: "the answer landed in the rollout"}})
	}
	st.tail = append(st.tail, pendingEvent{typ: core.EventToolResult, time: d.now, surface: true, data: res})
	return true, nil
}

// outputContent reads an output: a string, an array of input_text and
// input_image items, or the older {content, success} object. explicit is
// set when the object says success is false.
func outputContent(raw json.RawMessage) (core.Content, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return core.Text(s), false
	}
	var items []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL string `json:"image_url"`
	}
	if json.Unmarshal(raw, &items) == nil {
		c := core.Content{}
		for _, it := range items {
			switch it.Type {
			case "input_text", "output_text", "text":
				c = append(c, &core.TextBlock{Text: it.Text})
			case "input_image":
				c = append(c, &core.TextBlock{Text: "[image]"})
			}
		}
		return c, false
	}
	var obj struct {
		Content *string `json:"content"`
		Success *bool   `json:"success"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Content != nil {
		return core.Text(*obj.Content), obj.Success != nil && !*obj.Success
	}
	if len(raw) == 0 || string(raw) == "null" {
		return core.Content{}, false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return core.Text(buf.String()), false
	}
	return core.Content{}, false
}

// unansweredResult is the result of a call whose output never came before
// its turn ended: aborted with the turn, or of unknown outcome.
func unansweredResult(turn, step int, c *call, aborted bool, seq int64) *core.ToolResultData {
	inf := &InferredError{Kind: InferUnanswered}
	text, info := core.ToolOutcomeUnknownText, &core.ErrorInfo{Name: "ToolOutcomeUnknown", Code: core.CodeToolOutcomeUnknown}
	if aborted {
		inf.Kind = InferTurnAborted
		text, info = "Error: tool call aborted", &core.ErrorInfo{Name: "AbortError", Code: core.CodeAborted}
	}
	return &core.ToolResultData{Turn: turn, Step: step, Error: info, Meta: inf.meta(), Message: core.NewToolResultMessage(
		"codex-interrupted-"+c.id+"-"+strconv.FormatInt(seq, 10), c.id, core.Text(text), true)}
}

// message maps a response_item message.
func (d *Decoder) message(p json.RawMessage) (bool, error) {
	var m struct {
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(p, &m); err != nil {
		return false, err
	}
	var texts []string
	for _, c := range m.Content {
		switch c.Type {
		case "input_text", "output_text", "text", "refusal":
			texts = append(texts, c.Text)
		case "input_image", "output_image":
			texts = append(texts, "[image]")
		}
	}
	text := strings.Join(texts, "\n")
	if m.Role == core.RoleAssistant {
		st := d.modelStep()
		if text != "" {
			st.blocks = append(st.blocks, &core.TextBlock{Text: text})
		}
		return true, nil
	}
	id := fmt.Sprintf("codex-%s-line-%d", d.out.Header.ID, d.lineNo)
	if d.st != nil && !d.st.unanswered() {
		d.closeStep(false, false) // a message between responses ends the one before
	}
	if form := scaffolding(m.Role, text); form != "" {
		d.add(pendingEvent{typ: core.EventUserMessage, time: d.now, surface: true, data: core.Message{
			ID: id, Role: core.RoleUser, Content: core.Text(text),
			Source: core.Source{Kind: core.SourcePlugin, Plugin: SourceName, Form: form}}})
		return true, nil
	}
	if d.turnOpen && d.turnBusy && !d.markers && d.st == nil {
		// A rollout without turn markers: a prompt after work starts a turn.
		d.endTurn(core.TurnEndReason{Kind: core.TurnCompleted}, false)
	}
	if d.st == nil {
		d.openTurn()
	}
	d.add(pendingEvent{typ: core.EventUserMessage, time: d.now, surface: true, data: core.NewUserMessage(id, text)})
	return true, nil
}

// scaffolding returns the context form of a message Codex wrote for the
// model rather than a person typed ("" for a prompt): the environment and
// instruction blocks, and developer or system messages.
func scaffolding(role, text string) string {
	t := strings.TrimSpace(text)
	switch {
	case role == "developer" || role == core.RoleSystem:
		return "instructions"
	case strings.HasPrefix(t, "<environment_context>"):
		return "snapshot"
	case strings.HasPrefix(t, "<user_instructions>"), strings.HasPrefix(t, "<INSTRUCTIONS>"),
		strings.HasPrefix(t, "# AGENTS.md instructions"), strings.HasPrefix(t, "<developer_instructions>"):
		return "instructions"
	case strings.HasPrefix(t, "<user_shell_command>"), strings.HasPrefix(t, "<turn_aborted>"):
		return "notice"
	}
	return ""
}

// reasoning maps a response_item reasoning: its summary texts and reasoning
// text become reasoning blocks.
func (d *Decoder) reasoning(p json.RawMessage) (bool, error) {
	var r struct {
		Summary []struct {
			Text string `json:"text"`
		} `json:"summary"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(p, &r); err != nil {
		return false, err
	}
	st := d.modelStep()
	for _, s := range r.Summary {
		if s.Text != "" {
			st.blocks = append(st.blocks, &core.ReasoningBlock{Text: s.Text})
		}
	}
	for _, s := range r.Content {
		if s.Text != "" {
			st.blocks = append(st.blocks, &core.ReasoningBlock{Text: s.Text})
		}
	}
	return true, nil
}

// eventMsg maps the event_msg payloads prism reads.
func (d *Decoder) eventMsg(p json.RawMessage) (bool, error) {
	var ev struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(p, &ev); err != nil {
		return false, err
	}
	switch ev.Type {
	case "task_started":
		d.markers = true
		if d.turnOpen && d.turnBusy {
			d.endTurn(core.TurnEndReason{Kind: core.TurnInterrupted}, false)
		}
		d.openTurn()
		return true, nil
	case "task_complete":
		var tc struct {
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(p, &tc); err != nil {
			return false, err
		}
		d.openTurn() // a turn without a start still ends
		reason := core.TurnEndReason{Kind: core.TurnCompleted}
		if tc.Error != nil {
			reason = core.TurnEndReason{Kind: core.TurnError, Error: &core.LLMFailure{Message: tc.Error.Message, Code: "CODEX_TASK_ERROR"}}
		}
		d.endTurn(reason, false)
		return true, nil
	case "turn_aborted":
		var ta struct {
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(p, &ta); err != nil {
			return false, err
		}
		d.openTurn()
		d.endTurn(core.TurnEndReason{Kind: core.TurnAborted, Reason: &core.CancelCause{Kind: "user", Reason: ta.Reason}}, true)
		return true, nil
	case "token_count":
		var tc struct {
			Info *struct {
				Last *usageWire `json:"last_token_usage"`
			} `json:"info"`
		}
		if err := json.Unmarshal(p, &tc); err != nil {
			return false, err
		}
		if tc.Info == nil || tc.Info.Last == nil || d.st == nil {
			return false, nil // no usage, or no step to carry it: kept raw
		}
		u := tc.Info.Last.usage()
		if d.st.usage != nil {
			u = d.st.usage.Add(u)
		}
		d.st.usage = &u
		return true, nil
	case "user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content":
		return true, nil // mirrors of response items
	}
	return false, nil
}

// usageWire is Codex's TokenUsage.
type usageWire struct {
	Input     int64 `json:"input_tokens"`
	Cached    int64 `json:"cached_input_tokens"`
	Output    int64 `json:"output_tokens"`
	Reasoning int64 `json:"reasoning_output_tokens"`
}

// usage converts Codex's counts to prism's: Codex's input includes the
// cached tokens, prism's inputTokens does not.
// Counts outside 0…2^53-1 are clamped, so the log stays lossless JSON.
func (u usageWire) usage() core.TokenUsage {
	cached := count(u.Cached)
	return core.TokenUsage{InputTokens: count(u.Input - cached), OutputTokens: count(u.Output),
		CacheReadTokens: cached, ReasoningTokens: count(u.Reasoning)}
}

// count clamps a token count to 0…2^53-1.
func count(n int64) int64 {
	return min(max(n, 0), 1<<53-1)
}

// IDFromFileName returns the session id in a rollout's file name
// (rollout-<YYYY-MM-DDThh-mm-ss>-<uuid>.jsonl, or .jsonl.zst), or "".
func IDFromFileName(name string) string {
	base := filepath.Base(name)
	base = strings.TrimSuffix(base, ".zst")
	base = strings.TrimSuffix(base, ".jsonl")
	if !strings.HasPrefix(base, "rollout-") || len(base) < 36 {
		return ""
	}
	id := base[len(base)-36:]
	for i, r := range id {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return ""
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return ""
			}
		}
	}
	return id
}

// Sniff reports whether line, the first non-blank line of a file, starts a
// Codex rollout: a session_meta line ({timestamp, type: "session_meta",
// payload: {id, …}}), or the earliest rollouts' flat header (an object with
// an id and a timestamp, and no type). Import and watch use it to detect a
// rollout by its content.
func Sniff(line []byte) bool {
	var env struct {
		Type      *string `json:"type"`
		Timestamp string  `json:"timestamp"`
		ID        string  `json:"id"`
		Payload   *struct {
			ID string `json:"id"`
		} `json:"payload"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &env) != nil {
		return false
	}
	if env.Type == nil {
		return env.ID != "" && env.Timestamp != ""
	}
	return *env.Type == "session_meta" && env.Payload != nil && env.Payload.ID != ""
}
