package web

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"prism/core"
)

// unreachable is an error as a store reports an unreachable database: a
// cause naming its address, a public message without it, a retry delay.
type unreachable struct{ cause error }

func (e *unreachable) Error() string {
	return "claim session s: the store is unreachable: " + e.cause.Error()
}
func (e *unreachable) PublicMessage() string {
	return "claim session s: the session store is unreachable; try again shortly"
}
func (e *unreachable) ErrorCode() string         { return core.CodeUnavailable }
func (e *unreachable) ErrorName() string         { return "StoreUnavailableError" }
func (e *unreachable) RetryAfter() time.Duration { return 5 * time.Second }
func (e *unreachable) Unwrap() error             { return e.cause }

// TestUnreachableStoreAnswer: an unreachable store, however wrapped, is a
// 503 whose message says so without the driver's cause (it names the
// database's address).
func TestUnreachableStoreAnswer(t *testing.T) {
	err := fmt.Errorf("start session: %w", &unreachable{cause: errors.New("dial tcp 10.0.0.7:5432: connect: connection refused")})
	status := statusOf(err)
	msg := messageOf(err, status)
	if status != http.StatusServiceUnavailable || codeOf(err, status) != core.CodeUnavailable {
		t.Errorf("status %d code %s, want 503 UNAVAILABLE", status, codeOf(err, status))
	}
	if !strings.Contains(msg, "unreachable") || strings.Contains(msg, "10.0.0.7") {
		t.Errorf("message %q, want it to say the store is unreachable without its address", msg)
	}
}
