package memrelease

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestReleaseIsRateLimited: the first request releases at once; requests
// within the interval fold into one release at its end; none is lost.
func TestReleaseIsRateLimited(t *testing.T) {
	var n atomic.Int32
	r := &Releaser{Interval: 200 * time.Millisecond, free: func() { n.Add(1) }}
	r.Release()
	waitFor(t, &n, 1)
	for range 50 {
		r.Release()
	}
	time.Sleep(50 * time.Millisecond)
	if got := n.Load(); got != 1 {
		t.Fatalf("%d releases within the interval, want 1 (the rest deferred)", got)
	}
	waitFor(t, &n, 2)
	time.Sleep(300 * time.Millisecond)
	if got := n.Load(); got != 2 {
		t.Errorf("%d releases in all, want 2: the 50 requests within the interval are one release at its end", got)
	}
}

func waitFor(t *testing.T, n *atomic.Int32, want int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("%d releases, want %d", n.Load(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
