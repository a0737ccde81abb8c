package web

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// manualClock is a Clock whose one pending timer runs when the test says.
type manualClock struct {
	mu    sync.Mutex
	now   time.Time
	f     func()
	armed int
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.f = f
	c.armed++
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := c.f != nil
		c.f = nil
		return was
	}
}

// fire moves the clock to the pending timer and runs it.
func (c *manualClock) fire(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	f := c.f
	c.f = nil
	c.mu.Unlock()
	if f != nil {
		f()
	}
}

// TestRateGuard: an upload that brings min×window bytes in every window
// goes on from window to window; the first window that brings less cuts
// it, and its failure says the rate, the window and what came; a finished
// body is never cut.
func TestRateGuard(t *testing.T) {
	const window = 10 * time.Second
	clock := &manualClock{}
	cuts := 0
	g := newRateGuard(clock, 16<<10, window, func() { cuts++ })
	for w := range 3 {
		g.add(100 << 10)
		g.add(60 << 10) // 160 KiB: exactly the minimum
		clock.fire(window)
		if cuts != 0 || g.failure() != nil || clock.armed != w+2 {
			t.Fatalf("window %d at the minimum rate: cut %d, failure %v, %d timers armed", w, cuts, g.failure(), clock.armed)
		}
	}
	g.add(160<<10 - 1)
	clock.fire(window)
	if cuts != 1 {
		t.Fatalf("a window 1 byte short: %d cuts, want 1", cuts)
	}
	err := g.failure()
	if err == nil || !strings.Contains(err.Error(), "it must arrive at 16 KiB/s or more, averaged over 10s, and brought 163839 bytes in its last 10s (655359 bytes in all)") {
		t.Errorf("failure = %v", err)
	}
	clock.fire(window)
	if cuts != 1 || clock.armed != 4 {
		t.Errorf("after the cut: %d cuts, %d timers armed; want no more of either", cuts, clock.armed)
	}

	done := newRateGuard(clock, 16<<10, window, func() { cuts++ })
	done.add(10)
	done.finish()
	clock.fire(window)
	if cuts != 1 || done.failure() != nil {
		t.Errorf("a finished body was cut (%d cuts, %v)", cuts, done.failure())
	}
}
