package prismtest

import (
	"bytes"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// T0 is when every prismtest session starts: 2026-01-01T00:00:00Z (epoch
// ms). Its events are T0 plus Tick per event, so cards and pages show the
// same times on every run.
const T0 int64 = 1767225600000

// Tick is how far the clock of a prismtest session advances per event.
const Tick = 10 * time.Millisecond

// stepClock is a deterministic clock: each reading is Tick after the
// previous one, starting at T0. Sessions read it once per appended event.
type stepClock struct{ n atomic.Int64 }

func (c *stepClock) now() time.Time {
	return time.UnixMilli(T0).Add(time.Duration(c.n.Add(1)-1) * Tick).UTC()
}

// testLogger returns a logger writing through t.Log (shown when the test
// fails or runs with -v), at level and above. It goes quiet once the test's
// cleanups have run, so a late log line never panics the test binary.
func testLogger(t testing.TB, level slog.Level) *slog.Logger {
	w := &tWriter{t: t}
	t.Cleanup(func() { w.done.Store(true) })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

type tWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done atomic.Bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	if w.done.Load() {
		return len(p), nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}
