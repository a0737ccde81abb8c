package backend_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/db"
	"prism/views"
)

// BenchmarkEventToFrame follows one tool call's events the whole live way,
// as the loop, the store and the pages' hub handle them: the loop appends
// tool/call and tool/result (typed data) to a core.Session and syncs; the
// SQLite store commits them, computing the session's summary row; the
// commit hook hands them to a views.Timeline through the Coalescer; each
// update is rendered as the SSE patches. synchronous=NORMAL keeps the
// fsync out of the figure: it measures the CPU of the path, where the JSON
// passes over each event are spent; cpu-µs/op is the process's CPU time
// per call, the figure a busy machine disturbs least. The result carries 40 lines of text
// and a meta object, like a read of a small file.
//
// store=checked is the live path: the session hands the store what it knows
// (core.CheckedStore), so each event's JSON is walked twice on the way — the
// session's encoding and the fold's decode. store=plain hides AppendChecked,
// so the store checks each event's data again and decodes it for the
// summary and call id: the four walks the path took before.
func BenchmarkEventToFrame(b *testing.B) {
	b.Run("store=checked", func(b *testing.B) { benchEventToFrame(b, true) })
	b.Run("store=plain", func(b *testing.B) { benchEventToFrame(b, false) })
}

// plainStore is a store that offers a session only core.EventStore.
type plainStore struct{ core.EventStore }

func benchEventToFrame(b *testing.B, checked bool) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	reg, err := backend.Presenters(quiet)
	if err != nil {
		b.Fatal(err)
	}
	var committed []core.Event
	st, err := db.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), db.Options{Logger: quiet, SyncNormal: true,
		Committed: func(c db.Commit) { committed = append(committed, c.Events...) }})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var store core.EventStore = st
	if !checked {
		store = plainStore{st}
	}
	sess, err := core.NewSession(ctx, core.SessionHeader{Cwd: "/work"}, core.SessionOptions{Store: store, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	tl := views.NewTimeline(sess.Header(), reg)
	var co views.Coalescer
	frames := 0
	emit := func(u views.Update) error {
		patches, err := views.RenderUpdate(ctx, tl, u)
		frames += len(patches)
		return err
	}
	drain := func() {
		for i := range committed {
			if err := co.Apply(tl, &committed[i], emit); err != nil {
				b.Fatal(err)
			}
		}
		committed = committed[:0]
	}
	mustAppend := func(typ string, data any, opts core.AppendOptions) core.Event {
		e, err := sess.Append(ctx, typ, data, opts)
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	mustAppend(core.EventTurnStart, core.TurnStart{Turn: 1}, core.AppendOptions{})
	mustAppend(core.EventStepStart, core.StepBoundary{Turn: 1, Step: 1}, core.AppendOptions{})
	if err := sess.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	drain()

	var text strings.Builder
	lines := make([]map[string]any, 40)
	for i := range lines {
		line := "\tfmt.Println(\"line <" + strings.Repeat("x", i%7) + ">\")"
		lines[i] = map[string]any{"number": i + 1, "text": line}
		text.WriteString(line + "\n")
	}
	meta, err := core.Snapshot(map[string]any{"path": "/work/main.go", "offset": 1, "totalLines": 40, "lang": "go", "lines": lines})
	if err != nil {
		b.Fatal(err)
	}
	content := core.Text(text.String())
	b.ReportAllocs()
	n := 0
	cpu0 := coretest.CPUTime(b)
	for b.Loop() {
		n++
		id := "call-" + strings.Repeat("7", n%5+1) + string(rune('a'+n%26))
		call := mustAppend(core.EventToolCall, core.ToolCall{Turn: 1, Step: 1, CallID: id, Name: "read",
			Arguments: `{"file_path":"main.go","limit":40}`}, core.AppendOptions{})
		mustAppend(core.EventToolResult, core.ToolResultData{Turn: 1, Step: 1,
			Message: core.NewToolResultMessage("r-"+id, id, content, false), Meta: meta},
			core.AppendOptions{SurfaceOp: core.AppendOp(), SourceEventSeqs: []int64{call.Seq}})
		if err := sess.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		drain()
	}
	cpu := coretest.CPUTime(b) - cpu0
	if frames == 0 {
		b.Fatal("no frame was rendered")
	}
	b.ReportMetric(float64(frames)/float64(n), "patches/op")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/op")
}
