// Package memrelease is prism's one policy for handing freed memory back
// to the operating system. After a burst that held a lot of heap — an
// import (its decoded events, up to its memory budget), a crowd of share
// readers leaving — the Go runtime keeps the freed pages until its
// background scavenger gets to them, so an idle server would sit at the
// burst's peak for minutes. debug.FreeOSMemory returns them at once, but
// it is a full, forced collection: run after every imported file it was a
// fifth of a multi-file import's time.
//
// So a burst's end calls Release, which runs debug.FreeOSMemory at most
// once per Interval for the whole process: the first request at once (in
// the background), a request within the interval deferred to its end — so
// the last burst's memory is returned too, at most Interval later — and
// requests while one is deferred folded into it.
package memrelease

import (
	"runtime/debug"
	"sync"
	"time"
)

// Interval is the shortest time between two releases.
const Interval = 10 * time.Second

// Releaser rate-limits debug.FreeOSMemory (see the package doc). Its zero
// value is ready; the process shares Default.
type Releaser struct {
	// Interval is the shortest time between two releases (0: Interval).
	Interval time.Duration
	// free is what a release runs (nil: debug.FreeOSMemory); tests count.
	free func()

	mu      sync.Mutex
	last    time.Time
	pending bool
}

// Default is the process's Releaser: imports and share hubs ask it.
var Default = &Releaser{}

// Release asks Default for a release.
func Release() { Default.Release() }

// Release returns freed memory to the operating system now (in the
// background) if the last release is Interval old, or else once the
// interval is over; it never blocks.
func (r *Releaser) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending {
		return
	}
	every := r.Interval
	if every <= 0 {
		every = Interval
	}
	wait := time.Until(r.last.Add(every))
	if wait <= 0 {
		r.last = time.Now()
		go r.run()
		return
	}
	r.pending = true
	time.AfterFunc(wait, func() {
		r.mu.Lock()
		r.pending = false
		r.last = time.Now()
		r.mu.Unlock()
		r.run()
	})
}

func (r *Releaser) run() {
	if r.free != nil {
		r.free()
		return
	}
	debug.FreeOSMemory()
}
