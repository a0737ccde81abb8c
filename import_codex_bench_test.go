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

const benchRolloutID = "0199b000-0000-7000-8000-00000000be4c"

// codexRollout writes a synthetic Codex rollout of about n lines: a
// session_meta, then turns of task_started, a prompt, a reasoning item,
// two parallel function calls, their outputs, a token_count, the answer
// and task_complete (10 lines).
func codexRollout(n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"timestamp":"2026-11-04T00:00:00.000Z","type":"session_meta","payload":{"id":%q,"timestamp":"2026-11-04T00:00:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.150.0","source":"cli","model_provider":"openai"}}`+"\n", benchRolloutID)
	for i := 0; 1+i*10 < n; i++ {
		ts := fmt.Sprintf("2026-11-04T%02d:%02d:%02d.000Z", i/3600%24, i/60%60, i%60)
		line := func(typ, payload string) {
			fmt.Fprintf(&b, `{"timestamp":%q,"type":%q,"payload":%s}`+"\n", ts, typ, payload)
		}
		line("event_msg", `{"type":"task_started"}`)
		line("response_item", fmt.Sprintf(`{"type":"message","role":"user","content":[{"type":"input_text","text":"Step %d: check the build."}]}`, i))
		line("response_item", `{"type":"reasoning","summary":[{"type":"summary_text","text":"Build, then read main.go."}],"encrypted_content":"gAAAA"}`)
		line("response_item", fmt.Sprintf(`{"type":"function_call","name":"shell","arguments":"{\"command\":[\"go\",\"build\",\"./...\"]}","call_id":"c%da"}`, i))
		line("response_item", fmt.Sprintf(`{"type":"function_call","name":"shell","arguments":"{\"command\":[\"cat\",\"main.go\"]}","call_id":"c%db"}`, i))
		line("response_item", fmt.Sprintf(`{"type":"function_call_output","call_id":"c%da","output":"Exit code: 0\nOutput:\nok"}`, i))
		line("response_item", fmt.Sprintf(`{"type":"function_call_output","call_id":"c%db","output":"Exit code: 0\nOutput:\npackage main"}`, i))
		line("event_msg", `{"type":"token_count","info":{"last_token_usage":{"input_tokens":100,"cached_input_tokens":80,"output_tokens":20,"reasoning_output_tokens":5,"total_tokens":120}}}`)
		line("response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Builds."}]}`)
		line("event_msg", `{"type":"task_complete"}`)
	}
	return b.Bytes()
}

// BenchmarkImportCodex imports a 100k-line Codex rollout into a fresh
// SQLite store (sub-benchmark codex), and the same session's events as a
// prism/dsh JSONL log (sub-benchmark jsonl, the export of the first
// import): events/s of each, so their ratio is the cost of the rollout
// decoder in the same run.
func BenchmarkImportCodex(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	rollout := filepath.Join(dir, "rollout-2026-11-04T00-00-00-"+benchRolloutID+".jsonl")
	if err := os.WriteFile(rollout, codexRollout(100_000), 0o644); err != nil {
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
	st := open(b, "seed.db")
	if _, err := st.ImportFile(ctx, rollout); err != nil {
		b.Fatal(err)
	}
	var exp bytes.Buffer
	if err := st.Export(ctx, benchRolloutID, &exp); err != nil {
		b.Fatal(err)
	}
	st.Close()
	jsonlFile := filepath.Join(dir, "bench.jsonl")
	if err := os.WriteFile(jsonlFile, exp.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct{ name, file string }{{"codex", rollout}, {"jsonl", jsonlFile}} {
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
			b.ReportMetric(float64(events), "events")
		})
	}
}
