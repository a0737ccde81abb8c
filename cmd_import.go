package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"prism/sources/watch"
	"prism/store"
)

// runImport imports session logs into the store: prism JSONL, dsh
// session.jsonl, session.jsonl.zstd or a dsh export .zip. It prints one
// line per session of each file — its id, what happened (created,
// unchanged, extended, replaced) and its events — and notes on stderr a
// torn tail that was ignored, a crash repair, a replacement (with the share
// links it revoked). --as imports a one-session file under another id;
// --replace lets a file replace a stored session whose log differs. Each
// file is one transaction: a file that fails changes nothing, is reported,
// and the others still import (exit status 1 if any failed).
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := dbFlag(fs)
	var o store.ImportOptions
	fs.StringVar(&o.As, "as", "", "import the file's one session under this id")
	fs.BoolVar(&o.Replace, "replace", false, "replace a stored session whose log differs (revokes its share links)")
	mem := importMemoryFlag(fs)
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if len(files) == 0 {
		//lint:ignore ST1005 a usage synopsis ends in "..." for a repeated operand
		return fmt.Errorf("%w: prism import [--db PATH] [--import-memory MiB] [--as NEW_ID] [--replace] FILE...", errUsage)
	}
	if o.As != "" && len(files) != 1 {
		return fmt.Errorf("%w: --as names one session, so it takes one file (got %d)", errUsage, len(files))
	}
	lim, err := importLimits(*mem)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, *dbPath, lim, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	failed := 0
	for _, f := range files {
		res, err := st.ImportFileWith(ctx, f, o)
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "prism import: %v\n", err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		var children []string
		for _, r := range res {
			fmt.Fprintf(stdout, "%s\t%s\t%d events\n", r.SessionID, r.Outcome, r.Events)
			for _, n := range r.Notes() {
				fmt.Fprintf(stderr, "prism import: %s: %s\n", f, n)
			}
			if r.ParentID != "" {
				children = append(children, r.SessionID)
			}
		}
		// Another agent's subagents: the link note on each spawning call.
		for _, err := range watch.LinkImported(ctx, st, children) {
			fmt.Fprintf(stderr, "prism import: %s: %v\n", f, err)
		}
	}
	if failed > 0 {
		return exitError{code: 1}
	}
	return nil
}
