package store

import (
	"time"

	"prism/core"
)

// UnavailableRetryAfter is what an answer refused because the store was
// unreachable suggests waiting.
const UnavailableRetryAfter = 5 * time.Second

// StoreUnreachableReason is what prism says of a session whose turn was
// closed because its store could not be reached (a database outage): the
// reason of the repair's turn/end{interrupted}, shown on its page.
const StoreUnreachableReason = "the store was unreachable"

// UnavailableError says the store could not be reached: its database is
// down, restarting, or the connection to it broke. It is coded
// core.CodeUnavailable, and RetryAfter says when to try again (HTTP
// answers 503 with a Retry-After header). Its Error names the operation
// and the cause (for logs); PublicMessage leaves the cause out (it may
// name the database's address), for answers to clients.
type UnavailableError struct {
	Op  string // what was being done, e.g. "claim session X"
	Err error  // the driver's error
}

func (e *UnavailableError) Error() string {
	if e.Err == nil {
		return e.Op + ": the store is unreachable"
	}
	return e.Op + ": the store is unreachable: " + e.Err.Error()
}

// PublicMessage is the error's text without the driver's cause.
func (e *UnavailableError) PublicMessage() string {
	return e.Op + ": the session store is unreachable; try again shortly"
}

// ErrorName returns "StoreUnavailableError".
func (e *UnavailableError) ErrorName() string { return "StoreUnavailableError" }

// ErrorCode returns core.CodeUnavailable.
func (e *UnavailableError) ErrorCode() string { return core.CodeUnavailable }

// RetryAfter returns UnavailableRetryAfter.
func (e *UnavailableError) RetryAfter() time.Duration { return UnavailableRetryAfter }

// Unwrap returns the driver's error.
func (e *UnavailableError) Unwrap() error { return e.Err }
