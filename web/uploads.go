package web

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"prism/core"
)

// How an import upload is received: its body is first spooled to a
// temporary file (at most Tuning.MaxImportBytes), and only then handed to
// the Importer, which takes one of the store's import slots for the
// decode. A slow client therefore holds a temporary file and a connection,
// never a slot. And it must keep up a minimum rate (Tuning.ImportMinRate
// bytes a second, averaged over each Tuning.ImportRateWindow): an upload
// that falls below it is cut, answered 408, and its connection closed.

// Clock is the time of the server's upload rate check: AfterFunc as
// time.AfterFunc (stop as Timer.Stop). Tuning.Clock nil is the real clock;
// tests step a fake one.
type Clock interface {
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// realClock is the wall clock.
type realClock struct{}

// AfterFunc implements Clock with time.AfterFunc.
func (realClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// rateGuard cuts a body that arrives slower than min bytes a second,
// averaged over each window: at the end of every window since the body
// began it checks what the window brought, and if that is less than
// min×window (and the body is not complete) it calls cut.
type rateGuard struct {
	clock  Clock
	min    int64
	window time.Duration
	cut    func()

	mu      sync.Mutex
	inWin   int64 // bytes received in the current window
	total   int64
	done    bool // the body is complete, or the guard stopped
	slow    bool // the guard cut the body
	lastWin int64
	stop    func() bool
}

// newRateGuard starts checking; it calls cut (from the clock's timer
// goroutine) when the rate falls below min.
func newRateGuard(clock Clock, min int64, window time.Duration, cut func()) *rateGuard {
	g := &rateGuard{clock: clock, min: min, window: window, cut: cut}
	g.mu.Lock()
	g.stop = clock.AfterFunc(window, g.check)
	g.mu.Unlock()
	return g
}

// add counts n received bytes.
func (g *rateGuard) add(n int) {
	g.mu.Lock()
	g.inWin += int64(n)
	g.total += int64(n)
	g.mu.Unlock()
}

// check ends one window: too few bytes cut the body, else the next
// window begins.
func (g *rateGuard) check() {
	g.mu.Lock()
	if g.done {
		g.mu.Unlock()
		return
	}
	need := g.min * int64(g.window) / int64(time.Second)
	if g.inWin < need {
		g.slow, g.done, g.lastWin = true, true, g.inWin
		g.mu.Unlock()
		g.cut()
		return
	}
	g.inWin = 0
	g.stop = g.clock.AfterFunc(g.window, g.check)
	g.mu.Unlock()
}

// finish stops the checks (the body is complete, or the handler is done).
func (g *rateGuard) finish() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = true
	if g.stop != nil {
		g.stop()
	}
}

// failure is the 408 of a body the guard cut, or nil.
func (g *rateGuard) failure() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.slow {
		return nil
	}
	return core.Errorf(core.CodeTimeout,
		"the upload was too slow: it must arrive at %s/s or more, averaged over %s, and brought %s in its last %s (%s in all); the connection is closed",
		byteSize(g.min), g.window, byteSize(g.lastWin), g.window, byteSize(g.total))
}

// spoolUpload copies an upload's body to a temporary file (the body is
// bounded in size and rate by its bodyGuard) and returns it rewound; the
// caller closes and removes it. A body that broke its bounds fails with
// failure's 413 or 408; one that does not arrive whole, 400.
func spoolUpload(body io.Reader, failure func() error) (*os.File, error) {
	f, err := os.CreateTemp("", "prism-upload-*")
	if err != nil {
		return nil, fmt.Errorf("spool the upload: %w", err)
	}
	fail := func(err error) (*os.File, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	rr := &readErr{r: body}
	if _, err := io.Copy(f, rr); err != nil {
		if ferr := failure(); ferr != nil {
			return fail(ferr)
		}
		if rr.err == nil { // the temporary file's fault, not the client's
			return fail(fmt.Errorf("spool the upload: %w", err))
		}
		var coded core.Coded
		if errors.As(rr.err, &coded) {
			return fail(rr.err)
		}
		return fail(core.Errorf(core.CodeInvalid, "the upload did not arrive whole: %v", rr.err))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(fmt.Errorf("spool the upload: %w", err))
	}
	return f, nil
}

// readErr remembers the error its reader failed with (other than io.EOF).
type readErr struct {
	r   io.Reader
	err error
}

// Read implements io.Reader.
func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return n, err
}
