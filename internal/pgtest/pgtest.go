// Package pgtest gives tests a real PostgreSQL server: Main (from a test
// package's TestMain) starts one throwaway cluster for the package, and DB
// gives each test a fresh database in it. There is no skip: without
// PostgreSQL the tests fail and say how to install it (`make test` does).
package pgtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"prism/internal/pgcluster"
)

var (
	once     sync.Once
	opts     pgcluster.Options
	cluster  *pgcluster.Cluster
	startErr error
	dbSeq    atomic.Int64
)

// Main runs a test package with a PostgreSQL cluster, started when a test
// first asks for it (a run that selects no such test starts none) and
// stopped after the tests: call it as os.Exit(pgtest.Main(m)) from
// TestMain.
func Main(m *testing.M) int { return run(m, pgcluster.Options{Fast: true}) }

// Durable is Main with a cluster that fsyncs (benchmarks).
func Durable(m *testing.M) int { return run(m, pgcluster.Options{}) }

func run(m *testing.M, o pgcluster.Options) int {
	opts = o
	code := m.Run()
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: stop:", err)
		}
	}
	return code
}

// Cluster returns the package's cluster, starting it on first use
// (failing tb if it does not start).
func Cluster(tb testing.TB) *pgcluster.Cluster {
	tb.Helper()
	once.Do(func() { cluster, startErr = pgcluster.Start(context.Background(), opts) })
	if startErr != nil {
		tb.Fatalf("PostgreSQL: %v", startErr)
	}
	return cluster
}

// DB creates a fresh, empty database for one test and returns its URL.
func DB(tb testing.TB) string {
	tb.Helper()
	c := Cluster(tb)
	name := fmt.Sprintf("t%d_%s", dbSeq.Add(1), sanitize(tb.Name()))
	url, err := c.CreateDatabase(context.Background(), name)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return url
}

// sanitize makes a test name part of a database name (at most 63 bytes in
// all).
func sanitize(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= 40 {
			break
		}
	}
	return b.String()
}
