// Package enginebench holds the benchmarks that put prism's two store
// engines side by side in one run (its tests only): durable appends on
// SQLite and on PostgreSQL (one node and two nodes on one database), and
// append → patch latency with 100 subscribers, on the committing node for
// SQLite and on another node for PostgreSQL. See BENCHMARKS.md, "Engines side by side".
package enginebench
