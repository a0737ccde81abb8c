package db

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"prism/core"
	"prism/sources/dsh"
	"prism/store/storetest"
)

// benchData is an event payload of about 300 bytes, like the one the machine's ceilings in BENCHMARKS.md were measured with.
var benchData = `{"todos":[{"content":"` + strings.Repeat("review <the> & diff ", 13) + `","status":"in_progress"}]}`

func reportLatencies(b *testing.B, lat []time.Duration, events int, elapsed time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAppend measures durable appends (synchronous=FULL) on one
// database file: one appender, 8 concurrent appenders through the group
// commit, and the raw ceiling of the same file with 100 events per
// transaction (plain INSERTs, no store).
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "bench.db")
	st, err := Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	run := 0
	appenders := func(b *testing.B, n, perAppend int) {
		run++
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("bench-%d-%d", run, i)
			storetest.MustCreate(b, st, ids[i])
		}
		per := max(1, b.N/n)
		lat := make([][]time.Duration, n)
		commits := st.w.commits.Load()
		var wg sync.WaitGroup
		b.ResetTimer()
		start := time.Now()
		for g := 0; g < n; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lat[g] = make([]time.Duration, 0, per/perAppend+1)
				evs := make([]core.Event, perAppend)
				for i := 0; i+perAppend <= max(per, perAppend); i += perAppend {
					t0 := time.Now()
					for k := range evs {
						evs[k] = core.Event{Type: core.EventTodoWrite, Seq: int64(i + k), Time: t0.UnixMilli(), Data: []byte(benchData)}
					}
					if err := st.AppendEvents(ctx, ids[g], evs); err != nil {
						b.Error(err)
						return
					}
					lat[g] = append(lat[g], time.Since(t0))
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		b.StopTimer()
		var all []time.Duration
		for _, l := range lat {
			all = append(all, l...)
		}
		per = max(per, perAppend) / perAppend * perAppend
		reportLatencies(b, all, per*n, elapsed)
		b.ReportMetric(float64(per*n)/float64(st.w.commits.Load()-commits), "events/commit")
	}
	if v := os.Getenv("PRISM_BENCH_BATCHWAIT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		old := batchWait
		batchWait = d
		defer func() { batchWait = old }()
	}
	b.Run("appenders=1", func(b *testing.B) { appenders(b, 1, 1) })
	b.Run("appenders=8", func(b *testing.B) { appenders(b, 8, 1) })
	// A loop step's commit: ten events in one AppendEvents.
	b.Run("appenders=1/events-per-append=10", func(b *testing.B) { appenders(b, 1, 10) })
	if os.Getenv("PRISM_BENCH_NOWAIT") != "" {
		old := batchWait
		batchWait = 0
		b.Run("appenders=8/nowait", func(b *testing.B) { appenders(b, 8, 1) })
		batchWait = old
	}
	b.Run("raw-1-per-tx", func(b *testing.B) { rawInserts(b, st, path, 1) })
	b.Run("raw-10-per-tx", func(b *testing.B) { rawInserts(b, st, path, 10) })
	b.Run("raw-100-per-tx", func(b *testing.B) { rawInserts(b, st, path, 100) })
}

// rawInserts commits perTx plain INSERTs per transaction through a second
// connection to the store's file, used only while the store is idle:
// SQLite's own ceiling on this file with synchronous=FULL.
func rawInserts(b *testing.B, st *Store, path string, perTx int) {
	{
		raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate")
		if err != nil {
			b.Fatal(err)
		}
		defer raw.Close()
		raw.SetMaxOpenConns(1)
		id := fmt.Sprintf("bench-raw-%d-%d", perTx, time.Now().UnixNano())
		storetest.MustCreate(b, st, id)
		ins, err := raw.Prepare(`INSERT INTO events (session_id, seq, type, time, data, ignorable) VALUES (?, ?, ?, ?, ?, 0)`)
		if err != nil {
			b.Fatal(err)
		}
		defer ins.Close()
		txs := max(1, b.N/perTx)
		lat := make([]time.Duration, 0, txs)
		b.ResetTimer()
		start := time.Now()
		seq := 0
		for i := 0; i < txs; i++ {
			t0 := time.Now()
			tx, err := raw.Begin()
			if err != nil {
				b.Fatal(err)
			}
			s := tx.Stmt(ins)
			for k := 0; k < perTx; k++ {
				if _, err := s.Exec(id, seq, core.EventTodoWrite, t0.UnixMilli(), benchData); err != nil {
					b.Fatal(err)
				}
				seq++
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		elapsed := time.Since(start)
		b.StopTimer()
		reportLatencies(b, lat, txs*perTx, elapsed)
	}
}

// BenchmarkLoadSession loads a 10,000-event session (header, rows, decode
// into core.Event).
func BenchmarkLoadSession(b *testing.B) {
	ctx := context.Background()
	st := newTestStore(b)
	storetest.MustCreate(b, st, "big")
	const n = 10000
	batch := make([]core.Event, 0, 100)
	for i := 0; i < n; i++ {
		batch = append(batch, core.Event{Type: core.EventTodoWrite, Seq: int64(i), Time: int64(i), Data: []byte(benchData)})
		if len(batch) == 100 {
			if err := st.AppendEvents(ctx, "big", batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		l, err := st.LoadSession(ctx, "big")
		if err != nil || len(l.Events) != n {
			b.Fatalf("LoadSession: %d events, %v", len(l.Events), err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/load")
}

// BenchmarkImportDsh imports a dsh session.jsonl.zstd of about 10,000
// events (streamed text packed into chunk rows, tool calls and results) in
// 100-event frames.
func BenchmarkImportDsh(b *testing.B) {
	ctx := context.Background()
	st := newTestStore(b)
	h := core.SessionHeader{ID: "dsh-bench", CreatedAt: 1}
	var events []core.Event
	add := func(typ, data string, op bool) {
		e := core.Event{Type: typ, Seq: int64(len(events)), Time: int64(len(events)), Data: []byte(data)}
		if op {
			e.SurfaceOp = core.AppendOp()
		}
		events = append(events, e)
	}
	for turn := 1; len(events) < 10000; turn++ {
		add(core.EventTurnStart, fmt.Sprintf(`{"turn":%d}`, turn), false)
		add(core.EventStepStart, fmt.Sprintf(`{"turn":%d,"step":1}`, turn), false)
		add(core.EventUserMessage, `{"id":"u","role":"user","content":[{"type":"text","text":"go"}],"source":{"kind":"user"}}`, true)
		for k := 0; k < 60; k++ {
			add(core.EventAssistantChunk, fmt.Sprintf(`{"turn":%d,"step":1,"chunk":{"type":"text-delta","index":0,"text":"token %d "}}`, turn, k), false)
		}
		add(core.EventAssistantMessage, fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"a","role":"assistant","content":[{"type":"tool-call","id":"c%d","name":"bash","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"}}}`, turn, turn), true)
		add(core.EventToolCall, fmt.Sprintf(`{"turn":%d,"step":1,"callId":"c%d","name":"bash","arguments":"{}"}`, turn, turn), false)
		add(core.EventToolResult, fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c%d","content":[{"type":"text","text":%q}],"isError":false}],"source":{"kind":"tool","callId":"c%d"}}}`, turn, turn, strings.Repeat("output line\n", 20), turn), true)
		events[len(events)-1].SourceEventSeqs = []int64{int64(len(events) - 2)}
		add(core.EventStepEnd, fmt.Sprintf(`{"turn":%d,"step":1}`, turn), false)
		add(core.EventTurnEnd, fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, turn), false)
	}
	var batches [][]core.Event
	for i := 0; i < len(events); i += 100 {
		batches = append(batches, events[i:min(i+100, len(events))])
	}
	data, err := dsh.AppendZstdLog(nil, h, batches)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "session.jsonl.zstd")
	os.WriteFile(path, data, 0o644)
	b.ResetTimer()
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := st.ImportFile(ctx, path)
		elapsed += time.Since(start)
		if err != nil || res[0].Added != len(events) {
			b.Fatalf("ImportFile: %+v %v", res, err)
		}
		b.StopTimer()
		if err := st.write(ctx, func(t *wtx) error {
			delete(t.w.cache, h.ID)
			_, err := t.tx.Exec("DELETE FROM sessions WHERE id = ?", h.ID)
			return err
		}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(len(events)*b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(len(data)), "file-bytes")
}
