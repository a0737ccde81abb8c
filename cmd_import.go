package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"

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
	// A bulk import has no live writer waiting behind it: each file's
	// search documents are prepared as it decodes and filed in its own
	// transaction, not by the writer after its commit.
	o.FileIndex = true
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
	// A bulk import's garbage is the files it decoded: the collector runs
	// less often (GOGC 400 rather than 100: it was a tenth of the CPU)
	// under a soft limit of the two files in flight at their memory budget
	// plus 128 MiB, so the heap stays within the import's budget. GOGC and
	// GOMEMLIMIT, when set, win.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(2*lim.MaxMemoryBytes + 128<<20))
	}
	st, err := openStore(ctx, *dbPath, lim, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	// Two files are in flight: the next one decodes and is checked while
	// the one before commits (2 cores do both at once). Their
	// transactions, and the links of their subagents, keep the files'
	// order (ImportOptions.Turn), so the outcome is a one-by-one import's.
	//
	// Most files commit relaxed (ImportOptions.Relaxed: not waiting for
	// the disk); every durableEvery-th file, and the last, commits
	// durably, which makes the files before it durable too. A file's line
	// is printed once a durable commit follows it (or the Sync at the
	// end), so what the import reports is on disk.
	syncer, _ := st.(store.Syncer)
	relaxed := func(i int) bool {
		return syncer != nil && i != len(files)-1 && (i+1)%durableEvery != 0
	}
	//
	// A file's turn comes once the file before has queued its
	// transaction (ImportOptions.Queued: SQLite's writer commits in that
	// order), so the writer finds the next file's transaction waiting when
	// it commits one; or, when the file before writes links after its
	// transaction, or its engine does not say, once it is over.
	results := make([]chan imported, len(files))
	prevTurn, prevDone := make(chan struct{}), make(chan struct{})
	close(prevTurn)
	close(prevDone)
	launched := 0
	launch := func(i int) {
		out := make(chan imported, 1)
		results[i] = out
		turn, myTurn := prevTurn, make(chan struct{})
		before, mine := prevDone, make(chan struct{})
		prevTurn, prevDone = myTurn, mine
		var once sync.Once
		pass := func() { once.Do(func() { close(myTurn) }) }
		fo := o
		fo.Relaxed = relaxed(i)
		fo.Turn = func(ctx context.Context) error {
			select {
			case <-turn:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		fo.Queued = func(linksFollow bool) {
			if !linksFollow {
				pass()
			}
		}
		go func() {
			var r imported
			r.res, r.err = st.ImportFileWith(ctx, files[i], fo)
			<-before // a file refused before its turn still ends in order
			if r.err == nil {
				var children []string
				for _, x := range r.res {
					if x.ParentID != "" {
						children = append(children, x.SessionID)
					}
				}
				// Another agent's subagents: the link note on each
				// spawning call.
				r.links = watch.LinkImported(ctx, st, children)
			}
			pass()
			close(mine)
			out <- r
		}()
	}
	failed := 0
	var held []func() // the reports of files no durable commit follows yet
	report := func() {
		for _, p := range held {
			p()
		}
		held = held[:0]
	}
	for i, f := range files {
		for launched < len(files) && launched <= i+1 && ctx.Err() == nil {
			launch(launched)
			launched++
		}
		if results[i] == nil {
			break // interrupted: the files not started stay as they are
		}
		r := <-results[i]
		if r.err != nil {
			// Held too, so the reports keep the files' order.
			failed++
			held = append(held, func() { fmt.Fprintf(stderr, "prism import: %v\n", r.err) })
			continue
		}
		held = append(held, func() {
			for _, x := range r.res {
				fmt.Fprintf(stdout, "%s\t%s\t%d events\n", x.SessionID, x.Outcome, x.Events)
				for _, n := range x.Notes() {
					fmt.Fprintf(stderr, "prism import: %s: %s\n", f, n)
				}
			}
			for _, err := range r.links {
				fmt.Fprintf(stderr, "prism import: %s: %v\n", f, err)
			}
		})
		if !relaxed(i) && wrote(r.res) {
			report() // its durable commit covers the files before it
		}
	}
	if len(held) > 0 && syncer != nil {
		// The last durable commit was not after them (a file failed or
		// changed nothing, or the import was interrupted).
		if err := syncer.Sync(context.WithoutCancel(ctx)); err != nil {
			n := len(held)
			report() // committed, but maybe not on disk: the error says so
			return fmt.Errorf("the last %d files imported are committed but may not be on disk: %w", n, err)
		}
	}
	report()
	if failed > 0 {
		return exitError{code: 1}
	}
	return nil
}

// durableEvery is how often prism import commits a file durably: the
// files between commit relaxed (store.ImportOptions.Relaxed), so 16 files
// cost one wait for the disk, not 16.
const durableEvery = 16

// wrote reports whether an import's transaction wrote (so its commit,
// when durable, reached the disk): a file whose every session was
// unchanged wrote nothing.
func wrote(res []store.ImportResult) bool {
	for _, x := range res {
		if x.Outcome != store.ImportUnchanged {
			return true
		}
	}
	return false
}

// imported is one file's import: its sessions, or why it failed, and the
// links of its subagents that failed.
type imported struct {
	res   []store.ImportResult
	err   error
	links []error
}
