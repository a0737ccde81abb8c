package web

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"prism/core"
)

// TestBroker_QueueBoundedInBytes: a subscriber that reads nothing holds at
// most maxQueuedBytes of frames, however many its queue could count: past
// the bound it lags (counted), is kicked, takes no more frames, and is
// caught up with one coalesced frame once it reads again.
func TestBroker_QueueBoundedInBytes(t *testing.T) {
	src := &logSource{h: core.SessionHeader{ID: "s"}}
	src.add(core.EventTurnStart, core.TurnStart{Turn: 1})
	src.add(core.EventStepStart, core.StepBoundary{Turn: 1, Step: 1})
	b := newBroker(src, genericPresenter{}, Tuning{Buffer: 1024, FrameInterval: time.Millisecond}.withDefaults(), slog.New(slog.DiscardHandler))
	defer b.Close()
	ctx := context.Background()
	h, slow, at, err := b.subscribe(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	_, fast, _, _ := b.subscribe(ctx, "s")
	big := strings.Repeat("x", 16<<10) // each frame carries ~5 KiB of it (the card shows the start)
	const n = 100                      // ~470 KiB in all: past the bound, well within the 1,024 frames the queue counts
	cursor := at
	for i := range n {
		id := fmt.Sprintf("c%03d", i)
		call := src.add(core.EventToolCall, core.ToolCall{Turn: 1, Step: 1, CallID: id, Name: "x", Arguments: "{}"})
		result := src.add(core.EventToolResult, core.ToolResultData{Turn: 1, Step: 1, Message: core.NewToolResultMessage("m"+id, id, core.Text(big), false)})
		b.Publish("s", []core.Event{call, result})
		select {
		case f := <-fast.ch:
			fast.queued.Add(-int64(len(f.data)))
			cursor = f.seq
		case <-time.After(5 * time.Second):
			t.Fatalf("fast subscriber stuck at %d", cursor)
		}
	}
	select {
	case <-slow.kick:
	case <-time.After(5 * time.Second):
		t.Fatal("the subscriber past its byte bound was never kicked")
	}
	h.mu.Lock()
	lagged := slow.lagged
	h.mu.Unlock()
	held := 0
	for len(slow.ch) > 0 {
		held += len((<-slow.ch).data)
	}
	if !lagged || held > maxQueuedBytes || held == 0 || int64(held) != slow.queued.Load() {
		t.Errorf("lagged %v, %d bytes queued (counted %d); want lagging with at most %d", lagged, held, slow.queued.Load(), maxQueuedBytes)
	}
	if d := b.stats.dropped.Load(); d != 1 {
		t.Errorf("%d subscribers counted past their bound, want 1", d)
	}
	if fast.queued.Load() != 0 {
		t.Errorf("the reading subscriber counts %d bytes queued, want 0", fast.queued.Load())
	}
	// It reads again: one catch-up frame from where it stood.
	upTo, _ := h.resync(slow)
	frames, err := h.renderRange(ctx, at, upTo)
	if err != nil || len(frames) != 1 || upTo != cursor {
		t.Fatalf("catch-up: %d frames to %d (hub at %d), %v", len(frames), upTo, cursor, err)
	}
	if slow.queued.Load() != 0 {
		t.Errorf("after resync %d bytes counted queued, want 0", slow.queued.Load())
	}
}
