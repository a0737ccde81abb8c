package coretest

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime returns the process's CPU time (user and system, garbage
// collection included). Benchmarks report it per op beside ns/op: on a
// shared, busy machine it is disturbed far less than the wall time.
func CPUTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
