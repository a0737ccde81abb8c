package claudecode_test

import (
	"bufio"
	"bytes"
	"fmt"
	"testing"

	"prism/sources/claudecode"
	"prism/sources/dsh"
)

// transcript writes a synthetic transcript of about n lines: turns of a
// prompt, one response of two parallel calls (two lines), their two
// results with toolUseResult, and a closing text (7 lines a turn).
func transcript(n int) []byte {
	var b bytes.Buffer
	env := `"isSidechain":false,"userType":"external","cwd":"/w","sessionId":"bench-0000","version":"2.1.3"`
	for i := 0; b.Len() == 0 || i*7 < n; i++ {
		ts := fmt.Sprintf("2026-11-04T%02d:%02d:%02d.000Z", i/3600%24, i/60%60, i%60)
		fmt.Fprintf(&b, `{"type":"user",%s,"uuid":"u%d","timestamp":"%s","message":{"role":"user","content":"Step %d: check the build."}}`+"\n", env, i, ts, i)
		fmt.Fprintf(&b, `{"type":"assistant",%s,"uuid":"a%d","timestamp":"%s","message":{"id":"m%d","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t%da","name":"Bash","input":{"command":"go build ./...","description":"Build"}}],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":5}}}`+"\n", env, i, ts, i, i)
		fmt.Fprintf(&b, `{"type":"assistant",%s,"uuid":"b%d","timestamp":"%s","message":{"id":"m%d","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t%db","name":"Read","input":{"file_path":"/w/main.go"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":30}}}`+"\n", env, i, ts, i, i)
		fmt.Fprintf(&b, `{"type":"user",%s,"uuid":"r%d","timestamp":"%s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%da","content":"ok"}]},"toolUseResult":{"stdout":"ok","stderr":"","interrupted":false,"isImage":false}}`+"\n", env, i, ts, i)
		fmt.Fprintf(&b, `{"type":"user",%s,"uuid":"s%d","timestamp":"%s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%db","content":"package main"}]},"toolUseResult":{"type":"text","file":{"filePath":"/w/main.go","content":"package main","numLines":1,"startLine":1,"totalLines":1}}}`+"\n", env, i, ts, i)
		fmt.Fprintf(&b, `{"type":"assistant",%s,"uuid":"c%d","timestamp":"%s","message":{"id":"n%d","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Builds."}],"stop_reason":"end_turn","usage":{"input_tokens":20,"output_tokens":3}}}`+"\n", env, i, ts, i)
		fmt.Fprintf(&b, `{"type":"system",%s,"subtype":"turn_duration","durationMs":900,"uuid":"d%d","timestamp":"%s"}`+"\n", env, i, ts)
	}
	return b.Bytes()
}

// BenchmarkReadLog decodes a 100k-line transcript (no store).
func BenchmarkReadLog(b *testing.B) {
	data := transcript(100_000)
	lines := bytes.Count(data, []byte("\n"))
	var events int
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		l, err := claudecode.ReadLog(bufio.NewReader(bytes.NewReader(data)), dsh.Limits{MaxMemoryBytes: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		events = len(l.Events)
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(lines)/sec, "lines/s")
	b.ReportMetric(float64(events)/sec, "events/s")
}
