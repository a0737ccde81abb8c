package web

import (
	"fmt"
	"testing"

	"prism/core/coretest"
)

// BenchmarkAliasEvents names a link's four children in a 500-step
// session (about 4,500 events, 1,500 of them streamed chunks, the model
// repeating a child's id across chunk boundaries and in call results):
// the cost a link made with its children pays per load of its log.
func BenchmarkAliasEvents(b *testing.B) {
	ids := []string{"zqkid-1a2b3c4d", "zqkid-5e6f7a8b", "zqkid-9c0d1e2f", "zqkid-3a4b5c6d"}
	aliases := map[string]string{}
	for i, id := range ids {
		aliases[id] = fmt.Sprintf("child-%d", i+1)
	}
	bl := coretest.NewBuilder(1767225600000)
	bl.TurnStart()
	for i := range 500 {
		id := ids[i%len(ids)]
		call := fmt.Sprintf("c%d", i)
		bl.StepStart().
			Chunks("Subagent "+id[:7], id[7:]+" is ", "still counting the lines of greet.go.").
			Call(call, "read", `{"file_path":"greet/greet.go"}`).
			Result(call, "Started subagent "+id+" in the background.", false, map[string]any{"child": id}, nil).
			StepEnd()
	}
	events := bl.Events
	b.ReportMetric(float64(len(events)), "events")
	b.ReportAllocs()
	for b.Loop() {
		_ = aliasEvents(events, aliases)
	}
}
