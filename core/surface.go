package core

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// surface is the ordered list of seqs whose events make up the model
// transcript (dsh's SurfaceManager state). An append pushes the event's seq;
// a replace splices a contiguous range out and puts the replacing seq in its
// place. nodes is copy-on-write for replacements, so a reader holding an old
// slice header never sees it change.
type surface struct {
	nodes []int64
	gen   int // replaceGeneration: +1 per replacement
}

// surfacePlan is a validated transition that has not touched the state yet.
type surfacePlan struct {
	replace          bool
	seq              int64
	startIdx, endIdx int
}

// logView is a log seen as a committed part followed by a batch being
// appended, so a batch is planned without copying the log.
type logView struct{ head, tail []Event }

func (l logView) len() int64 { return int64(len(l.head) + len(l.tail)) }

// at returns the event with seq (0 ≤ seq < len()).
func (l logView) at(seq int64) *Event {
	if seq < int64(len(l.head)) {
		return &l.head[seq]
	}
	return &l.tail[seq-int64(len(l.head))]
}

// plan validates ev as the next event of log (dsh's planSurfaceEvent). It
// returns nil for an event that does not join the surface. The returned
// error's text is dsh's.
func (s *surface) plan(ev *Event, log logView) (*surfacePlan, error) {
	if ev.Seq != log.len() {
		return nil, fmt.Errorf("session event seq %d is not contiguous; expected %d", ev.Seq, log.len())
	}
	if !IsSurfaceType(ev.Type) {
		if ev.SurfaceOp != nil {
			return nil, fmt.Errorf("session event %q is not surface-eligible and cannot carry surfaceOp", ev.Type)
		}
		if ev.SourceEventSeqs != nil {
			return nil, fmt.Errorf("session event %q is not surface-eligible and cannot carry sourceEventSeqs", ev.Type)
		}
		return nil, nil
	}
	op := ev.SurfaceOp
	if op == nil {
		return nil, fmt.Errorf("session event %q is surface-eligible and requires a surfaceOp marker", ev.Type)
	}
	if !op.Replace {
		if err := checkProvenance(ev, nil); err != nil {
			return nil, err
		}
		return &surfacePlan{seq: ev.Seq}, nil
	}
	if !isEventSeq(op.Start) || !isEventSeq(op.End) {
		return nil, fmt.Errorf("session event %q carries an invalid replace surfaceOp", ev.Type)
	}
	startIdx := indexOfSeq(s.nodes, op.Start)
	if startIdx < 0 {
		return nil, fmt.Errorf("surface replace: start seq %d not found in surface", op.Start)
	}
	endIdx := indexOfSeq(s.nodes, op.End)
	if endIdx < 0 {
		return nil, fmt.Errorf("surface replace: end seq %d not found in surface", op.End)
	}
	if startIdx > endIdx {
		return nil, fmt.Errorf("surface replace: start seq %d (index %d) is after end seq %d (index %d)",
			op.Start, startIdx, op.End, endIdx)
	}
	shadowed := s.nodes[startIdx : endIdx+1]
	if err := checkProvenance(ev, shadowed); err != nil {
		return nil, err
	}
	if err := checkToolResultRewrite(ev, shadowed, log); err != nil {
		return nil, err
	}
	return &surfacePlan{replace: true, seq: ev.Seq, startIdx: startIdx, endIdx: endIdx}, nil
}

// apply commits a plan returned by plan (a nil plan is a no-op).
func (s *surface) apply(p *surfacePlan) {
	switch {
	case p == nil:
	case !p.replace:
		s.nodes = append(s.nodes, p.seq)
	default:
		nodes := make([]int64, 0, len(s.nodes)-(p.endIdx-p.startIdx))
		nodes = append(nodes, s.nodes[:p.startIdx]...)
		nodes = append(nodes, p.seq)
		nodes = append(nodes, s.nodes[p.endIdx+1:]...)
		s.nodes = nodes
		s.gen++
	}
}

func indexOfSeq(nodes []int64, seq int64) int {
	for i, n := range nodes {
		if n == seq {
			return i
		}
	}
	return -1
}

// isEventSeq reports whether n is a non-negative safe integer.
func isEventSeq(n int64) bool { return n >= 0 && n <= maxSafeInteger }

// checkProvenance validates sourceEventSeqs against earlier log entries and
// the shadowed replacement range (dsh's assertProvenance).
func checkProvenance(ev *Event, shadowed []int64) error {
	sources := make(map[int64]bool, len(ev.SourceEventSeqs))
	if raw := ev.SourceEventSeqs; raw != nil {
		if len(raw) == 0 && ev.Type != EventAssistantMessage {
			return fmt.Errorf("sourceEventSeqs must not be empty except on assistant/message")
		}
		nonEarlier := int64(-1)
		for _, src := range raw {
			if !isEventSeq(src) {
				return fmt.Errorf("session event %q sourceEventSeqs must densely contain non-negative safe integers", ev.Type)
			}
			sources[src] = true
			if nonEarlier < 0 && src >= ev.Seq {
				nonEarlier = src
			}
		}
		if len(sources) != len(raw) {
			return fmt.Errorf("sourceEventSeqs must not contain duplicates")
		}
		if nonEarlier >= 0 {
			return fmt.Errorf("sourceEventSeqs must reference earlier events: %d >= current seq %d", nonEarlier, ev.Seq)
		}
	}
	var missing []string
	for _, seq := range shadowed {
		if !sources[seq] {
			missing = append(missing, strconv.FormatInt(seq, 10))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("surface replace: sourceEventSeqs must include every shadowed surface node; missing %s",
			strings.Join(missing, ", "))
	}
	return nil
}

// checkToolResultRewrite restricts a tool/result replacement to one current
// tool/result, changing only message.content[0].content (dsh's
// assertToolResultRewrite).
func checkToolResultRewrite(ev *Event, shadowed []int64, log logView) error {
	if ev.Type != EventToolResult {
		return nil
	}
	if len(shadowed) != 1 {
		return fmt.Errorf("tool/result surface replacement must rewrite exactly one current node")
	}
	seq := shadowed[0]
	if seq < 0 || seq >= log.len() || log.at(seq).Type != EventToolResult {
		return fmt.Errorf("tool/result surface replacement must target a current tool/result")
	}
	orig, ok1 := withoutResultContent(log.at(seq).Data)
	repl, ok2 := withoutResultContent(ev.Data)
	if !ok1 || !ok2 || !reflect.DeepEqual(orig, repl) {
		return fmt.Errorf("tool/result surface replacement may change only content")
	}
	return nil
}

// withoutResultContent decodes tool/result data and blanks
// message.content[0].content, keeping only the first block as dsh does, so
// two results compare equal exactly when they differ only there. Numbers
// decode to float64, which is JavaScript's equality.
func withoutResultContent(data json.RawMessage) (map[string]any, bool) {
	var rest map[string]any
	if err := json.Unmarshal(data, &rest); err != nil || rest == nil {
		return nil, false
	}
	msg, ok := rest["message"].(map[string]any)
	if !ok {
		return nil, false
	}
	content, ok := msg["content"].([]any)
	if !ok {
		return nil, false
	}
	block := map[string]any{}
	if len(content) > 0 {
		first, ok := content[0].(map[string]any)
		if !ok {
			return nil, false
		}
		for k, v := range first {
			block[k] = v
		}
	}
	block["content"] = nil
	msg["content"] = []any{block}
	return rest, true
}

// foldSurface replays events through the surface transition, skipping (not
// failing on) an event that violates it: the lenient fold behind
// DeriveMessages over a loaded log.
func foldSurface(events []Event) surface {
	var s surface
	for i := range events {
		if p, err := s.plan(&events[i], logView{head: events[:i]}); err == nil {
			s.apply(p)
		}
	}
	return s
}

// deriveEventMessage projects one surface event to the message it gives the
// model (dsh's deriveEventMessage): user/message gives its data,
// assistant/message its message unless the content is empty, tool/result its
// message; anything else, or data that does not decode, gives none.
func deriveEventMessage(ev *Event) (Message, bool) {
	switch ev.Type {
	case EventUserMessage:
		var m Message
		if json.Unmarshal(ev.Data, &m) != nil {
			return Message{}, false
		}
		return m, true
	case EventAssistantMessage, EventToolResult:
		var d struct {
			Message *Message `json:"message"`
		}
		if json.Unmarshal(ev.Data, &d) != nil || d.Message == nil {
			return Message{}, false
		}
		if ev.Type == EventAssistantMessage && len(d.Message.Content) == 0 {
			return Message{}, false
		}
		return *d.Message, true
	}
	return Message{}, false
}

// DeriveMessages returns the model transcript of a loaded log: each current
// surface node mapped through dsh's deriveEventMessage, in surface order.
// tool/call events never appear (calls reach the model as tool-call blocks
// of the assistant message), nor do a result's meta and error, nor an
// assistant message with empty content; a replacement's range is replaced by
// the replacing event. The log is assumed valid (see ValidateLog); an event
// that breaks the surface rules is left off the surface.
func DeriveMessages(events []Event) []Message {
	s := foldSurface(events)
	out := make([]Message, 0, len(s.nodes))
	for _, seq := range s.nodes {
		if m, ok := deriveEventMessage(&events[seq]); ok {
			out = append(out, m)
		}
	}
	return out
}

// HumanTranscript returns the append-origin surface events of a log, in log
// order: what a person saw. Replacements (compaction summaries, pruned tool
// results) are model-only and do not erase what was shown (dsh's
// isAppendSurfaceEvent).
func HumanTranscript(events []Event) []Event {
	var out []Event
	for i := range events {
		if IsSurfaceType(events[i].Type) && events[i].IsAppendOrigin() {
			out = append(out, events[i])
		}
	}
	return out
}
