package dsh_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/sources/dsh"
)

var update = flag.Bool("update", false, "rewrite the committed fixtures under ../../testdata/dsh")

const fixtureDir = "../../testdata/dsh"

// Fixture session ids.
const (
	basicID   = "0b1c6d2e-5f4a-4e3b-9c8d-7a6b5c4d3e2f"
	crashedID = "7d0e1f2a-3b4c-4d5e-8f60-718293a4b5c6"
	parentID  = "5a9e2c41-6b7d-4f80-9a1b-2c3d4e5f6a7b"
	childID   = "c4f1b2a3-d5e6-4789-8abc-def012345678"
)

// logBuilder writes events with deterministic times.
type logBuilder struct {
	events []core.Event
	t      int64
}

func (b *logBuilder) add(typ string, data string, opts ...func(*core.Event)) int64 {
	b.t += 7
	e := core.Event{Type: typ, Seq: int64(len(b.events)), Time: b.t, Data: json.RawMessage(data)}
	if err := core.CheckJSON(e.Data); err != nil {
		panic(fmt.Sprintf("fixture event %d (%s): %v: %s", e.Seq, typ, err, data))
	}
	for _, o := range opts {
		o(&e)
	}
	b.events = append(b.events, e)
	return e.Seq
}

func appendOp(src ...int64) func(*core.Event) {
	return func(e *core.Event) {
		e.SurfaceOp = core.AppendOp()
		if src != nil {
			e.SourceEventSeqs = src
		}
	}
}

func jsonStr(s string) string { return string(must(core.MarshalNoEscape(s))) }

func chunk(turn, step int, c string) string {
	return fmt.Sprintf(`{"turn":%d,"step":%d,"chunk":%s}`, turn, step, c)
}

func userMessage(id, text string) string {
	return fmt.Sprintf(`{"id":%q,"role":"user","content":[{"type":"text","text":%s}],"source":{"kind":"user"}}`, id, jsonStr(text))
}

func toolResult(turn, step int, id, callID, text string, isError bool, meta string) string {
	s := fmt.Sprintf(`{"turn":%d,"step":%d,"message":{"id":%q,"role":"user","content":[{"type":"tool-result","toolCallId":%q,"content":[{"type":"text","text":%s}],"isError":%t}],"source":{"kind":"tool","callId":%q}}`,
		turn, step, id, callID, jsonStr(text), isError, callID)
	if meta != "" {
		s += `,"meta":` + meta
	}
	return s + "}"
}

// streamText adds block-start, one delta per part, block-end; it returns the
// seqs it added.
func (b *logBuilder) streamText(turn, step, index int, kind string, parts []string) []int64 {
	blockType := map[string]string{"text-delta": "text", "reasoning-delta": "reasoning"}[kind]
	seqs := []int64{b.add(core.EventAssistantChunk, chunk(turn, step, fmt.Sprintf(`{"type":"block-start","index":%d,"blockType":%q}`, index, blockType)))}
	for _, p := range parts {
		seqs = append(seqs, b.add(core.EventAssistantChunk, chunk(turn, step, fmt.Sprintf(`{"type":%q,"index":%d,"text":%s}`, kind, index, jsonStr(p)))))
	}
	full := strings.Join(parts, "")
	seqs = append(seqs, b.add(core.EventAssistantChunk, chunk(turn, step, fmt.Sprintf(`{"type":"block-end","index":%d,"block":{"type":%q,"text":%s}}`, index, blockType, jsonStr(full)))))
	return seqs
}

// basicLog is a completed two-step turn with a bash call, streamed text,
// reasoning and tool-call deltas (packed on disk), and a title.
func basicLog() (core.SessionHeader, []core.Event, [][2]int) {
	depth := int64(0)
	h := core.SessionHeader{Version: 0, ID: basicID, CreatedAt: 1764500000000, Cwd: "/home/alice/src/app", DelegationDepth: &depth}
	b := &logBuilder{t: h.CreatedAt}
	b.add(core.EventTurnStart, `{"turn":1}`)
	b.add(core.EventStepStart, `{"turn":1,"step":1}`)
	b.add(core.EventUserMessage, userMessage("11111111-1111-4111-8111-111111111111", "Count the lines of the Go files <here> & now."), appendOp())
	b.add(core.EventRequestContext, `{"provider":"deepseek","model":"deepseek-chat","contextWindow":65536}`)
	var src []int64
	src = append(src, b.streamText(1, 1, 0, "reasoning-delta", []string{"The user wants ", "line counts; ", "wc -l ", "will do."})...)
	b.events[6].Time = b.events[5].Time - 3 // the wall clock stepped back: a negative gap
	src = append(src, b.streamText(1, 1, 1, "text-delta", []string{"I'll ", "count them ", "with ", "`wc`", "."})...)
	src = append(src, b.add(core.EventAssistantChunk, chunk(1, 1, `{"type":"block-start","index":2,"blockType":"tool-call"}`)))
	src = append(src, b.add(core.EventAssistantChunk, chunk(1, 1, `{"type":"tool-call-delta","index":2,"id":"call_00_a","name":"bash","argumentsDelta":"{\"comm"}`)))
	for _, p := range []string{`and":"ls *.go`, ` | xargs`, ` wc -l"}`} {
		src = append(src, b.add(core.EventAssistantChunk, chunk(1, 1, fmt.Sprintf(`{"type":"tool-call-delta","index":2,"id":"call_00_a","argumentsDelta":%s}`, jsonStr(p)))))
	}
	args := `{"command":"ls *.go | xargs wc -l"}`
	src = append(src, b.add(core.EventAssistantChunk, chunk(1, 1, fmt.Sprintf(`{"type":"block-end","index":2,"block":{"type":"tool-call","id":"call_00_a","name":"bash","arguments":%s}}`, jsonStr(args)))))
	src = append(src, b.add(core.EventAssistantChunk, chunk(1, 1, `{"type":"usage","usage":{"inputTokens":812,"outputTokens":41}}`)))
	src = append(src, b.add(core.EventAssistantChunk, chunk(1, 1, `{"type":"finish","reason":"tool-calls"}`)))
	b.add(core.EventAssistantMessage, fmt.Sprintf(`{"turn":1,"step":1,"message":{"id":"22222222-2222-4222-8222-222222222222","role":"assistant","content":[{"type":"reasoning","text":"The user wants line counts; wc -l will do."},{"type":"text","text":"I'll count them with `+"`wc`"+`."},{"type":"tool-call","id":"call_00_a","name":"bash","arguments":%s}],"source":{"kind":"model","provider":"deepseek","model":"deepseek-chat"}},"usage":{"inputTokens":812,"outputTokens":41}}`, jsonStr(args)), appendOp(src...))
	call := b.add(core.EventToolCall, fmt.Sprintf(`{"turn":1,"step":1,"callId":"call_00_a","name":"bash","arguments":%s}`, jsonStr(args)))
	b.add(core.EventToolResult, toolResult(1, 1, "33333333-3333-4333-8333-333333333333", "call_00_a", "  120 main.go\n   80 db.go\n  200 total\n", false, `{"exitCode":0}`), appendOp(call))
	b.add(core.EventStepEnd, `{"turn":1,"step":1}`)
	b.add(core.EventStepStart, `{"turn":1,"step":2}`)
	src = b.streamText(1, 2, 0, "text-delta", []string{"There are ", "200 lines ", "in total."})
	b.add(core.EventAssistantMessage, `{"turn":1,"step":2,"message":{"id":"44444444-4444-4444-8444-444444444444","role":"assistant","content":[{"type":"text","text":"There are 200 lines in total."}],"source":{"kind":"model","provider":"deepseek","model":"deepseek-chat"}}}`, appendOp(src...))
	b.add(core.EventStepEnd, `{"turn":1,"step":2}`)
	b.add(core.EventTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`)
	b.add(core.EventSessionTitle, `{"title":"Count Go lines","messageSeqs":[2],"source":"llm"}`)
	// Append batches (one zstd frame each), as [from, to) seq ranges.
	batches := [][2]int{{0, 4}, {4, 29}, {29, 31}, {31, 34}, {34, len(b.events)}}
	return h, b.events, batches
}

func split(events []core.Event, batches [][2]int) [][]core.Event {
	out := make([][]core.Event, len(batches))
	for i, r := range batches {
		out[i] = events[r[0]:r[1]]
	}
	return out
}

// crashedLog is a turn cut short: the model asked for two calls, the first
// was logged as started, then the process died mid-write.
func crashedLog() (core.SessionHeader, []core.Event) {
	depth := int64(0)
	h := core.SessionHeader{ID: crashedID, CreatedAt: 1764500100000, Cwd: "/home/alice/src/app", DelegationDepth: &depth}
	b := &logBuilder{t: h.CreatedAt}
	b.add(core.EventTurnStart, `{"turn":1}`)
	b.add(core.EventStepStart, `{"turn":1,"step":1}`)
	b.add(core.EventUserMessage, userMessage("55555555-5555-4555-8555-555555555555", "Read go.mod, then run the tests."), appendOp())
	b.add(core.EventAssistantMessage, `{"turn":1,"step":1,"message":{"id":"66666666-6666-4666-8666-666666666666","role":"assistant","content":[{"type":"tool-call","id":"call_00_x","name":"read","arguments":"{\"path\":\"go.mod\"}"},{"type":"tool-call","id":"call_01_y","name":"bash","arguments":"{\"command\":\"go test ./...\"}"}],"source":{"kind":"model","provider":"deepseek","model":"deepseek-chat"}}}`, appendOp())
	b.add(core.EventToolCall, `{"turn":1,"step":1,"callId":"call_00_x","name":"read","arguments":"{\"path\":\"go.mod\"}"}`)
	return h, b.events
}

func familyLogs() (ph core.SessionHeader, pe []core.Event, ch core.SessionHeader, ce []core.Event) {
	zero, one := int64(0), int64(1)
	ph = core.SessionHeader{ID: parentID, CreatedAt: 1764500200000, Cwd: "/srv/work", DelegationDepth: &zero}
	b := &logBuilder{t: ph.CreatedAt}
	b.add(core.EventTurnStart, `{"turn":1}`)
	b.add(core.EventStepStart, `{"turn":1,"step":1}`)
	b.add(core.EventUserMessage, userMessage("77777777-7777-4777-8777-777777777777", "Ask a helper to summarise README.md"), appendOp())
	src := b.streamText(1, 1, 0, "text-delta", []string{"Delegating ", "to a ", "helper", "."})
	args := `{"description":"summarise README.md","prompt":"Summarise README.md in one line."}`
	b.add(core.EventAssistantMessage, fmt.Sprintf(`{"turn":1,"step":1,"message":{"id":"88888888-8888-4888-8888-888888888888","role":"assistant","content":[{"type":"text","text":"Delegating to a helper."},{"type":"tool-call","id":"call_00_s","name":"subagent","arguments":%s}],"source":{"kind":"model","provider":"deepseek","model":"deepseek-chat"}}}`, jsonStr(args)), appendOp(src...))
	call := b.add(core.EventToolCall, fmt.Sprintf(`{"turn":1,"step":1,"callId":"call_00_s","name":"subagent","arguments":%s}`, jsonStr(args)))
	b.add("x-vendor/note", `{"note":"an unknown but ignorable event"}`, func(e *core.Event) { e.Ignorable = true })
	b.add(core.EventToolResult, toolResult(1, 1, "99999999-9999-4999-8999-999999999999", "call_00_s", "README.md describes prism, a Go session inspector.", false, ""), appendOp(call))
	b.add(core.EventStepEnd, `{"turn":1,"step":1}`)
	b.add(core.EventTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`)
	pe = b.events

	ch = core.SessionHeader{ID: childID, CreatedAt: 1764500200100, Cwd: "/srv/work", ParentSession: parentID, Origin: "subagent", DelegationDepth: &one}
	c := &logBuilder{t: ch.CreatedAt}
	c.add(core.EventTurnStart, `{"turn":1}`)
	c.add(core.EventSubagentDescr, `{"version":2,"mode":"one-shot","provider":"deepseek","label":"summarise README.md"}`)
	c.add(core.EventStepStart, `{"turn":1,"step":1}`)
	c.add(core.EventUserMessage, userMessage("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", "Summarise README.md in one line."), appendOp())
	src = c.streamText(1, 1, 0, "text-delta", []string{"README.md ", "describes prism, ", "a Go session ", "inspector."})
	c.add(core.EventAssistantMessage, `{"turn":1,"step":1,"message":{"id":"bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb","role":"assistant","content":[{"type":"text","text":"README.md describes prism, a Go session inspector."}],"source":{"kind":"model","provider":"deepseek","model":"deepseek-chat"}}}`, appendOp(src...))
	c.add(core.EventStepEnd, `{"turn":1,"step":1}`)
	c.add(core.EventTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`)
	return ph, pe, ch, c.events
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func plainLog(h core.SessionHeader, events []core.Event, batches [][2]int) []byte {
	out := append(dsh.AppendHeader(nil, h), '\n')
	if batches == nil {
		batches = [][2]int{{0, len(events)}}
	}
	for _, batch := range split(events, batches) {
		out = must(dsh.AppendDshLines(out, batch))
	}
	return out
}

func zipOf(entries ...[2]any) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w := must(zw.CreateHeader(&zip.FileHeader{Name: e[0].(string), Method: zip.Deflate}))
		must(w.Write(e[1].([]byte)))
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// overlapZipBomb writes a zip whose n central-directory entries all point at
// one deflate stream of size zero bytes: tiny on disk, n×size inflated.
func overlapZipBomb(n int, size int) []byte {
	var comp bytes.Buffer
	fw := must(flate.NewWriter(&comp, flate.BestCompression))
	zeros := make([]byte, 1<<20)
	crc := crc32.NewIEEE()
	for left := size; left > 0; left -= len(zeros) {
		chunk := zeros[:min(left, len(zeros))]
		must(fw.Write(chunk))
		crc.Write(chunk)
	}
	if err := fw.Close(); err != nil {
		panic(err)
	}
	var out bytes.Buffer
	le := func(v any) { _ = binary.Write(&out, binary.LittleEndian, v) }
	name := "session.jsonl"
	// Local file header.
	le(uint32(0x04034b50))
	le(uint16(20))
	le(uint16(0))
	le(uint16(8))
	le(uint32(0))
	le(crc.Sum32())
	le(uint32(comp.Len()))
	le(uint32(size))
	le(uint16(len(name)))
	le(uint16(0))
	out.WriteString(name)
	out.Write(comp.Bytes())
	cdStart := out.Len()
	for i := 0; i < n; i++ {
		nm := name
		if i > 0 {
			nm = fmt.Sprintf("subagents/%04d/session.jsonl", i)
		}
		le(uint32(0x02014b50))
		le(uint16(20))
		le(uint16(20))
		le(uint16(0))
		le(uint16(8))
		le(uint32(0))
		le(crc.Sum32())
		le(uint32(comp.Len()))
		le(uint32(size))
		le(uint16(len(nm)))
		le(uint16(0))
		le(uint16(0))
		le(uint16(0))
		le(uint16(0))
		le(uint32(0))
		le(uint32(0)) // every entry points at the one local header
		out.WriteString(nm)
	}
	cdLen := out.Len() - cdStart
	le(uint32(0x06054b50))
	le(uint16(0))
	le(uint16(0))
	le(uint16(n))
	le(uint16(n))
	le(uint32(cdLen))
	le(uint32(cdStart))
	le(uint16(0))
	return out.Bytes()
}

// fixtures returns every committed fixture file by its path under testdata/dsh.
func fixtures() map[string][]byte {
	files := map[string][]byte{}
	h, events, batches := basicLog()
	files["basic/session.jsonl"] = plainLog(h, events, batches)
	zst := must(dsh.AppendZstdLog(nil, h, split(events, batches)))
	files["basic/session.jsonl.zstd"] = zst

	// torn: the same session, its last two batches in one frame cut short.
	tornBatches := [][2]int{{0, 4}, {4, 29}, {29, 30}, {30, len(events)}}
	torn := must(dsh.AppendZstdLog(nil, h, split(events, tornBatches)))
	frames, _, _ := dsh.ScanFrames(torn)
	last := frames[len(frames)-1]
	files["torn/session.jsonl.zstd"] = torn[:last.Start+(last.End-last.Start)/2]

	ch, ce := crashedLog()
	crashed := plainLog(ch, ce, nil)
	crashed = append(crashed, `{"type":"tool/result","seq":5,"time":1764500100042,"data":{"turn":1,"st`...)
	files["crashed/session.jsonl"] = crashed

	ph, pe, kh, ke := familyLogs()
	files["export/session-export.zip"] = zipOf(
		[2]any{"session.jsonl", plainLog(ph, pe, nil)},
		[2]any{"subagents/" + childID + "/session.jsonl", plainLog(kh, ke, nil)},
		[2]any{"media/sha256-0000.png", []byte("\x89PNG\r\n\x1a\nnot really an image")},
	)

	// Bad inputs: each must fail with one clear error.
	ok := plainLog(ch, ce, nil)
	lines := strings.SplitAfter(string(ok), "\n")
	end := `{"type":"turn/end","seq":%d,"time":1764500100099,"data":{"turn":1,"reason":{"kind":"completed"}}}` + "\n"
	files["bad/seq-gap.jsonl"] = []byte(strings.Join(lines[:4], "") + strings.Replace(lines[4], `"seq":3`, `"seq":4`, 1) + fmt.Sprintf(end, 5))
	files["bad/non-json.jsonl"] = []byte(strings.Join(lines[:4], "") + "{this is not json\n" + fmt.Sprintf(end, 3))
	files["bad/unknown-type.jsonl"] = []byte(strings.Join(lines[:3], "") + `{"type":"mystery/event","seq":2,"time":1764500100021,"data":{}}` + "\n")
	files["bad/version.jsonl"] = []byte(strings.Replace(lines[0], `"version":0`, `"version":7`, 1) + strings.Join(lines[1:], ""))
	// Decodes fine, but its tool/result answers a different call than its
	// tool-result block names: core.ValidateLog must refuse it.
	mismatch := strings.Replace(toolResult(1, 1, "m-1", "call_00_x", "go 1.26", false, ""), `"source":{"kind":"tool","callId":"call_00_x"}`, `"source":{"kind":"tool","callId":"call_99_z"}`, 1)
	files["bad/mismatched-tool-result.jsonl"] = []byte(string(ok) + fmt.Sprintf(`{"type":"tool/result","seq":5,"time":1764500100042,"data":%s,"surfaceOp":"append","sourceEventSeqs":[4]}`, mismatch) + "\n")
	corrupt := bytes.Clone(zst)
	zf, _, _ := dsh.ScanFrames(corrupt)
	corrupt[zf[2].End-6] ^= 0xFF // inside frame 2: its checksum or last block
	files["bad/corrupt-frame.jsonl.zstd"] = corrupt
	files["bad/truncated-header.jsonl.zstd"] = zst[:zf[0].End-3]
	exp := files["export/session-export.zip"]
	files["bad/truncated.zip"] = exp[:len(exp)*2/3]
	files["bad/zip-bomb.zip"] = overlapZipBomb(64, 64<<20)
	return files
}

// TestFixtures regenerates the dsh-format fixtures from the format
// description and checks the committed files are identical (-update
// rewrites them).
func TestFixtures(t *testing.T) {
	for name, want := range fixtures() {
		path := filepath.Join(fixtureDir, filepath.FromSlash(name))
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("fixture %s: %v (run go test ./sources/dsh -run TestFixtures -update)", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("fixture %s differs from its generator (run with -update and review the diff)", name)
		}
	}
}
