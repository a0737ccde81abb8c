package storetest

import (
	"context"
	"fmt"
	"testing"

	"prism/core"
)

// SeedList creates n sessions for a list benchmark, each with a header as
// a real one reads (a working directory, every third a subagent child of
// the one before, with its origin and depth) and one turn of TurnEvents,
// so its row has a title, a status and counters.
func SeedList(tb testing.TB, st core.EventStore, n int) {
	tb.Helper()
	ctx := context.Background()
	depth := int64(1)
	for i := range n {
		h := core.SessionHeader{ID: fmt.Sprintf("list-%05d", i), CreatedAt: 1764500000000 + int64(i)*1000,
			Cwd: fmt.Sprintf("/home/alice/src/github.com/example/project-%d/services/api", i%17)}
		if i%3 == 2 {
			h.ParentSession, h.Origin, h.DelegationDepth = fmt.Sprintf("list-%05d", i-1), core.OriginSubagent, &depth
		}
		if err := st.CreateSession(ctx, h); err != nil {
			tb.Fatalf("CreateSession(%s): %v", h.ID, err)
		}
		events := TurnEvents(0, 1, i%5 == 0)
		for k := range events {
			events[k].Time = h.CreatedAt + int64(k)
		}
		if err := st.AppendEvents(ctx, h.ID, events); err != nil {
			tb.Fatalf("AppendEvents(%s): %v", h.ID, err)
		}
	}
}
