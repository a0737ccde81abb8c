package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"prism/sources/dsh"
)

// runDelete deletes sessions for good: their events, share links and
// subagent sessions. It prints what it removed, one line per session.
func runDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("delete", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := dbFlag(fs)
	ids, err := parseInterspersed(fs, args)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if len(ids) == 0 {
		//lint:ignore ST1005 a usage synopsis ends in "..." for a repeated operand
		return fmt.Errorf("%w: prism delete [--db PATH] SESSION_ID...", errUsage)
	}
	if err := storeExists(*dbPath); err != nil {
		return err
	}
	st, err := openStore(ctx, *dbPath, dsh.Limits{}, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	failed := 0
	for _, id := range ids {
		d, err := st.DeleteSession(ctx, id)
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "prism delete: %v\n", err)
			continue
		}
		fmt.Fprintf(stdout, "%s\tdeleted\t%d events, %d share links, %d subagent sessions\n", d.SessionID, d.Events, d.Shares, len(d.Subagents))
	}
	if failed > 0 {
		return exitError{code: 1}
	}
	return nil
}
