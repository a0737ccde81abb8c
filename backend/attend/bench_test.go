package attend_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/core/attention"
	"prism/core/coretest"
	"prism/db"
	"prism/store/storetest"
)

// benchRules are 50 rules of every kind but budget's usd.
func benchRules(b *testing.B) []attention.Rule {
	var text strings.Builder
	kinds := []string{
		"when = \"pending\"\nfor = \"2m\"\ntools = [\"bash\"]",
		"when = \"approval-waiting\"\nfor = \"1m\"",
		"when = \"loop\"\ncount = 5",
		"when = \"error-streak\"\ncount = 4",
		"when = \"budget\"\ntokens = 100000000\nper = \"turn\"",
		"when = \"idle\"\nfor = \"5m\"",
		"when = \"query\"\nquery = 'tool:bash \"rm -rf\"'",
		"when = \"query\"\nquery = 'error:TOOL_TIMEOUT OR panic'",
	}
	for i := range 50 {
		fmt.Fprintf(&text, "[[rule]]\nname = \"r%d\"\n%s\n", i, kinds[i%len(kinds)])
	}
	rs, err := attention.Parse("bench.toml", []byte(text.String()), attention.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return rs.Rules
}

// benchTurn is a turn of 20 calls: a call, its result, an assistant
// message each (62 events).
func benchTurn(seq0 int64) []core.Event {
	bld := coretest.NewBuilder(0).TurnStart().StepStart()
	for i := range 20 {
		id := fmt.Sprintf("c%d", i)
		bld.Assistant("", [3]string{id, "read", fmt.Sprintf(`{"path":"f%d.go"}`, i)})
		bld.Call(id, "read", fmt.Sprintf(`{"path":"f%d.go"}`, i)).Result(id, "package main\nfunc main() {}", i%7 == 0, nil, nil)
	}
	for i := range bld.Events {
		bld.Events[i].Seq += seq0
	}
	return bld.Events
}

// BenchmarkRuleEvaluation measures the evaluation of 50 rules per
// committed event (ns/event), and beside it, in the same run, the SQLite
// append of the same events in batches of one turn (ns/event).
func BenchmarkRuleEvaluation(b *testing.B) {
	rules := benchRules(b)
	b.Run("evaluate-50-rules", func(b *testing.B) {
		ev := attention.NewEvaluator(rules, nil)
		now := time.Unix(0, 0)
		turn := benchTurn(0)
		events := 0
		for b.Loop() {
			events += len(turn)
			ev.Forget("s")
			ev.Observe("s", turn, now)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
	})
	b.Run("append-sqlite", func(b *testing.B) {
		st, err := db.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), db.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		storetest.MustCreate(b, st, "s")
		base := benchTurn(0)
		turn := make([]core.Event, len(base))
		events, seq := 0, int64(0)
		for b.Loop() {
			for i := range base {
				turn[i] = base[i]
				turn[i].Seq += seq
			}
			seq += int64(len(turn))
			events += len(turn)
			if err := st.AppendEvents(context.Background(), "s", turn); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
	})
}
