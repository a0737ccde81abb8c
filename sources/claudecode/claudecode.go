// Package claudecode decodes Claude Code transcripts — the JSONL files
// Claude Code writes under ~/.claude/projects/<project>/<sessionId>.jsonl —
// into prism's session header and events (dsh's vocabulary, core.Event).
//
// It is a pure decoder: lines in, events out, no files and no store. A
// Decoder is fed one line at a time (Line) and can be asked at any point
// for the events so far (Events); what it has emitted it never rewrites,
// so feeding more lines only appends. ReadLog wraps it for a whole file
// with sessionlog's limits, and Format hands that to sessionlog's import
// as a foreign format detected by content.
//
// The mapping:
//
//   - a real prompt (a user line whose content is text, not isMeta, not a
//     compact summary, not a command wrapper) closes the open turn and
//     starts the next: turn/start, step/start, user/message (source user);
//   - the assistant lines sharing one message.id are one step: one
//     assistant/message holding their blocks in file order (thinking →
//     reasoning, text → text, tool_use → tool-call) with the usage of the
//     group's last line, then one tool/call per tool_use {callId: id, name,
//     arguments: the JSON text of input}. A group is written when its last
//     line (stop_reason set) arrives, or when a line of another kind comes;
//   - a tool_result block of a user line → tool/result (isError from
//     is_error, a <tool_use_error> wrapper unwrapped), its meta the line's
//     toolUseResult when that is at most MaxMetaBytes of JSON (a marker
//     {truncated, bytes} otherwise: the content keeps the text);
//   - a group whose stop_reason is end_turn (or stop_sequence, refusal,
//     max_tokens) and that asked for no tool ends its turn, and so does a
//     system/turn_duration line when no call waits; a prompt that comes
//     while a turn is open ends it completed, a call still without its
//     result getting a TOOL_OUTCOME_UNKNOWN result first. The closers
//     reuse the last event's time, so a file cut at a turn's end decodes
//     to a prefix of the grown file's events (a cut inside one message.id
//     does not: that group is written at Flush);
//   - isMeta lines and command wrappers → user/message with a plugin source
//     (context: no turn, never the title); "[Request interrupted by user…]"
//     the same, after ending the open turn aborted {kind: user} (a call
//     still without its result gets a TOOL_OUTCOME_UNKNOWN result first);
//   - system/compact_boundary → compaction/start {compactionId, turn,
//     trigger?, preTokens?}; the following isCompactSummary user line →
//     compaction/summary {compactionId, summary} and compaction/end
//     {compactionId};
//   - title lines (custom-title, ai-title, an old summary line) →
//     session/title, when they outrank the title so far (a person's custom
//     title over the AI's over a summary's); Info.Title holds it too;
//   - every other line (the other types, system subtypes, sidechain
//     lines, lines without a type) → one log-only event source/raw
//     {source: "claude-code", line, record} written ignorable: true;
//   - a line that is not a JSON object (or holds a number a log cannot
//     carry) → source/raw {source, line, error, text}, ignorable, and a
//     LineError the caller reports; the rest decodes.
//
// The header is {id: the first sessionId, createdAt: the first timestamp,
// cwd: the first absolute cwd}; Info holds the CLI version and git branch
// for the caller to keep beside it. Presenters gives the cards of Claude
// Code's tools.
package claudecode

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"prism/core"
)

// Source is the value of source/raw's "source" field for this format.
const Source = "claude-code"

// EventSourceRaw is the type of the log-only event a line the decoder does
// not map becomes (written ignorable: true; the Codex decoder uses it too).
const EventSourceRaw = "source/raw"

// MaxMetaBytes caps a result's meta (a toolUseResult), as dsh caps
// presentation meta: a larger value is replaced by {truncated, bytes}.
const MaxMetaBytes = 64 << 10

// Provider is the provider named on assistant messages: Claude Code talks
// Anthropic's Messages API, whichever model serves it.
const Provider = "anthropic"

// Info is what a transcript says about where it came from, recorded beside
// the session header (dsh's header keys are fixed).
type Info struct {
	Kind      string // always "claude-code"
	Version   string // the CLI version of the first line that has one
	Cwd       string
	GitBranch string
	// Title is the title the transcript's title lines give (custom-title,
	// ai-title, an old summary line), "" when none did.
	Title string
}

// LineError is a line that could not be decoded; it is kept as a source/raw
// event and decoding goes on.
type LineError struct {
	Line   int
	Reason string
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// Decoder turns a transcript's lines into session events. The zero value is
// not ready; use NewDecoder.
type Decoder struct {
	header     core.SessionHeader
	haveHeader bool
	info       Info
	events     []core.Event
	lastTime   int64
	timed      bool  // a line with a timestamp has come (or Flush was called)
	firstTime  int64 // the first timestamp, epoch ms

	turn, step   int
	turnOpen     bool
	stepOpen     bool
	stepHasMsg   bool
	pending      map[string]int64 // call id → tool/call seq, open step
	pendingOrder []string         // the open step's call ids, in call order
	group        *group
	compaction   string // open compaction id
	titleRank    int    // the rank of info.Title's line (noteSource)
	sidechain    bool   // a subagent's transcript: its isSidechain lines are its own
}

// group is the assistant lines of one message.id not yet written.
type group struct {
	key    string
	model  string
	blocks core.Content
	calls  []*core.ToolCallBlock
	usage  *core.TokenUsage
	stop   string
	time   int64
}

// NewDecoder returns a decoder at the start of a transcript.
func NewDecoder() *Decoder {
	return &Decoder{pending: map[string]int64{}, info: Info{Kind: Source}}
}

// Header returns the session header and whether a line has given it (the
// session id is the first sessionId, createdAt the first timestamp of any
// line, cwd the first absolute cwd).
func (d *Decoder) Header() (core.SessionHeader, bool) { return d.header, d.haveHeader }

// Info returns what the transcript says of its source.
func (d *Decoder) Info() Info { return d.info }

// Events returns the events decoded so far. A group of assistant lines whose
// last line has not come yet is not among them until Flush, nor are the
// events of the first lines while none has had a timestamp (they take the
// first timestamp as their time).
func (d *Decoder) Events() []core.Event {
	if !d.timed {
		return nil
	}
	return d.events
}

// Flush writes the assistant group still waiting for its last line (the
// end of a file, or a pause in a live one) and releases events held for a
// timestamp. It closes nothing else: an open turn stays open.
func (d *Decoder) Flush() {
	d.flushGroup()
	d.timed = true
}

// envelope is the part of a record every line type shares.
type envelope struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	UUID             string          `json:"uuid"`
	SessionID        string          `json:"sessionId"`
	Timestamp        string          `json:"timestamp"`
	Cwd              string          `json:"cwd"`
	Version          string          `json:"version"`
	GitBranch        string          `json:"gitBranch"`
	CustomTitle      string          `json:"customTitle"`
	AITitle          string          `json:"aiTitle"`
	Title            string          `json:"title"`
	Summary          string          `json:"summary"`
	IsSidechain      bool            `json:"isSidechain"`
	IsMeta           bool            `json:"isMeta"`
	IsCompactSummary bool            `json:"isCompactSummary"`
	Message          json.RawMessage `json:"message"`
	ToolUseResult    json.RawMessage `json:"toolUseResult"`
	CompactMetadata  *struct {
		Trigger   string `json:"trigger"`
		PreTokens *int64 `json:"preTokens"`
	} `json:"compactMetadata"`
}

type message struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Model      string          `json:"model"`
	Content    json.RawMessage `json:"content"`
	StopReason *string         `json:"stop_reason"`
	Usage      *anthropicUsage `json:"usage"`
}

type anthropicUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// Line decodes one line (n is its 1-based number in the file). Blank lines
// are skipped. A line that does not decode is kept as source/raw and
// returned as a *LineError; the decoder stays usable.
func (d *Decoder) Line(n int, line []byte) error {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	var env envelope
	if line[0] != '{' {
		return d.malformed(n, line, "not a JSON object")
	}
	if err := json.Unmarshal(line, &env); err != nil {
		return d.malformed(n, line, fmt.Sprintf("not a JSON record: %v", err))
	}
	t, _ := d.timeOf(env.Timestamp)
	if d.noteSource(&env) {
		// A title line: the session's title (the list's and the
		// header's), as dsh's session/title.
		d.flushGroup()
		d.append(core.EventSessionTitle, t, core.SessionTitle{Title: d.info.Title}, false, nil)
		return nil
	}
	if env.IsSidechain && !d.sidechain {
		return d.raw(n, line, t)
	}
	switch env.Type {
	case "user":
		return d.user(n, line, &env, t)
	case "assistant":
		return d.assistant(n, line, &env, t)
	case "system":
		if env.Subtype == "compact_boundary" {
			d.compactBoundary(&env, t)
			return nil
		}
		if env.Subtype == "turn_duration" && d.turnOpen && d.group == nil && len(d.pending) == 0 {
			d.endTurn(t, core.TurnEndReason{Kind: core.TurnCompleted})
			return nil
		}
	}
	return d.raw(n, line, t)
}

// noteSource takes the header and source facts from the first lines that
// carry them. It reports whether the line is a title line that gave the
// session its title.
func (d *Decoder) noteSource(env *envelope) bool {
	if !d.haveHeader && env.SessionID != "" {
		d.header = core.SessionHeader{Version: core.SessionFormatVersion, ID: env.SessionID}
		if d.timed && d.firstTime >= 0 {
			d.header.CreatedAt = d.firstTime
		}
		d.haveHeader = true
	}
	if d.haveHeader && d.header.Cwd == "" && env.Cwd != "" && filepath.IsAbs(env.Cwd) {
		d.header.Cwd = env.Cwd
	}
	if d.info.Version == "" {
		d.info.Version = env.Version
	}
	if d.info.Cwd == "" {
		d.info.Cwd = env.Cwd
	}
	if d.info.GitBranch == "" {
		d.info.GitBranch = env.GitBranch
	}
	// Title lines: a person's custom title wins over the AI's, which wins
	// over an old summary line's; the latest of a rank wins.
	title, rank := "", 0
	switch env.Type {
	case "custom-title":
		title, rank = cmp.Or(env.CustomTitle, env.Title), 3
	case "ai-title":
		title, rank = cmp.Or(env.AITitle, env.Title), 2
	case "summary":
		title, rank = env.Summary, 1
	}
	if title = strings.TrimSpace(title); title != "" && rank >= d.titleRank {
		d.info.Title, d.titleRank = title, rank
		return true
	}
	return false
}

// timeOf parses an ISO timestamp to epoch ms; without one, the last time.
func (d *Decoder) timeOf(ts string) (int64, bool) {
	if ts != "" {
		if tm, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			ms := tm.UnixMilli()
			if ms > -maxSafe && ms < maxSafe {
				d.lastTime = ms
				if !d.timed {
					for i := range d.events {
						d.events[i].Time = ms // held back until now
					}
					d.timed, d.firstTime = true, ms
					if d.haveHeader && ms >= 0 {
						d.header.CreatedAt = ms
					}
				}
				return ms, true
			}
		}
	}
	return d.lastTime, false
}

const maxSafe = 1<<53 - 1

func (d *Decoder) user(n int, line []byte, env *envelope, t int64) error {
	var m message
	if len(env.Message) == 0 || json.Unmarshal(env.Message, &m) != nil {
		return d.raw(n, line, t)
	}
	id := env.UUID
	if id == "" {
		id = fmt.Sprintf("claude-code-line-%d", n)
	}
	text, blocks, isText := userContent(m.Content)
	if env.IsCompactSummary {
		d.compactSummary(id, text, t)
		return nil
	}
	if !isText {
		d.results(id, blocks, env.ToolUseResult, text, t)
		return nil
	}
	if strings.HasPrefix(text, "[Request interrupted by user") {
		// Esc in Claude Code: the turn ends aborted by the user; the
		// marker line is context, not a prompt.
		d.flushGroup()
		if d.turnOpen {
			d.endTurn(t, core.TurnEndReason{Kind: core.TurnAborted, Reason: &core.CancelCause{Kind: "user"}})
		}
		d.append(core.EventUserMessage, t, core.Message{ID: id, Role: core.RoleUser, Content: core.Text(text),
			Source: core.Source{Kind: core.SourcePlugin, Plugin: Source}}, true, nil)
		return nil
	}
	if env.IsMeta || isCommandWrapper(text) {
		d.flushGroup()
		d.append(core.EventUserMessage, t, core.Message{ID: id, Role: core.RoleUser, Content: core.Text(text),
			Source: core.Source{Kind: core.SourcePlugin, Plugin: Source}}, true, nil)
		return nil
	}
	d.flushGroup()
	d.closeCompaction(t)
	if d.turnOpen {
		d.endTurn(d.lastEventTime(), core.TurnEndReason{Kind: core.TurnCompleted})
	}
	d.startTurn(t)
	d.openStep(t)
	d.append(core.EventUserMessage, t, core.NewUserMessage(id, text), true, nil)
	return nil
}

// userContent reads a user message's content: a string, or blocks. isText
// says it is a prompt (no tool_result block); text joins its text blocks.
func userContent(raw json.RawMessage) (text string, blocks []block, isText bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil, true
	}
	_ = json.Unmarshal(raw, &blocks)
	isText = true
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "tool_result":
			isText = false
		case "text":
			parts = append(parts, b.Text)
		case "image", "document":
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n"), blocks, isText
}

// isCommandWrapper reports a line Claude Code writes around a slash command
// or its local output, which is no prompt.
func isCommandWrapper(text string) bool {
	t := strings.TrimSpace(text)
	for _, p := range []string{"<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// results writes one tool/result per tool_result block; other text of the
// line becomes a context message.
func (d *Decoder) results(id string, blocks []block, toolUseResult json.RawMessage, text string, t int64) {
	d.flushGroup()
	if !d.turnOpen {
		d.startTurn(t)
	}
	if !d.stepOpen {
		d.openStep(t)
	}
	meta := capMeta(toolUseResult)
	nres := 0
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		nres++
		callID := b.ToolUseID
		if callID == "" {
			callID = "unknown"
		}
		content := resultContent(b.Content)
		msgID := id
		if nres > 1 {
			msgID = fmt.Sprintf("%s#%d", id, nres)
		}
		data := core.ToolResultData{Turn: d.turn, Step: d.step,
			Message: core.NewToolResultMessage(msgID, callID, content, b.IsError)}
		if nres == 1 {
			data.Meta = meta // toolUseResult belongs to the line's (first) result
		}
		var src []int64
		if seq, ok := d.pending[callID]; ok {
			src = []int64{seq}
			delete(d.pending, callID)
		}
		d.append(core.EventToolResult, t, data, true, src)
	}
	if text != "" {
		d.append(core.EventUserMessage, t, core.Message{ID: id + "#text", Role: core.RoleUser, Content: core.Text(text),
			Source: core.Source{Kind: core.SourcePlugin, Plugin: Source}}, true, nil)
	}
}

// resultContent reads a tool_result's content (a string or blocks) into
// text blocks, unwrapping <tool_use_error>.
func resultContent(raw json.RawMessage) core.Content {
	var s string
	if len(raw) == 0 || string(raw) == "null" {
		return core.Content{}
	}
	if json.Unmarshal(raw, &s) == nil {
		return core.Text(unwrapError(s))
	}
	var bs []json.RawMessage
	if json.Unmarshal(raw, &bs) != nil {
		return core.Text(string(raw))
	}
	out := core.Content{}
	for _, r := range bs {
		var b block
		_ = json.Unmarshal(r, &b)
		switch b.Type {
		case "text":
			out = append(out, &core.TextBlock{Text: unwrapError(b.Text)})
		case "image":
			out = append(out, &core.TextBlock{Text: "[image]"})
		default:
			out = append(out, &core.TextBlock{Text: string(r)})
		}
	}
	return out
}

func unwrapError(s string) string {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "<tool_use_error>") && strings.HasSuffix(t, "</tool_use_error>") {
		return strings.TrimSuffix(strings.TrimPrefix(t, "<tool_use_error>"), "</tool_use_error>")
	}
	return s
}

// capMeta returns toolUseResult as meta: compact JSON of at most
// MaxMetaBytes, else {truncated: true, bytes: n}; none when it is not
// lossless JSON.
func capMeta(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return nil
	}
	if buf.Len() > MaxMetaBytes {
		return json.RawMessage(fmt.Sprintf(`{"truncated":true,"bytes":%d}`, buf.Len()))
	}
	if core.CheckJSON(buf.Bytes()) != nil {
		return nil // -0 or 1e400: no meta rather than a lossy one
	}
	return buf.Bytes()
}

func (d *Decoder) assistant(n int, line []byte, env *envelope, t int64) error {
	var m message
	if len(env.Message) == 0 || json.Unmarshal(env.Message, &m) != nil {
		return d.raw(n, line, t)
	}
	key := m.ID
	if key == "" {
		key = env.UUID
	}
	if key == "" {
		key = fmt.Sprintf("claude-code-line-%d", n)
	}
	if d.group != nil && d.group.key != key {
		d.flushGroup()
	}
	if d.group == nil {
		d.closeCompaction(t)
		if !d.turnOpen {
			d.startTurn(t)
		}
		if d.stepOpen && d.stepHasMsg {
			d.closeStep(d.lastEventTime())
		}
		if !d.stepOpen {
			d.openStep(t)
		}
		d.group = &group{key: key, time: t}
	}
	g := d.group
	if m.Model != "" {
		g.model = m.Model
	}
	var blocks []json.RawMessage
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		g.blocks = append(g.blocks, &core.TextBlock{Text: s})
	} else {
		_ = json.Unmarshal(m.Content, &blocks)
	}
	for _, r := range blocks {
		var b block
		if json.Unmarshal(r, &b) != nil {
			continue
		}
		switch b.Type {
		case "text":
			g.blocks = append(g.blocks, &core.TextBlock{Text: b.Text})
		case "thinking":
			g.blocks = append(g.blocks, &core.ReasoningBlock{Text: b.Thinking})
		case "redacted_thinking":
			g.blocks = append(g.blocks, &core.ReasoningBlock{Text: "[redacted thinking]"})
		case "tool_use", "server_tool_use":
			args := "{}"
			if len(b.Input) > 0 {
				var buf bytes.Buffer
				if json.Compact(&buf, b.Input) == nil {
					args = buf.String()
				}
			}
			id := b.ID
			if id == "" {
				id = fmt.Sprintf("%s-call-%d", key, len(g.calls)+1)
			}
			c := &core.ToolCallBlock{ID: id, Name: b.Name, Arguments: args}
			if c.Name == "" {
				c.Name = "unknown"
			}
			g.blocks = append(g.blocks, c)
			g.calls = append(g.calls, c)
		}
	}
	if m.Usage != nil {
		g.usage = &core.TokenUsage{InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens,
			CacheReadTokens: m.Usage.CacheReadInputTokens, CacheWriteTokens: m.Usage.CacheCreationInputTokens}
	}
	if m.StopReason != nil && *m.StopReason != "" {
		g.stop = *m.StopReason
		d.flushGroup()
	}
	return nil
}

// flushGroup writes the waiting assistant group: its message, its calls,
// and the end of its turn when it ended the turn.
func (d *Decoder) flushGroup() {
	g := d.group
	if g == nil {
		return
	}
	d.group = nil
	model := g.model
	if model == "" {
		model = "unknown"
	}
	content := g.blocks
	if content == nil {
		content = core.Content{}
	}
	msg := core.AssistantMessage{Turn: d.turn, Step: d.step, Usage: g.usage,
		Message: core.Message{ID: g.key, Role: core.RoleAssistant, Content: content,
			Source: core.Source{Kind: core.SourceModel, Provider: Provider, Model: model}}}
	d.append(core.EventAssistantMessage, g.time, msg, true, []int64{})
	d.stepHasMsg = true
	for _, c := range g.calls {
		seq := d.append(core.EventToolCall, g.time, core.ToolCall{Turn: d.turn, Step: d.step, CallID: c.ID, Name: c.Name, Arguments: c.Arguments}, false, nil)
		if _, dup := d.pending[c.ID]; !dup {
			d.pendingOrder = append(d.pendingOrder, c.ID)
		}
		d.pending[c.ID] = seq
	}
	if len(g.calls) == 0 {
		switch g.stop {
		case "end_turn", "stop_sequence", "refusal":
			d.endTurn(g.time, core.TurnEndReason{Kind: core.TurnCompleted})
		case "max_tokens":
			d.endTurn(g.time, core.TurnEndReason{Kind: core.TurnMaxTokens})
		}
	}
}

func (d *Decoder) compactBoundary(env *envelope, t int64) {
	d.flushGroup()
	d.closeCompaction(t)
	id := env.UUID
	if id == "" {
		id = fmt.Sprintf("compaction-%d", len(d.events))
	}
	data := map[string]any{"compactionId": id, "turn": nil}
	if d.turnOpen {
		data["turn"] = d.turn
	}
	if m := env.CompactMetadata; m != nil {
		if m.Trigger != "" {
			data["trigger"] = m.Trigger
		}
		if m.PreTokens != nil {
			data["preTokens"] = *m.PreTokens
		}
	}
	d.append("compaction/start", t, data, false, nil)
	d.compaction = id
}

func (d *Decoder) compactSummary(id, text string, t int64) {
	d.flushGroup()
	cid := d.compaction
	if cid == "" {
		cid = id
		d.append("compaction/start", t, map[string]any{"compactionId": cid, "turn": nil}, false, nil)
	}
	d.append("compaction/summary", t, map[string]any{"compactionId": cid, "summary": text}, false, nil)
	d.append("compaction/end", t, map[string]any{"compactionId": cid}, false, nil)
	d.compaction = ""
}

// closeCompaction ends a compaction whose summary never came.
func (d *Decoder) closeCompaction(t int64) {
	if d.compaction == "" {
		return
	}
	d.append("compaction/end", t, map[string]any{"compactionId": d.compaction}, false, nil)
	d.compaction = ""
}

func (d *Decoder) startTurn(t int64) {
	d.turn++
	d.step = 0
	d.turnOpen = true
	d.append(core.EventTurnStart, t, core.TurnStart{Turn: d.turn}, false, nil)
}

func (d *Decoder) openStep(t int64) {
	d.step++
	d.stepOpen, d.stepHasMsg = true, false
	d.append(core.EventStepStart, t, core.StepBoundary{Turn: d.turn, Step: d.step}, false, nil)
}

// closeStep ends the open step; a call still without a result gets a
// synthetic error result first (the transcript never answered it).
func (d *Decoder) closeStep(t int64) {
	if !d.stepOpen {
		return
	}
	for _, id := range d.pendingOrder {
		seq, ok := d.pending[id]
		if !ok {
			continue
		}
		data := core.ToolResultData{Turn: d.turn, Step: d.step,
			Message: core.NewToolResultMessage(fmt.Sprintf("unanswered-tool-result-%s-%d", id, seq), id,
				core.Text("The transcript has no result for this call."), true),
			Error: &core.ErrorInfo{Name: "ToolOutcomeUnknown", Code: "TOOL_OUTCOME_UNKNOWN"}}
		d.append(core.EventToolResult, t, data, true, []int64{seq})
		delete(d.pending, id)
	}
	clear(d.pending)
	d.pendingOrder = d.pendingOrder[:0]
	d.append(core.EventStepEnd, t, core.StepBoundary{Turn: d.turn, Step: d.step}, false, nil)
	d.stepOpen, d.stepHasMsg = false, false
}

func (d *Decoder) endTurn(t int64, r core.TurnEndReason) {
	if !d.turnOpen {
		return
	}
	d.closeStep(t)
	d.append(core.EventTurnEnd, t, core.TurnEnd{Turn: d.turn, Reason: r}, false, nil)
	d.turnOpen = false
}

// lastEventTime is the time of the last event written (closers reuse it,
// as crash repair does, so that a turn closed by the next prompt and one
// closed at the end of a shorter file are the same events).
func (d *Decoder) lastEventTime() int64 {
	if len(d.events) == 0 {
		return d.lastTime
	}
	return d.events[len(d.events)-1].Time
}

// raw keeps a line as one log-only event (as text, reported, when it is
// JSON that a log cannot hold losslessly: -0, 1e400).
func (d *Decoder) raw(n int, line []byte, t int64) error {
	if err := core.CheckJSON(line); err != nil {
		return d.malformed(n, line, fmt.Sprintf("not lossless JSON: %v", err))
	}
	d.flushGroup()
	var buf bytes.Buffer
	buf.WriteString(`{"source":"` + Source + `","line":`)
	fmt.Fprintf(&buf, "%d", n)
	buf.WriteString(`,"record":`)
	if err := json.Compact(&buf, line); err != nil {
		return d.malformed(n, line, err.Error()) // unreachable: the line was checked
	}
	buf.WriteByte('}')
	d.appendRaw(EventSourceRaw, t, buf.Bytes(), true)
	return nil
}

func (d *Decoder) malformed(n int, line []byte, reason string) error {
	data, err := core.MarshalNoEscape(map[string]any{"source": Source, "line": n, "error": reason, "text": strings.ToValidUTF8(string(line), "\uFFFD")})
	if err == nil {
		d.flushGroup()
		d.appendRaw(EventSourceRaw, d.lastTime, data, true)
	}
	return &LineError{Line: n, Reason: reason}
}

// append encodes data and appends the event; it returns its seq.
func (d *Decoder) append(typ string, t int64, data any, surface bool, src []int64) int64 {
	raw, err := core.MarshalNoEscape(data)
	if err != nil {
		panic(fmt.Sprintf("claudecode: encode %s: %v", typ, err)) // our own types always encode
	}
	seq := d.appendRaw(typ, t, raw, false)
	e := &d.events[len(d.events)-1]
	if surface {
		e.SurfaceOp = core.AppendOp()
		e.SourceEventSeqs = src
	}
	return seq
}

func (d *Decoder) appendRaw(typ string, t int64, data []byte, ignorable bool) int64 {
	seq := int64(len(d.events))
	d.events = append(d.events, core.Event{Type: typ, Seq: seq, Time: t, Data: data, Ignorable: ignorable})
	return seq
}
