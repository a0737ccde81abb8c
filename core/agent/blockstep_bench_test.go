package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"prism/core"
	"prism/core/tools"
	"prism/db"
)

// commitBlockStore is the in-memory store whose every append also blocks the
// appender the way a durable commit does, without any of a store's work:
// block runs after the in-memory append (an fdatasync of a scratch file
// on the same disk, or a sleep).
type commitBlockStore struct {
	*memStore
	block func()
}

func (s *commitBlockStore) AppendEvents(ctx context.Context, id string, evs []core.Event) error {
	if err := s.memStore.AppendEvents(ctx, id, evs); err != nil {
		return err
	}
	s.block()
	return nil
}

// BenchmarkStepAfterBlock splits a durable step's time outside its store:
// the same 1,000-call session (1 call per step) through the in-memory
// store, the in-memory store plus an fdatasync of a 4 KiB write to a
// scratch file per commit (fsync), plus a sleep per commit (sleep), and
// SQLite FULL (sqlite), rotated round by round. outside-ms is a step's
// wall time outside the store (the loop's own work, which is identical in
// all four); its excess over mem says what blocking alone costs the loop.
func BenchmarkStepAfterBlock(b *testing.B) {
	const calls = 1000
	reg := core.NewRegistry(quiet)
	reg.MustRegister(tools.NewNote())
	for _, perStep := range []int{1, 10} {
		b.Run(fmt.Sprintf("calls-per-step=%d", perStep), func(b *testing.B) {
			script := noteScript(calls, perStep)
			steps := float64(len(script.Steps))
			kinds := []string{"mem", "fsync", "sleep", "sqlite"}
			outside := map[string]time.Duration{}
			inside := map[string]time.Duration{}
			excess := map[string][]float64{} // per round: outside-ms over mem's
			for round := range b.N {
				dir := b.TempDir()
				f, err := os.Create(filepath.Join(dir, "scratch"))
				if err != nil {
					b.Fatal(err)
				}
				page := make([]byte, 4096)
				last := map[string]time.Duration{}
				for k := range kinds {
					kind := kinds[(k+round)%len(kinds)]
					var inner core.EventStore
					switch kind {
					case "mem":
						inner = newMemStore()
					case "fsync":
						inner = &commitBlockStore{newMemStore(), func() {
							if _, err := f.WriteAt(page, 0); err != nil {
								b.Fatal(err)
							}
							if err := f.Sync(); err != nil {
								b.Fatal(err)
							}
						}}
					case "sleep":
						inner = &commitBlockStore{newMemStore(), func() { time.Sleep(500 * time.Microsecond) }}
					case "sqlite":
						st, err := db.Open(context.Background(), filepath.Join(dir, "loop.db"), db.Options{Logger: quiet})
						if err != nil {
							b.Fatal(err)
						}
						defer st.Close()
						inner = st
					}
					ts := &timedStore{inner: inner}
					elapsed := runNoteSession(b, reg, script, calls, ts)
					in := time.Duration(ts.nanos.Load())
					outside[kind] += elapsed - in
					last[kind] = elapsed - in
					inside[kind] += in
				}
				f.Close()
				memOut := last["mem"]
				for kind, d := range last {
					excess[kind] = append(excess[kind], (d-memOut).Seconds()*1000/steps)
				}
			}
			n := float64(b.N) * steps
			for _, kind := range kinds {
				b.ReportMetric(outside[kind].Seconds()*1000/n, kind+"-outside-ms")
				b.ReportMetric(inside[kind].Seconds()*1000/n, kind+"-store-ms")
				if kind != "mem" {
					e := excess[kind]
					slices.Sort(e)
					b.ReportMetric(e[len(e)/2], kind+"-excess-median-ms")
				}
			}
			b.ReportMetric(loadAverage(), "load1")
			b.ReportMetric(0, "ns/op")
		})
	}
}
