package watch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/db"
	"prism/sources/claudecode"
	"prism/sources/codex"
	"prism/sources/dsh"
	"prism/sources/watch"
)

// The transcripts of the growth benchmarks: text-heavy lines as Claude
// Code and Codex write them (a file read is kilobytes of text, twice in a
// Claude Code result line: the content and toolUseResult), each line a
// function of its number so a benchmark can grow a file line by line.

const (
	benchCCID    = "bench-cc-grow"
	benchCodexID = "0199b000-0000-7000-8000-0000000a0a0a"
)

// benchText is n bytes of source-like text, JSON-escaped.
func benchText(i, n int) string {
	var b strings.Builder
	for k := 0; b.Len() < n; k++ {
		fmt.Fprintf(&b, `func f%d_%d(x int) int { return x*%d + 1 }\n`, i, k, k)
	}
	return b.String()
}

// ccLine is line i (0-based) of a Claude Code transcript: turns of a
// prompt, a thinking block, two tool_use lines of the same message (the
// first without stop_reason: a group still open), the two results (a
// command's output, a file of ~4 KB), the answer and turn_duration (8
// lines).
func ccLine(i int) string {
	t, k := i/8, i%8
	env := fmt.Sprintf(`"parentUuid":"l%d","isSidechain":false,"userType":"external","cwd":"/home/dev/app","sessionId":%q,"version":"2.1.3","gitBranch":"main","uuid":"l%d","timestamp":"2026-11-04T%02d:%02d:%02d.000Z"`,
		i-1, benchCCID, i, t/3600%24, t/60%60, t%60)
	switch k {
	case 0:
		return fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":"Step %d: look at the build and fix what fails, then tell me what you changed."}}`, env, t)
	case 1:
		return fmt.Sprintf(`{"type":"assistant",%s,"message":{"id":"m%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"The build first; then main.go, which the error names. %s","signature":"sig"}],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":5}}}`, env, t, benchText(i, 300))
	case 2:
		return fmt.Sprintf(`{"type":"assistant",%s,"message":{"id":"m%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t%da","name":"Bash","input":{"command":"go build ./...","description":"Build"}}],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":5}}}`, env, t, t)
	case 3:
		return fmt.Sprintf(`{"type":"assistant",%s,"message":{"id":"m%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t%db","name":"Read","input":{"file_path":"/home/dev/app/main.go"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":30}}}`, env, t, t)
	case 4:
		out := benchText(i, 600)
		return fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%da","content":"%s"}]},"toolUseResult":{"stdout":"%s","stderr":"","interrupted":false,"isImage":false}}`, env, t, out, out)
	case 5:
		file := benchText(i, 4000)
		return fmt.Sprintf(`{"type":"user",%s,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%db","content":"%s"}]},"toolUseResult":{"type":"text","file":{"filePath":"/home/dev/app/main.go","content":"%s","numLines":100,"startLine":1,"totalLines":100}}}`, env, t, file, file)
	case 6:
		return fmt.Sprintf(`{"type":"assistant",%s,"message":{"id":"n%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"The build passes now. %s"}],"stop_reason":"end_turn","usage":{"input_tokens":20,"output_tokens":3}}}`, env, t, benchText(i, 200))
	default:
		return fmt.Sprintf(`{"type":"system",%s,"subtype":"turn_duration","durationMs":900}`, env)
	}
}

// codexLine is line i (0-based) of a Codex rollout: a session_meta, then
// turns of task_started, a prompt, reasoning, two function calls, their
// outputs (a build's, a file of ~4 KB), token_count, the answer and
// task_complete (10 lines).
func codexLine(i int) string {
	if i == 0 {
		return fmt.Sprintf(`{"timestamp":"2026-11-04T00:00:00.000Z","type":"session_meta","payload":{"id":%q,"timestamp":"2026-11-04T00:00:00.000Z","cwd":"/home/dev/app","originator":"codex_cli_rs","cli_version":"0.150.0","source":"cli","model_provider":"openai"}}`, benchCodexID)
	}
	t, k := (i-1)/10, (i-1)%10
	ts := fmt.Sprintf("2026-11-04T%02d:%02d:%02d.000Z", t/3600%24, t/60%60, t%60)
	line := func(typ, payload string) string {
		return fmt.Sprintf(`{"timestamp":%q,"type":%q,"payload":%s}`, ts, typ, payload)
	}
	switch k {
	case 0:
		return line("event_msg", `{"type":"task_started"}`)
	case 1:
		return line("response_item", fmt.Sprintf(`{"type":"message","role":"user","content":[{"type":"input_text","text":"Step %d: look at the build and fix what fails."}]}`, t))
	case 2:
		return line("response_item", fmt.Sprintf(`{"type":"reasoning","summary":[{"type":"summary_text","text":"Build, then read main.go. %s"}],"encrypted_content":"gAAAA"}`, benchText(i, 300)))
	case 3:
		return line("response_item", fmt.Sprintf(`{"type":"function_call","name":"shell","arguments":"{\"command\":[\"go\",\"build\",\"./...\"]}","call_id":"c%da"}`, t))
	case 4:
		return line("response_item", fmt.Sprintf(`{"type":"function_call","name":"shell","arguments":"{\"command\":[\"cat\",\"main.go\"]}","call_id":"c%db"}`, t))
	case 5:
		return line("response_item", fmt.Sprintf(`{"type":"function_call_output","call_id":"c%da","output":"Exit code: 0\nOutput:\n%s"}`, t, benchText(i, 600)))
	case 6:
		return line("response_item", fmt.Sprintf(`{"type":"function_call_output","call_id":"c%db","output":"Exit code: 0\nOutput:\n%s"}`, t, benchText(i, 4000)))
	case 7:
		return line("event_msg", `{"type":"token_count","info":{"last_token_usage":{"input_tokens":100,"cached_input_tokens":80,"output_tokens":20,"reasoning_output_tokens":5,"total_tokens":120}}}`)
	case 8:
		return line("response_item", fmt.Sprintf(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"The build passes now. %s"}]}`, benchText(i, 200)))
	default:
		return line("event_msg", `{"type":"task_complete"}`)
	}
}

// growKind is a transcript format the growth benchmarks grow.
type growKind struct {
	name string
	rel  string // the file's path under the watched folder
	id   string // its session's id
	line func(i int) string
}

var growKinds = []growKind{
	{"claude-code", "-home-dev-app/" + benchCCID + ".jsonl", benchCCID, ccLine},
	{"codex", "2026/11/04/rollout-2026-11-04T00-00-00-" + benchCodexID + ".jsonl", benchCodexID, codexLine},
}

// writeLines writes lines [from, to) of k to f.
func writeLines(tb testing.TB, f *os.File, k growKind, from, to int) int64 {
	tb.Helper()
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(k.line(i))
		b.WriteByte('\n')
	}
	n, err := f.WriteString(b.String())
	if err != nil {
		tb.Fatal(err)
	}
	return int64(n)
}

// growSetup writes lines [0, n) of k under a fresh folder and has a
// Watcher into a fresh SQLite store take it in (one Scan).
func growSetup(b *testing.B, k growKind, n int) (w *watch.Watcher, st *db.Store, f *os.File, fails *int, mib float64) {
	b.Helper()
	root := b.TempDir()
	path := filepath.Join(root, k.rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	size := writeLines(b, f, k, 0, n)
	st = newTestStore(b, func(o *db.Options) { o.Limits = dsh.Limits{MaxMemoryBytes: 1 << 30} })
	fails = new(int)
	w = watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats(), Synced: func(s watch.Sync) {
		if s.Err != nil {
			*fails++
			b.Logf("sync failed: %v", s.Err)
		}
	}})
	if err := w.Scan(context.Background()); err != nil {
		b.Fatal(err)
	}
	if *fails > 0 {
		b.Fatalf("the first sync of %d lines failed", n)
	}
	return w, st, f, fails, float64(size) / (1 << 20)
}

// BenchmarkWatchGrow times one poll of a watched Claude Code transcript
// (and a Codex rollout) of 1,000 and 10,000 text-heavy lines that grew by
// one line since the last poll: what `prism watch` pays per line an agent
// writes. Its floor is BenchmarkWatchGrowParts/…/decode-line.
func BenchmarkWatchGrow(b *testing.B) {
	ctx := context.Background()
	for _, k := range growKinds {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/lines=%d", k.name, n), func(b *testing.B) {
				w, st, f, fails, mib := growSetup(b, k, n)
				next := n
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					writeLines(b, f, k, next, next+1)
					next++
					b.StartTimer()
					if err := w.Scan(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if *fails > 0 {
					b.Fatalf("%d syncs failed", *fails)
				}
				// One more poll: what a quiet moment writes (a group
				// held for its last line).
				if err := w.Scan(ctx); err != nil {
					b.Fatal(err)
				}
				if l, err := st.LoadSession(ctx, k.id); err != nil || len(l.Events) == 0 {
					b.Fatalf("the grown session: %v", err)
				}
				b.ReportMetric(mib, "file-MiB")
			})
		}
	}
}

// BenchmarkWatchGrowParts splits a whole re-read's poll into its parts on
// the same files as BenchmarkWatchGrow: decode-whole decodes the file up
// to its last line (as the watcher did per poll), sync-unchanged hands the
// stored events to SyncWatched again (reading the stored log and
// comparing it: the store's share of a poll), and decode-line decodes the
// one added line alone (the floor of a poll).
func BenchmarkWatchGrowParts(b *testing.B) {
	ctx := context.Background()
	for _, k := range growKinds {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/lines=%d", k.name, n), func(b *testing.B) {
				_, st, f, _, _ := growSetup(b, k, n)
				fi, err := f.Stat()
				if err != nil {
					b.Fatal(err)
				}
				fg := dsh.DetectForeign([]byte(k.line(0)), foreignFormats())
				lim := st.ImportLimits()
				b.Run("decode-whole", func(b *testing.B) {
					b.ReportAllocs()
					for i := 0; i < b.N; i++ {
						if _, err := fg.ReadFileAt(f.Name(), f, fi.Size(), false, lim); err != nil {
							b.Fatal(err)
						}
					}
				})
				logs, err := fg.ReadFileAt(f.Name(), f, fi.Size(), false, lim)
				if err != nil {
					b.Fatal(err)
				}
				b.Run("sync-unchanged", func(b *testing.B) {
					b.ReportAllocs()
					for i := 0; i < b.N; i++ {
						if _, _, err := st.SyncWatched(ctx, logs[0].Header, logs[0].Events); err != nil {
							b.Fatal(err)
						}
					}
				})
				line := []byte(k.line(n - 3)) // a result line: the heaviest kind
				b.Run("decode-line", func(b *testing.B) {
					b.ReportAllocs()
					for i := 0; i < b.N; i++ {
						if k.name == "codex" {
							d := codex.NewDecoder(codex.Options{ID: k.id})
							d.Line(line)
						} else {
							d := claudecode.NewDecoder()
							if err := d.Line(n-2, line); err != nil {
								b.Fatal(err)
							}
						}
					}
				})
			})
		}
	}
}
