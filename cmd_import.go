package main

import (
	"context"
	"errors"
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
// file is all imported or not at all (on SQLite several files share a
// transaction, each in a savepoint of its own; see importBatches): a file
// that fails changes nothing, is reported, and the others still import
// (exit status 1 if any failed). A failure that is the store's, not a
// file's (store.StoreFailed: the disk full, the database read-only or
// locked) stops the import: the files committed before it are reported as
// imported, every other one as not imported, and the store's error is
// printed once (exit status 1); the same import run again once the store
// works imports the rest and leaves the others unchanged. Only SQLite's
// batches tell the store's failures apart (store.BatchImporter): on
// PostgreSQL each file fails on its own. An interrupt (SIGINT, SIGTERM)
// stops the import the same way: every file not committed is reported as
// not imported (exit status 1).
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
	// An engine that imports several files in one transaction
	// (store.BatchImporter) gets them in batches (importBatches): one
	// commit, and one flush of the search index's pending terms, per
	// batch rather than per file; a file that fails in it is rolled back
	// to its own savepoint, the others kept. Otherwise a batch is one
	// file.
	bi, _ := st.(store.BatchImporter)
	batches := [][]string{}
	if bi != nil && o.As == "" {
		batches = importBatches(files, lim.MaxMemoryBytes, fileSize)
	} else {
		for _, f := range files {
			batches = append(batches, []string{f})
		}
	}
	// Two batches are in flight: the next one decodes and is checked
	// while the one before commits (2 cores do both at once). Their
	// transactions, and the links of their subagents, keep the files'
	// order (ImportOptions.Turn), so the outcome is a one-by-one import's.
	//
	// Most batches commit relaxed (ImportOptions.Relaxed: not waiting
	// for the disk); the first batch that ends durableEvery files or more
	// after the last durable one, and the last, commit durably, which
	// makes the ones before durable too. A file's line is printed once a
	// durable commit follows it (or the Sync at the end), so what the
	// import reports is on disk.
	syncer, _ := st.(store.Syncer)
	durable := durableBatches(batches)
	relaxed := func(i int) bool { return syncer != nil && !durable[i] }
	//
	// A batch's turn comes once the batch before has queued its
	// transaction (ImportOptions.Queued: SQLite's writer commits in that
	// order), so the writer finds the next transaction waiting when it
	// commits one; or, when the batch before writes links after its
	// transaction, or its engine does not say, once it is over.
	//
	// A batch that ends because the store failed (store.StoreFailed)
	// stops the import: stop cancels ictx, which the batches in flight
	// run under (one queued behind it is withdrawn), and no batch starts
	// after it.
	ictx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var stopped error // the store's failure that stopped the import
	// notImported reports whether err is the store's failure, or the
	// stop that followed it, rather than the file's.
	notImported := func(err error) bool {
		var sf *store.StoreFailed
		return ctx.Err() == nil && (errors.As(err, &sf) || ictx.Err() != nil && errors.Is(err, context.Canceled))
	}
	results := make([]chan []imported, len(batches))
	prevTurn, prevDone := make(chan struct{}), make(chan struct{})
	close(prevTurn)
	close(prevDone)
	launched := 0
	launch := func(i int) {
		out := make(chan []imported, 1)
		results[i] = out
		turn, myTurn := prevTurn, make(chan struct{})
		before, mine := prevDone, make(chan struct{})
		prevTurn, prevDone = myTurn, mine
		var once sync.Once
		pass := func() { once.Do(func() { close(myTurn) }) }
		fo := o
		fo.Relaxed = relaxed(i)
		fo.Turn = func(ctx context.Context) error { // ctx is ictx
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
			rs := make([]imported, len(batches[i]))
			if bi != nil && o.As == "" {
				for k, x := range bi.ImportFilesWith(ictx, batches[i], fo) {
					rs[k].res, rs[k].err = x.Results, x.Err
					var sf *store.StoreFailed
					if errors.As(x.Err, &sf) && ctx.Err() == nil {
						stop(sf)
					}
				}
			} else {
				rs[0].res, rs[0].err = st.ImportFileWith(ictx, batches[i][0], fo)
			}
			<-before // a batch refused before its turn still ends in order
			for k := range rs {
				r := &rs[k]
				if r.err != nil {
					continue
				}
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
			out <- rs
		}()
	}
	failed := 0
	var held []func() // the reports of files no durable commit follows yet
	unsynced := 0     // the files imported among them
	report := func() {
		for _, p := range held {
			p()
		}
		held, unsynced = held[:0], 0
	}
	for i, batch := range batches {
		for launched < len(batches) && launched <= i+1 && ictx.Err() == nil {
			launch(launched)
			launched++
		}
		if results[i] == nil {
			break // interrupted or stopped: the files not started stay as they are
		}
		rs := <-results[i]
		wroteAny := false
		for k, r := range rs {
			if r.err != nil && notImported(r.err) {
				f := batch[k]
				if stopped == nil {
					stopped = context.Cause(ictx) // the batch's *store.StoreFailed
					var sf *store.StoreFailed
					if !errors.As(stopped, &sf) {
						errors.As(r.err, &sf)
					}
					if sf != nil {
						stopped = sf.Err
					}
					err := stopped
					held = append(held, func() { fmt.Fprintf(stderr, "prism import: the store failed: %v\n", err) })
				}
				held = append(held, func() { fmt.Fprintf(stderr, "prism import: %s: not imported\n", f) })
				continue
			}
			if r.err != nil && ctx.Err() != nil && errors.Is(r.err, context.Canceled) {
				// Interrupted before its batch committed: nothing of it
				// was written.
				f := batch[k]
				held = append(held, func() { fmt.Fprintf(stderr, "prism import: %s: not imported\n", f) })
				continue
			}
			if r.err != nil {
				// Held too, so the reports keep the files' order.
				failed++
				held = append(held, func() { fmt.Fprintf(stderr, "prism import: %v\n", r.err) })
				continue
			}
			wroteAny = wroteAny || wrote(r.res)
			unsynced++
			f := batch[k]
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
		}
		if !relaxed(i) && wroteAny {
			report() // its durable commit covers the batches before it
		}
	}
	// notStarted reports the files of the batches a stop or an interrupt
	// left out, and why the import ended early.
	notStarted := func() {
		if stopped == nil && ctx.Err() == nil {
			return
		}
		for _, b := range batches[launched:] {
			for _, f := range b {
				fmt.Fprintf(stderr, "prism import: %s: not imported\n", f)
			}
		}
		if stopped != nil {
			fmt.Fprintf(stderr, "prism import: the import stopped as the store failed; run it again once the store works (the files it imported stay unchanged)\n")
			return
		}
		fmt.Fprintf(stderr, "prism import: interrupted; run it again to import the files not imported (the files it imported stay unchanged)\n")
	}
	if unsynced > 0 && syncer != nil {
		// The last durable commit was not after them (a batch failed or
		// changed nothing, or the import was interrupted or stopped).
		if err := syncer.Sync(context.WithoutCancel(ctx)); err != nil {
			n := unsynced
			report() // committed, but maybe not on disk: the error says so
			notStarted()
			return fmt.Errorf("the last %d files imported are committed but may not be on disk: %w", n, err)
		}
	}
	report()
	notStarted()
	if failed > 0 || stopped != nil || ctx.Err() != nil {
		return exitError{code: 1}
	}
	return nil
}

// durableEvery is how often prism import commits durably, in files: the
// batches between commit relaxed (store.ImportOptions.Relaxed), so 16
// files cost one wait for the disk, not 16.
const durableEvery = 16

// durableBatches reports which batches commit durably: the first to end
// durableEvery files or more after the last durable one, and the last.
func durableBatches(batches [][]string) []bool {
	d := make([]bool, len(batches))
	since := 0
	for i, b := range batches {
		since += len(b)
		if since >= durableEvery || i == len(batches)-1 {
			d[i], since = true, 0
		}
	}
	return d
}

// The bounds of an import's batch (importBatches): its files' bytes as
// read from disk and how many files.
const (
	importBatchBytes = 2048 << 10
	importBatchFiles = 64
)

// importBatches groups files, in order, into the batches of an engine
// that imports several in one transaction (store.BatchImporter): a batch
// ends before the file that would take it past importBatchFiles files,
// or past importBatchBytes — or an eighth of the memory budget of one
// file (budget), as two batches are in flight and a batch's decoded
// events, facts and search documents take several times its bytes. A
// compressed file counts 8 times its size (what text inflates to); a file
// larger than the bound is a batch of its own, and so is one whose size
// is unknown (its import reports why). The first batches are smaller —
// an eighth of the bound, then a quarter, a half — so the writer starts
// soon: nothing commits while the first batch decodes. size returns a
// file's bytes and whether it is compressed.
func importBatches(files []string, budget int64, size func(string) (int64, bool, error)) [][]string {
	limit := max(min(int64(importBatchBytes), budget/8), 1)
	var batches [][]string
	bound := func() int64 { return max(limit>>max(3-len(batches), 0), 1) }
	var cur []string
	var bytes int64
	for _, f := range files {
		n, packed, err := size(f)
		if packed {
			n *= 8
		}
		if err != nil || len(cur) >= importBatchFiles || len(cur) > 0 && bytes+n > bound() {
			if len(cur) > 0 {
				batches = append(batches, cur)
			}
			cur, bytes = nil, 0
		}
		cur = append(cur, f)
		bytes += n
		if err != nil {
			batches = append(batches, cur)
			cur, bytes = nil, 0
		}
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches
}

// fileSize returns a file's size and whether it is compressed (a zstd
// frame or a zip, told by its first bytes as the decoder tells them). A
// file that is not a regular one (a named pipe) is not opened: its size
// is unknown.
func fileSize(path string) (int64, bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false, err
	}
	if !fi.Mode().IsRegular() {
		return 0, false, fmt.Errorf("%s: not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	packed := n == 4 && (magic == [4]byte{0x28, 0xb5, 0x2f, 0xfd} || magic == [4]byte{'P', 'K', 3, 4})
	return fi.Size(), packed, nil
}

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
