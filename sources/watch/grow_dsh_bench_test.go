package watch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/db"
	"prism/sources/dsh"
	"prism/sources/watch"
)

// dshBatches are the batches (zstd frames) of a dsh log of n steps, one
// step a batch: a prompt, an answer with a call, the call and its result
// of ~4 KB of text — prism's own sessions, as dsh writes them.
func dshBatches(n int) [][]core.Event {
	b := coretest.NewBuilder(1764500000000)
	var batches [][]core.Event
	for i := range n {
		from := len(b.Events)
		if i == 0 {
			b.TurnStart()
		}
		id := fmt.Sprintf("c%d", i)
		args := `{"command":"cat main.go"}`
		b.StepStart().User(fmt.Sprintf("Step %d: look at the build.", i)).Assistant("Reading main.go. "+benchText(i, 300), [3]string{id, "bash", args}).
			Call(id, "bash", args).Result(id, benchText(i, 4000), false, nil, nil).StepEnd()
		batches = append(batches, b.Events[from:])
	}
	return batches
}

// BenchmarkWatchGrowDsh times one poll of a watched dsh log (zstd) of
// 1,000 and 10,000 steps that grew by one frame since the last poll:
// what `prism watch` pays per batch dsh appends — the frame decoded and
// appended, and the check that what was read before was not rewritten
// (its CRC-32C summed again) — in wall time and in the process's CPU
// time per poll (cpu-ms/op: the store's background work included; far
// less disturbed by a busy machine).
func BenchmarkWatchGrowDsh(b *testing.B) {
	ctx := context.Background()
	const id = "0b1c6d2e-5f4a-4e3b-9c8d-000000000bbb"
	h := core.SessionHeader{Version: core.SessionFormatVersion, ID: id, CreatedAt: 1764500000000, Cwd: "/home/dev/app"}
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			batches := dshBatches(n + b.N + 1)
			data, err := dsh.AppendZstdLog(nil, h, batches[:n])
			if err != nil {
				b.Fatal(err)
			}
			root := b.TempDir()
			path := filepath.Join(root, "--home-dev-app--", id, "session.jsonl.zstd")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				b.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			st := newTestStore(b, func(o *db.Options) { o.Limits = dsh.Limits{MaxMemoryBytes: 1 << 30} })
			fails := 0
			w := watch.New(st, root, watch.Options{Logger: quietLogger(), Synced: func(s watch.Sync) {
				if s.Err != nil {
					fails++
					b.Logf("sync failed: %v", s.Err)
				}
			}})
			if err := w.Scan(ctx); err != nil {
				b.Fatal(err)
			}
			// The search index files the log first (a search waits
			// for it): the polls timed are those of a log in steady state.
			if _, err := st.Search(ctx, anyWord, db.SearchOptions{}); err != nil {
				b.Fatal(err)
			}
			frames := make([][]byte, b.N)
			for i := range frames {
				text, err := dsh.AppendDshLines(nil, batches[n+i])
				if err != nil {
					b.Fatal(err)
				}
				if frames[i], err = dsh.EncodeFrame(text); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := coretest.CPUTime(b)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if _, err := f.Write(frames[i]); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := w.Scan(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu = coretest.CPUTime(b) - cpu
			if fails > 0 {
				b.Fatalf("%d syncs failed", fails)
			}
			info, err := st.Session(ctx, id)
			if err != nil || info.Events != countEvents(batches[:n+b.N]) {
				b.Fatalf("the grown session: %d events, err %v", info.Events, err)
			}
			b.ReportMetric(float64(len(data))/(1<<20), "file-MiB")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

func countEvents(batches [][]core.Event) int64 {
	var n int64
	for _, b := range batches {
		n += int64(len(b))
	}
	return n
}
