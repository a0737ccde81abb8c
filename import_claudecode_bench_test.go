package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"prism/db"
	"prism/engine"
	"prism/sources/dsh"
)

// ccTranscript writes a synthetic Claude Code transcript of about n lines:
// turns of a prompt, one response of two parallel calls (two lines), their
// results with toolUseResult, a closing text and turn_duration (7 lines).
func ccTranscript(n int) []byte {
	var b bytes.Buffer
	env := `"isSidechain":false,"userType":"external","cwd":"/w","sessionId":"bench-cc","version":"2.1.3"`
	for i := 0; i*7 < n; i++ {
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

// BenchmarkImportClaudeCode imports a 100k-line Claude Code transcript
// into a fresh SQLite store (sub-benchmark claude-code), and the same
// session's events as a prism/dsh JSONL log (sub-benchmark jsonl, the
// export of the first import): events/s of each, so their ratio is the
// cost of the foreign decoder in the same run.
func BenchmarkImportClaudeCode(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	ccFile := filepath.Join(dir, "bench-cc.jsonl")
	if err := os.WriteFile(ccFile, ccTranscript(100_000), 0o644); err != nil {
		b.Fatal(err)
	}
	lim := dsh.Limits{MaxMemoryBytes: 1 << 30}
	open := func(b *testing.B, name string) *db.Store {
		st, err := db.Open(ctx, filepath.Join(b.TempDir(), name), db.Options{Limits: lim, Foreign: engine.Formats(), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	// The JSONL form of the same session.
	st := open(b, "seed.db")
	if _, err := st.ImportFile(ctx, ccFile); err != nil {
		b.Fatal(err)
	}
	var exp bytes.Buffer
	if err := st.Export(ctx, "bench-cc", &exp); err != nil {
		b.Fatal(err)
	}
	st.Close()
	jsonlFile := filepath.Join(dir, "bench.jsonl")
	if err := os.WriteFile(jsonlFile, exp.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct{ name, file string }{{"claude-code", ccFile}, {"jsonl", jsonlFile}} {
		b.Run(tt.name, func(b *testing.B) {
			events := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				st := open(b, fmt.Sprintf("i%d.db", i))
				b.StartTimer()
				res, err := st.ImportFile(ctx, tt.file)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				events = res[0].Events
				st.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
