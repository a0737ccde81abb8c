package redact

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"prism/core"
)

// Report says what a redaction pass found: how many hits of each kind and
// where. It is what a share form previews before the link is made.
type Report struct {
	Total int          `json:"total"`
	Kinds []KindReport `json:"kinds"`
}

// KindReport is the hits of one kind.
type KindReport struct {
	Kind  string `json:"kind"`
	Count int    `json:"count"`
	// CallIDs are the calls whose arguments, result, content or meta had
	// hits, in order of appearance.
	CallIDs []string `json:"callIds,omitempty"`
	// Seqs are the events outside any call that had hits (messages,
	// reasoning, request headers).
	Seqs []int64 `json:"seqs,omitempty"`
	// Header is set when the session header (its cwd) had hits.
	Header bool `json:"header,omitempty"`
}

// Walker redacts one session's events in order, keeping what later events
// depend on: the calls that touch a .env file, and whether a stream of
// chunks is open. It also accumulates the Report. Feed it the events from
// the start of the session (or from where an earlier Walker stopped); it is
// not safe for concurrent use.
type Walker struct {
	r        *Redactor
	envCalls map[string]bool
	openRun  bool // the last event seen was a chunk of a stream not yet finalized
	report   map[string]*kindAcc
}

type kindAcc struct {
	KindReport
	calls map[string]bool
	seqs  map[int64]bool
}

// Walker returns a walker for one session.
func (r *Redactor) Walker() *Walker {
	return &Walker{r: r, envCalls: map[string]bool{}, report: map[string]*kindAcc{}}
}

// Session redacts a whole session (header and events from seq 0) and
// reports what it found.
func (r *Redactor) Session(h core.SessionHeader, events []core.Event) (core.SessionHeader, []core.Event, Report) {
	w := r.Walker()
	h = w.Header(h)
	out := w.Events(events)
	return h, out, w.Report()
}

// Header returns h redacted, counting its hits.
func (w *Walker) Header(h core.SessionHeader) core.SessionHeader {
	h, kinds := w.r.Header(h)
	for _, k := range kinds {
		w.acc(k).Header = true
		w.count(k)
	}
	return h
}

// Events returns redacted copies of events, which continue what the walker
// has seen. Chunks of a stream that this batch finalizes (its
// assistant/message follows them in the batch, and the stream started in
// the batch) are redacted as one text; the text of chunks of a stream still
// open is withheld.
func (w *Walker) Events(events []core.Event) []core.Event {
	out := make([]core.Event, len(events))
	for i := 0; i < len(events); i++ {
		if events[i].Type != core.EventAssistantChunk {
			w.openRun = false
			out[i] = w.event(events[i])
			continue
		}
		j := i
		for j < len(events) && events[j].Type == core.EventAssistantChunk {
			j++
		}
		continued := i == 0 && w.openRun
		final := !continued && j < len(events) && events[j].Type == core.EventAssistantMessage
		w.chunks(events[i:j], out[i:j], final)
		w.openRun = !final && j == len(events)
		i = j - 1
	}
	return out
}

// Report returns what the walker has found so far, kinds in name order.
func (w *Walker) Report() Report {
	var rep Report
	for _, a := range w.report {
		rep.Total += a.Count
		k := a.KindReport
		k.CallIDs = slices.Clone(k.CallIDs)
		k.Seqs = slices.Clone(k.Seqs)
		rep.Kinds = append(rep.Kinds, k)
	}
	slices.SortFunc(rep.Kinds, func(a, b KindReport) int { return strings.Compare(a.Kind, b.Kind) })
	return rep
}

func (w *Walker) acc(kind string) *kindAcc {
	a := w.report[kind]
	if a == nil {
		a = &kindAcc{KindReport: KindReport{Kind: kind}, calls: map[string]bool{}, seqs: map[int64]bool{}}
		w.report[kind] = a
	}
	return a
}

func (w *Walker) count(kind string) { w.acc(kind).Count++ }

func (w *Walker) record(kinds []string, seq int64, callID string) {
	for _, k := range kinds {
		a := w.acc(k)
		a.Count++
		switch {
		case callID != "":
			if !a.calls[callID] {
				a.calls[callID] = true
				a.CallIDs = append(a.CallIDs, callID)
			}
		case !a.seqs[seq]:
			a.seqs[seq] = true
			a.Seqs = append(a.Seqs, seq)
		}
	}
}

// callRef is the part of an event's data that names its call: tool/call
// and approval events carry callId, tool/result message.source.callId.
type callRef struct {
	CallID    string `json:"callId"`
	Arguments string `json:"arguments"`
	Message   struct {
		Source struct {
			CallID string `json:"callId"`
		} `json:"source"`
	} `json:"message"`
}

func callOf(e *core.Event) (callRef, bool) {
	var c callRef
	if json.Unmarshal(e.Data, &c) != nil {
		return c, false
	}
	if c.CallID == "" {
		c.CallID = c.Message.Source.CallID
	}
	return c, c.CallID != ""
}

// belongsToCall reports whether events of typ may name a call.
func belongsToCall(typ string) bool {
	switch typ {
	case core.EventToolCall, core.EventToolResult, core.EventApprovalAsked, core.EventApprovalDecided,
		core.EventCodeDispatch, core.EventCodeDispatchOpen:
		return true
	}
	return false
}

func (w *Walker) event(e core.Event) core.Event {
	// The call an event belongs to is decoded only when needed: to learn
	// whether a tool/call touches a .env file, to apply that to its other
	// events, and to report where hits were.
	var call callRef
	known := false
	if belongsToCall(e.Type) && (e.Type == core.EventToolCall && bytes.Contains(e.Data, []byte("env")) || len(w.envCalls) > 0) {
		call, _ = callOf(&e)
		known = true
		if e.Type == core.EventToolCall && call.CallID != "" && touchesEnvFile(call.Arguments) {
			w.envCalls[call.CallID] = true
		}
	}
	d := &docWalk{r: w.r, envFile: call.CallID != "" && w.envCalls[call.CallID]}
	data, ok := d.document(e.Data, 0)
	if !ok { // not JSON: cannot come from a store, which validates data
		data = d.text(e.Data)
	}
	if len(d.kinds) > 0 {
		if !known && belongsToCall(e.Type) {
			call, _ = callOf(&e)
		}
		w.record(d.kinds, e.Seq, call.CallID)
	}
	e.Data = data
	return e
}

// touchesEnvFile reports whether a call's raw arguments name a .env file
// in any string (a path, a command).
func touchesEnvFile(args string) bool {
	if !strings.Contains(args, "env") {
		return false
	}
	var v any
	if json.Unmarshal([]byte(args), &v) != nil {
		return envFileRE.MatchString(args)
	}
	found := false
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			found = found || envFileRE.MatchString(x)
		case []any:
			for _, y := range x {
				walk(y)
			}
		case map[string]any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(v)
	return found
}

// chunkText is the streamed text of an assistant/chunk.
type chunkText struct {
	Chunk struct {
		Type  string  `json:"type"`
		Index *int    `json:"index"`
		Text  *string `json:"text"`
	} `json:"chunk"`
}

// chunks redacts a run of assistant/chunk events onto out. With final,
// each stream of the run (text or reasoning of one block index) is
// redacted as one text and the result cut back into the chunks: a marker
// goes where its hit starts, the rest of the hit is dropped. Otherwise the
// streamed text is withheld. Argument deltas are always withheld. Other
// strings of a chunk (a finished block, a failure) are redacted as usual.
// The hits are not reported: the run's assistant/message holds the same
// text and is counted.
func (w *Walker) chunks(run, out []core.Event, final bool) {
	type key struct {
		typ string
		idx int
	}
	texts := make([]*string, len(run)) // the replacement text of each chunk, if it has one
	if final {
		streams := map[key][]int{}
		var order []key
		for i := range run {
			var c chunkText
			if json.Unmarshal(run[i].Data, &c) != nil || c.Chunk.Text == nil {
				continue
			}
			if c.Chunk.Type != core.ChunkTextDelta && c.Chunk.Type != core.ChunkReasoningDelta {
				continue
			}
			k := key{c.Chunk.Type, 0}
			if c.Chunk.Index != nil {
				k.idx = *c.Chunk.Index
			}
			if _, ok := streams[k]; !ok {
				order = append(order, k)
			}
			streams[k] = append(streams[k], i)
			t := *c.Chunk.Text
			texts[i] = &t
		}
		for _, k := range order {
			idx := streams[k]
			pieces := make([]string, len(idx))
			for n, i := range idx {
				pieces[n] = *texts[i]
			}
			for n, p := range w.r.pieces(pieces) {
				*texts[idx[n]] = p
			}
		}
	}
	empty := ""
	for i := range run {
		text := texts[i]
		if !final {
			text = &empty
		}
		d := &docWalk{r: w.r, override: func(path []string) (string, bool) {
			if len(path) != 2 || path[0] != "chunk" {
				return "", false
			}
			switch path[1] {
			case "argumentsDelta":
				return "", true
			case "text":
				if text != nil {
					return *text, true
				}
				return "", true
			}
			return "", false
		}}
		e := run[i]
		data, ok := d.document(e.Data, 0)
		if !ok {
			data = d.text(e.Data)
		}
		e.Data = data
		out[i] = e
	}
}

// pieces redacts the concatenation of pieces and cuts the result back into
// as many pieces: each marker is put in the piece where its hit starts,
// the hit's other bytes dropped. A stream that reads as JSON is withheld
// whole (as a document its strings would be redacted differently).
func (r *Redactor) pieces(pieces []string) []string {
	all := strings.Join(pieces, "")
	out := make([]string, len(pieces))
	if looksLikeJSON(all) {
		return out
	}
	hits := r.Find(all)
	if len(hits) == 0 {
		return pieces
	}
	start := 0
	for n, p := range pieces {
		end := start + len(p)
		var b strings.Builder
		pos := start
		for _, h := range hits {
			if h.End <= start || h.Start >= end {
				continue
			}
			if h.Start >= pos {
				b.WriteString(all[pos:h.Start])
				b.WriteString(Marker(h.Kind))
			}
			pos = max(pos, min(h.End, end))
		}
		if pos < end {
			b.WriteString(all[pos:end])
		}
		out[n] = b.String()
		start = end
	}
	return out
}
