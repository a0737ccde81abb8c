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
	"sync/atomic"
	"testing"

	"prism/internal/pgcluster"
)

var (
	cluster  *pgcluster.Cluster
	startErr error
	dbSeq    atomic.Int64
)

// Main runs a test package with a PostgreSQL cluster started before and
// stopped after its tests: call it as os.Exit(pgtest.Main(m)) from
// TestMain.
func Main(m *testing.M) int {
	cluster, startErr = pgcluster.Start(context.Background(), pgcluster.Options{Fast: true})
	code := m.Run()
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: stop:", err)
		}
	}
	return code
}

// Durable is Main with a cluster that fsyncs (benchmarks).
func Durable(m *testing.M) int {
	cluster, startErr = pgcluster.Start(context.Background(), pgcluster.Options{})
	code := m.Run()
	if cluster != nil {
		cluster.Stop() //nolint:errcheck
	}
	return code
}

// Cluster returns the package's cluster (failing tb if it did not start).
func Cluster(tb testing.TB) *pgcluster.Cluster {
	tb.Helper()
	if startErr != nil {
		tb.Fatalf("PostgreSQL: %v", startErr)
	}
	if cluster == nil {
		tb.Fatalf("PostgreSQL: no cluster; call os.Exit(pgtest.Main(m)) from the package's TestMain")
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
