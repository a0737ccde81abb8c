// Package watch tails a folder of session files into the store, through
// the store contract (store.Store) and what tailing adds to it (Store):
// today dsh's sessions directory ($DSH_HOME/sessions), decoded by
// sources/dsh. It is the one watcher of the sources folder: a source's
// decoders stay pure (they import core only), this package polls the
// files and writes what they decode.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"prism/core"
	"prism/core/logkey"
	"prism/sources/dsh"
	"prism/store"
)

// Store is what the watcher writes through: the store contract, and what
// tailing adds to it (package db's Store has it; PostgreSQL's does not
// yet, so prism refuses --watch with a postgres:// --db).
type Store interface {
	store.Store
	// SyncWatched makes a watched session's log h plus events (SyncLog
	// with source watch and replace set), unless the session was deleted
	// through this store during its run: then it writes nothing and
	// reports store.ImportSkipped. The check and the write are one
	// transaction, so a delete commits before or after both.
	SyncWatched(ctx context.Context, h core.SessionHeader, events []core.Event) (outcome string, added int, err error)
	// WasDeleted reports whether session id was deleted through this
	// store and not created again since.
	WasDeleted(id string) bool
	// AcquireImport takes one of the store's import slots (waiting for it
	// when wait is set), so that watching and uploads together stay
	// within the import memory bound.
	AcquireImport(ctx context.Context, wait bool) (release func(), err error)
	// ImportLimits are the decoder limits the store was opened with.
	ImportLimits() dsh.Limits
}

// Options configure a Watcher.
type Options struct {
	// Logger receives the watcher's logs (default slog.Default()).
	Logger *slog.Logger
	// Interval is the poll period (default 200ms; dsh itself flushes about
	// every 200 ms, so a new frame reaches the store within ~0.5 s).
	Interval time.Duration
	// Synced, if set, is called after each file change has been stored
	// (or has failed), from the Watcher's goroutine.
	Synced func(Sync)
}

// Sync reports what one poll did with one file.
type Sync struct {
	Path      string
	SessionID string
	// Outcome is "created", "appended", "unchanged", "extended",
	// "replaced", "skipped" (the session was deleted during this run) or
	// "failed".
	Outcome string
	Added   int   // events stored
	Err     error // set when Outcome is "failed"
}

// Watcher tails a dsh sessions directory ($DSH_HOME/sessions) into the
// store: every root/<project>/<session>/session.jsonl.zstd (or
// session.jsonl) becomes a session with its dsh id, and frames dsh appends
// are appended as they complete. Per file it keeps the device and inode,
// the committed offset and the next seq; only complete frames (or lines)
// are consumed. A file that shrinks below the committed offset or is
// replaced (new inode) is re-read from scratch and reconciled with the
// store: an unchanged prefix is kept and only new events are appended; a
// log that diverges replaces the watched session's log. dsh's files are
// only ever opened read-only. Watched sessions are not crash-repaired:
// dsh repairs its own logs and the repair reaches the store as new frames.
//
// A watched session deleted through the store (the page's delete button,
// the API, retention) stays deleted while the Watcher runs: its file is
// skipped, however it changes, until the session is created again (an
// import). The record of deletions lives in the Store: the next run of the
// watch (a new process, a newly opened Store) imports the file again.
type Watcher struct {
	st    Store
	dir   string
	opts  Options
	log   *slog.Logger
	files map[string]*watchedFile
}

type watchedFile struct {
	dev, ino  uint64
	format    dsh.Format
	tail      *dsh.Tail
	sessionID string
	// seen is the (size, mtime, ctime) the file had when last synced: an
	// unchanged size with a new mtime or ctime means it was rewritten in
	// place (or replaced by a file that reused the inode).
	seen [3]int64
	// failed is the signature a file had when it last failed; it is not
	// retried until that changes.
	failed [3]int64
	// skipped: the file's session was deleted during this run; the file
	// is not read again while it stays deleted.
	skipped bool
}

func statSig(fi os.FileInfo) [3]int64 {
	sig := [3]int64{fi.Size(), fi.ModTime().UnixNano(), 0}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		sig[2] = sys.Ctim.Nano()
	}
	return sig
}

// New returns a Watcher of the dsh sessions directory dir that writes into
// st.
func New(st Store, dir string, o Options) *Watcher {
	if o.Interval <= 0 {
		o.Interval = 200 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Watcher{st: st, dir: dir, opts: o, log: o.Logger.With(logkey.Watch, dir), files: map[string]*watchedFile{}}
}

// DefaultDshSessionsDir returns $DSH_HOME/sessions, else ~/.dsh/sessions.
func DefaultDshSessionsDir() (string, error) {
	if h := os.Getenv("DSH_HOME"); h != "" {
		return filepath.Join(h, "sessions"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("locate dsh sessions: %w", err)
	}
	return filepath.Join(home, ".dsh", "sessions"), nil
}

// Run polls until ctx ends; it returns nil then. Errors with single files
// are logged (and reported through Synced), never fatal.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		if err := w.Scan(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Scan makes one pass over the directory: new files, grown files, shrunk or
// replaced files. It returns an error only when ctx ends or the store is
// closed.
func (w *Watcher) Scan(ctx context.Context) error {
	var paths []string
	for _, pattern := range []string{"*/*/session.jsonl.zstd", "*/*/session.jsonl"} {
		m, _ := filepath.Glob(filepath.Join(w.dir, pattern)) // only ErrBadPattern
		paths = append(paths, m...)
	}
	sort.Strings(paths)
	seen := map[string]bool{}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		seen[p] = true
		if err := w.syncFile(ctx, p); err != nil {
			if errors.Is(err, store.ErrClosed) || ctx.Err() != nil {
				return err
			}
		}
	}
	for p := range w.files {
		if !seen[p] {
			delete(w.files, p)
		}
	}
	return nil
}

func (w *Watcher) report(s Sync) {
	if s.Err != nil {
		w.log.Warn("watch: cannot ingest session log", logkey.Path, s.Path, logkey.SessionID, s.SessionID, logkey.Err, s.Err)
	} else if s.Added > 0 || s.Outcome == store.ImportCreated {
		w.log.Info("watch: ingested", logkey.Path, s.Path, logkey.SessionID, s.SessionID, logkey.Outcome, s.Outcome, logkey.Events, s.Added)
	}
	if w.opts.Synced != nil {
		w.opts.Synced(s)
	}
}

// syncFile brings one file's session up to date.
func (w *Watcher) syncFile(ctx context.Context, path string) error {
	f, err := os.Open(path) // read-only: dsh's files are never written
	if err != nil {
		return nil // vanished between glob and open
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	var dev, ino uint64
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		dev, ino = uint64(sys.Dev), sys.Ino
	}
	size := fi.Size()
	sig := statSig(fi)
	wf := w.files[path]
	if wf != nil && wf.skipped {
		if w.st.WasDeleted(wf.sessionID) {
			return nil
		}
		wf = nil // created again since (an import): follow the file anew
	}
	if wf != nil && wf.failed != [3]int64{} {
		if wf.failed == sig && wf.dev == dev && wf.ino == ino {
			return nil
		}
		wf = nil // changed since it failed: start over
	}
	if wf != nil && (wf.dev != dev || wf.ino != ino || size < wf.tail.Offset()) {
		wf = nil // replaced or shrunk: re-read from scratch
	}
	if wf != nil && size == wf.tail.Offset() {
		if sig == wf.seen {
			return nil
		}
		wf = nil // same size, new times: rewritten in place
	}
	// Decoding takes one of the store's import slots (waiting for it), so
	// watching and uploads together stay within the import memory bound.
	release, err := w.st.AcquireImport(ctx, true)
	if err != nil {
		return err
	}
	defer release()
	if wf == nil || size > orDefaultFileBytes(w.st.ImportLimits()) {
		// A new file, or one grown past the limit (resync refuses it).
		return w.resync(ctx, path, f, dev, ino, size, sig)
	}
	// Only the growth is read, streaming (it may be large: the watcher is
	// bounded by the decoder's limits, not by the file).
	events, ferr := wf.tail.FeedFrom(io.NewSectionReader(f, wf.tail.Offset(), size-wf.tail.Offset()))
	if len(events) > 0 {
		if err := w.st.AppendEvents(ctx, wf.sessionID, events); err != nil {
			if core.ErrorCode(err) == core.CodeConflict || core.ErrorCode(err) == core.CodeNotFound {
				// The stored log moved under us (an import, another
				// watcher): reconcile from scratch.
				return w.resync(ctx, path, f, dev, ino, size, sig)
			}
			w.report(Sync{Path: path, SessionID: wf.sessionID, Outcome: "failed", Err: err})
			delete(w.files, path)
			return err
		}
	}
	if ferr != nil {
		wf.failed = sig
		w.report(Sync{Path: path, SessionID: wf.sessionID, Outcome: "failed", Added: len(events), Err: withPath(ferr, path)})
		return nil
	}
	wf.seen = sig
	w.report(Sync{Path: path, SessionID: wf.sessionID, Outcome: "appended", Added: len(events)})
	return nil
}

func withPath(err error, path string) error {
	var fe *dsh.FormatError
	if errors.As(err, &fe) && fe.File == "" {
		fe.File = path
	}
	return err
}

// resync reads a file from its start and reconciles the store with it.
func (w *Watcher) resync(ctx context.Context, path string, f *os.File, dev, ino uint64, size int64, sig [3]int64) error {
	lim := w.st.ImportLimits()
	if max := orDefaultFileBytes(lim); size > max {
		w.files[path] = &watchedFile{dev: dev, ino: ino, tail: dsh.NewTail(dsh.FormatJSONL, lim), failed: sig}
		w.report(Sync{Path: path, Outcome: "failed", Err: fmt.Errorf("%s: file is larger than the limit of %d bytes", path, max)})
		return nil
	}
	var head [4]byte
	n, err := f.ReadAt(head[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	format := dsh.Detect(head[:n])
	if format == dsh.FormatZip {
		format = dsh.FormatJSONL // not a dsh log: fails below as JSONL
	}
	tail := dsh.NewTail(format, lim)
	events, ferr := tail.FeedFrom(io.NewSectionReader(f, 0, size))
	h, ok := tail.Header()
	if !ok {
		if ferr != nil {
			w.files[path] = &watchedFile{dev: dev, ino: ino, tail: tail, failed: sig}
			w.report(Sync{Path: path, Outcome: "failed", Err: withPath(ferr, path)})
		}
		return nil // no complete header frame yet
	}
	wf := &watchedFile{dev: dev, ino: ino, format: format, tail: tail, sessionID: h.ID}
	var outcome string
	var added int
	outcome, added, err = w.st.SyncWatched(ctx, h, events)
	if err != nil {
		wf.failed = sig
		w.files[path] = wf
		w.report(Sync{Path: path, SessionID: h.ID, Outcome: "failed", Err: fmt.Errorf("%s: %w", path, err)})
		if errors.Is(err, store.ErrClosed) || ctx.Err() != nil {
			return err
		}
		return nil
	}
	w.files[path] = wf
	wf.seen = sig
	if outcome == store.ImportSkipped {
		wf.skipped = true
		w.log.Info("watch: skipping a session deleted during this run; restart the watch to import it again", logkey.Path, path, logkey.SessionID, h.ID)
		if w.opts.Synced != nil {
			w.opts.Synced(Sync{Path: path, SessionID: h.ID, Outcome: outcome})
		}
		return nil
	}
	if ferr != nil {
		wf.failed = sig
		w.report(Sync{Path: path, SessionID: h.ID, Outcome: "failed", Added: added, Err: withPath(ferr, path)})
		return nil
	}
	w.report(Sync{Path: path, SessionID: h.ID, Outcome: outcome, Added: added})
	return nil
}

func orDefaultFileBytes(l dsh.Limits) int64 {
	if l.MaxFileBytes > 0 {
		return l.MaxFileBytes
	}
	return dsh.DefaultLimits().MaxFileBytes
}
