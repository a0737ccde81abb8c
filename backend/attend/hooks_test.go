package attend_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"prism/backend/attend"
	"prism/core/attention"
)

// TestHookRetriesThenGivesUp: a receiver answering 500 gets the first
// attempt and every retry, each signed and with the same delivery id;
// then the delivery is given up and says so.
func TestHookRetriesThenGivesUp(t *testing.T) {
	rcv := newReceiver(t, http.StatusInternalServerError)
	h := attend.NewHooks(attention.Webhook{URL: rcv.srv.URL, Secret: "k", Timeout: 5 * time.Second, Retries: 2}, slog.New(slog.DiscardHandler), attend.HookOptions{Backoff: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	h.Enqueue(attend.Payload{ID: "n1", Rule: "stuck", Session: "s"})
	for i := 0; i < 3; i++ {
		p := <-rcv.got
		if p.id != "n1" || p.sig != attend.Sign("k", p.body) {
			t.Fatalf("attempt %d: delivery %q signature %q", i+1, p.id, p.sig)
		}
	}
	// n1's record is written before the next delivery starts: once n2
	// reaches the receiver, it is there.
	h.Enqueue(attend.Payload{ID: "n2"})
	<-rcv.got
	got := h.Recent()
	if len(got) != 1 {
		t.Fatalf("recent = %+v, want n1's record", got)
	}
	d := got[0]
	if d.OK || d.Attempts != 3 || d.Status != 500 || !strings.Contains(d.Error, "gave up after 3 attempts") {
		t.Fatalf("delivery = %+v", d)
	}
}

// TestHookQueueDropsTheOldest: a queue that is full drops its oldest
// delivery and counts it; Enqueue never waits.
func TestHookQueueDropsTheOldest(t *testing.T) {
	h := attend.NewHooks(attention.Webhook{URL: "http://127.0.0.1:1/x", Timeout: time.Second}, slog.New(slog.DiscardHandler), attend.HookOptions{Queue: 3})
	for i := range 10_000 {
		h.Enqueue(attend.Payload{ID: string(rune('a' + i%26))})
	}
	if h.Dropped() != 10_000-3 || h.Queued() != 3 {
		t.Fatalf("dropped %d queued %d", h.Dropped(), h.Queued())
	}
}
