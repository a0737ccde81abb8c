package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"prism/backend"
	"prism/core/compare"
	"prism/core/price"
	"prism/sources/dsh"
	"prism/views"
)

// runCompare compares two stored sessions call by call and prints the
// alignment, one line per pair (or JSON with --json). Like diff, it exits
// 0 when the sessions do not differ, 1 when they do, 2 on an error.
func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := dbFlag(fs)
	asJSON := fs.Bool("json", false, "print the comparison as JSON: both sessions' totals, every pair with both calls, the differences and notes")
	prices := fs.String("prices", os.Getenv("PRISM_PRICES"), "price table (as for serve): the totals show each session's cost (env PRISM_PRICES)")
	ids, err := parseInterspersed(fs, args)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if len(ids) != 2 {
		return fmt.Errorf("%w: prism compare [--db PATH] [--json] SESSION_A SESSION_B (got %d session ids)", errUsage, len(ids))
	}
	c, err := compareStored(ctx, *dbPath, *prices, ids[0], ids[1], stderr)
	if err != nil {
		fmt.Fprintf(stderr, "prism compare: %v\n", err)
		return exitError{code: 2}
	}
	bw := bufio.NewWriter(stdout)
	if *asJSON {
		enc := json.NewEncoder(bw)
		enc.SetIndent("", "  ")
		err = enc.Encode(c)
	} else {
		err = writeComparison(bw, c)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		fmt.Fprintf(stderr, "prism compare: writing the comparison: %v\n", err)
		return exitError{code: 2}
	}
	if c.Differences > 0 {
		return exitError{code: 1}
	}
	return nil
}

// compareStored reads sessions a and b from the store at dsn, folds each
// as its page does, and aligns their calls.
func compareStored(ctx context.Context, dsn, pricesFlag, a, b string, stderr io.Writer) (*compare.Comparison, error) {
	var table price.Table
	if pricesFlag != "" {
		var err error
		if table, err = loadPrices(pricesFlag); err != nil {
			return nil, fmt.Errorf("--prices: %w", err)
		}
	}
	if err := storeExists(dsn); err != nil {
		return nil, err
	}
	st, err := openStore(ctx, dsn, dsh.Limits{}, stderr)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	presenter, err := backend.Presenters(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return nil, err
	}
	var sides [2]compare.Side
	for i, id := range []string{a, b} {
		l, err := st.LoadSession(ctx, id)
		if err != nil {
			return nil, err // the store's error names the session
		}
		sides[i] = views.CompareSide(id, views.Fold(l.Info.Header, l.Events, presenter), table)
	}
	return compare.Compare(sides[0], sides[1], compare.Options{}), nil
}

// writeComparison prints a comparison as text: a line per session's
// totals, then one line per pair — its mark, tool and arguments (A's → B's
// when they differ) — then the notes and the count of differences.
func writeComparison(w io.Writer, c *compare.Comparison) error {
	for _, s := range []*compare.Side{&c.A, &c.B} {
		m := &s.Summary
		side := "A"
		if s == &c.B {
			side = "B"
		}
		fmt.Fprintf(w, "# %s %s: %d calls, %d errors, %d/%d tokens, %dms, %d files written", side, s.ID, m.Calls, m.Errors, m.InputTokens, m.OutputTokens, m.DurationMS, len(m.FilesWritten))
		if m.Cost != "" {
			fmt.Fprintf(w, ", cost %s", m.Cost)
		}
		fmt.Fprintln(w)
	}
	for i := range c.Pairs {
		p := &c.Pairs[i]
		switch {
		case p.A == nil:
			fmt.Fprintf(w, "%s\t%s\t%s\n", p.Mark, compareField(p.B.Tool), compare.ShortArgs(p.B, 100))
		case p.B == nil || p.Mark != compare.ArgsDiffer:
			fmt.Fprintf(w, "%s\t%s\t%s\n", p.Mark, compareField(p.A.Tool), compare.ShortArgs(p.A, 100))
		default:
			fmt.Fprintf(w, "%s\t%s\t%s → %s\n", p.Mark, compareField(p.A.Tool), compare.ShortArgs(p.A, 60), compare.ShortArgs(p.B, 60))
		}
	}
	for _, n := range c.Notes {
		fmt.Fprintf(w, "# note: %s\n", n)
	}
	noun := "differences"
	if c.Differences == 1 {
		noun = "difference"
	}
	_, err := fmt.Fprintf(w, "# %d %s in %d pairs\n", c.Differences, noun, len(c.Pairs))
	return err
}

// compareField makes a tool name one printable field.
func compareField(s string) string {
	c := compare.Call{Args: s}
	return compare.ShortArgs(&c, 80)
}
