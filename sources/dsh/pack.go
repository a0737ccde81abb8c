package dsh

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"prism/core"
)

// minRun is dsh's MIN_RUN: the fewest delta chunks that pack into a row.
const minRun = 3

// member is an assistant/chunk event whose exact shape packs.
type member struct {
	e          core.Event
	kind       string // text-delta | reasoning-delta | tool-call-delta
	turn, step json.RawMessage
	index      json.RawMessage
	id, name   json.RawMessage // tool-call-delta only; name may be nil
	payload    json.RawMessage // text or argumentsDelta, a JSON string
	hasName    bool
}

// classify is dsh's classify: only exactly whitelisted delta chunks pack.
func classify(e core.Event) (member, bool) {
	var m member
	if e.Type != core.EventAssistantChunk || e.Ignorable || e.SurfaceOp != nil || e.SourceEventSeqs != nil {
		return m, false
	}
	var data map[string]json.RawMessage
	if json.Unmarshal(e.Data, &data) != nil || !exactKeys(data, "turn", "step", "chunk") {
		return m, false
	}
	if !isNumber(data["turn"]) || !isNumber(data["step"]) {
		return m, false
	}
	var chunk map[string]json.RawMessage
	if json.Unmarshal(data["chunk"], &chunk) != nil || !isNumber(chunk["index"]) {
		return m, false
	}
	var kind string
	if json.Unmarshal(chunk["type"], &kind) != nil {
		return m, false
	}
	m = member{e: e, kind: kind, turn: data["turn"], step: data["step"], index: chunk["index"]}
	isStr := func(r json.RawMessage) bool { return len(r) > 0 && r[0] == '"' }
	switch kind {
	case core.ChunkTextDelta, core.ChunkReasoningDelta:
		if !exactKeys(chunk, "type", "index", "text") || !isStr(chunk["text"]) {
			return m, false
		}
		m.payload = chunk["text"]
	case core.ChunkToolCallDelta:
		m.hasName = exactKeys(chunk, "type", "index", "id", "name", "argumentsDelta")
		if !m.hasName && !exactKeys(chunk, "type", "index", "id", "argumentsDelta") {
			return m, false
		}
		if !isStr(chunk["id"]) || !isStr(chunk["argumentsDelta"]) || m.hasName && !isStr(chunk["name"]) {
			return m, false
		}
		m.id, m.name, m.payload = chunk["id"], chunk["name"], chunk["argumentsDelta"]
	default:
		return m, false
	}
	return m, true
}

func continues(prev, next member) bool {
	if next.e.Seq != prev.e.Seq+1 || next.kind != prev.kind {
		return false
	}
	gap := next.e.Time - prev.e.Time
	if gap > maxSafeInteger || gap < -maxSafeInteger {
		return false
	}
	if !bytes.Equal(next.turn, prev.turn) || !bytes.Equal(next.step, prev.step) || !bytes.Equal(next.index, prev.index) {
		return false
	}
	if next.kind != core.ChunkToolCallDelta {
		return true
	}
	return bytes.Equal(next.id, prev.id) && next.hasName == prev.hasName && bytes.Equal(next.name, prev.name)
}

func appendRow(dst []byte, run []member) []byte {
	first := run[0]
	tag := RowTextChunks
	switch first.kind {
	case core.ChunkReasoningDelta:
		tag = RowReasoningChunks
	case core.ChunkToolCallDelta:
		tag = RowToolCallChunks
	}
	dst = append(dst, `{"type":"`+tag+`","seq0":`...)
	dst = strconv.AppendInt(dst, first.e.Seq, 10)
	dst = append(dst, `,"time0":`...)
	dst = strconv.AppendInt(dst, first.e.Time, 10)
	dst = append(dst, `,"data":{"turn":`...)
	dst = append(dst, first.turn...)
	dst = append(dst, `,"step":`...)
	dst = append(dst, first.step...)
	dst = append(dst, `,"index":`...)
	dst = append(dst, first.index...)
	dst = append(dst, `,"dt":[`...)
	for i := 1; i < len(run); i++ {
		if i > 1 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, run[i].e.Time-run[i-1].e.Time, 10)
	}
	dst = append(dst, ']')
	key := `,"texts":[`
	if tag == RowToolCallChunks {
		dst = append(dst, `,"id":`...)
		dst = append(dst, first.id...)
		if first.hasName {
			dst = append(dst, `,"name":`...)
			dst = append(dst, first.name...)
		}
		key = `,"args":[`
	}
	dst = append(dst, key...)
	for i, m := range run {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, m.payload...)
	}
	return append(dst, "]}}"...)
}

// AppendDshLines appends events as dsh writes one batch with packChunks on:
// every run of three or more consecutive same-block delta chunks becomes one
// packed row, every other event one line. Each line ends with '\n'. prism
// never writes dsh's files; this encoder exists for fixtures and tests.
func AppendDshLines(dst []byte, events []core.Event) ([]byte, error) {
	var run []member
	flush := func() error {
		if len(run) >= minRun {
			dst = appendRow(dst, run)
			dst = append(dst, '\n')
		} else {
			for _, m := range run {
				var err error
				if dst, err = AppendEvent(dst, m.e); err != nil {
					return err
				}
				dst = append(dst, '\n')
			}
		}
		run = run[:0]
		return nil
	}
	for _, e := range events {
		m, ok := classify(e)
		if !ok {
			if err := flush(); err != nil {
				return dst, err
			}
			var err error
			if dst, err = AppendEvent(dst, e); err != nil {
				return dst, fmt.Errorf("event %d: %w", e.Seq, err)
			}
			dst = append(dst, '\n')
			continue
		}
		if len(run) > 0 && !continues(run[len(run)-1], m) {
			if err := flush(); err != nil {
				return dst, err
			}
		}
		run = append(run, m)
	}
	return dst, flush()
}
