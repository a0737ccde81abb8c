package store

import (
	"context"
	"fmt"
	"time"

	"prism/core"
	"prism/core/sessionlog"
)

// ImportRetryAfter is what a busy import answer suggests waiting.
const ImportRetryAfter = 5 * time.Second

// DefaultMaxImports is how many imports decode at once when a store's
// options do not say.
const DefaultMaxImports = 2

// BusyError refuses work the store has no capacity for right now (every
// import slot is taken). It is coded core.CodeUnavailable; RetryAfter says
// when to try again (HTTP answers 503 with a Retry-After header).
type BusyError struct {
	Message string
	After   time.Duration
}

func (e *BusyError) Error() string { return e.Message }

// ErrorName returns "BusyError".
func (e *BusyError) ErrorName() string { return "BusyError" }

// ErrorCode returns core.CodeUnavailable.
func (e *BusyError) ErrorCode() string { return core.CodeUnavailable }

// RetryAfter returns how long to wait before trying again.
func (e *BusyError) RetryAfter() time.Duration { return e.After }

// ImportSlots bound the imports one process decodes at once: with the
// decoder's memory budget (sessionlog.Limits) they bound the memory
// imports take.
type ImportSlots chan struct{}

// NewImportSlots returns n slots (DefaultMaxImports when n ≤ 0).
func NewImportSlots(n int) ImportSlots {
	if n <= 0 {
		n = DefaultMaxImports
	}
	return make(ImportSlots, n)
}

// Acquire takes a slot. With wait unset it fails at once with a
// *BusyError when none is free; with wait set it waits for one (until ctx
// ends). release gives the slot back.
func (s ImportSlots) Acquire(ctx context.Context, wait bool) (release func(), err error) {
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	default:
	}
	if !wait {
		return nil, &BusyError{After: ImportRetryAfter, Message: fmt.Sprintf(
			"the server is already importing %d files (its limit of concurrent imports); try again in a few seconds", cap(s))}
	}
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// CheckParent refuses a subagent log whose parent session is neither in
// the same file (inFile holds the file's session ids) nor stored (exists
// asks the store): it would be an orphan no page links to.
func CheckParent(file string, l *sessionlog.Log, inFile map[string]bool, exists func(id string) (bool, error)) error {
	parent := l.Header.ParentSession
	if parent == "" || inFile[parent] {
		return nil
	}
	ok, err := exists(parent)
	if err != nil || ok {
		return err
	}
	where := file
	if l.Entry != "" {
		where += ": " + l.Entry
	}
	return core.Errorf(core.CodeInvalid,
		"%s: session %s is a subagent of session %s, which is neither in this file nor in the store; import the parent session first (or dsh's export .zip, which holds the whole family); nothing was imported",
		where, l.Header.ID, parent)
}
