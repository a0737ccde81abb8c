// Package watch tails folders of session files into the store, through
// the store contract (store.Store) and what tailing adds to it (Store):
// dsh's sessions directory ($DSH_HOME/sessions), Claude Code's projects
// (~/.claude/projects), Codex CLI's sessions (~/.codex/sessions), or any
// folder mixing them — each file's kind is told by its content
// (dsh.SniffFile). It is the one watcher of the sources folder: a source's
// decoders stay pure (they import core only), this package polls the
// files and writes what they decode, and reports each folder's health
// (core.SourceHealth) per kind of source.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"prism/core"
	"prism/core/logkey"
	"prism/sources/dsh"
	"prism/store"
)

// Store is what the watcher writes through: the store contract, and what
// tailing adds to it (package db's and package pgstore's Stores have it).
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

// SourceInfoStore is a store that keeps what a session's source is beside
// its header (db and pgstore do): the watcher records it for the sessions
// it reads from other agents' files.
type SourceInfoStore interface {
	PutSourceInfo(ctx context.Context, id string, info core.SourceInfo) error
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
	// Foreign are the other agents' transcript formats read beside dsh's,
	// each detected by content (engine.Formats()); nil: dsh's only.
	Foreign []dsh.Foreign
	// Now is the clock of the health report (default time.Now).
	Now func() time.Time
	// Shared, when set, is the folder's claim among nodes that all see it
	// (prism serve --watch-shared on PostgreSQL): the Watcher tails the
	// folder only while it holds the claim, and tries to take it on every
	// poll otherwise, so another node takes over when the holder dies.
	Shared Holder
}

// Holder is a claim on a folder shared by several nodes (pgstore's
// FolderLock).
type Holder interface {
	// TryHold reports whether this node holds the folder, taking it when
	// it is free.
	TryHold(ctx context.Context) (bool, error)
}

// Sync reports what one poll did with one file.
type Sync struct {
	Path      string
	SessionID string
	// Kind is the file's kind of source: "dsh", or the Foreign's name
	// ("claude-code", "codex").
	Kind string
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
// the committed offset, a CRC-32C of the bytes before it and the next seq;
// only complete frames (or lines) are consumed. A file that shrinks below
// the committed offset, is replaced (new inode) or is rewritten in place
// (its size unchanged with new times, or the bytes before the offset no
// longer summing to the CRC when it grows) is re-read from scratch and
// reconciled with the store: an unchanged prefix is kept and only new events are appended; a
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
	// kinds are the files' kinds, told once per file (device and inode).
	kinds map[string]*fileKind

	// pendingLinks are the children whose link note waits for the
	// parent's spawning call to be stored (linkPending); linked the
	// spawning call each child's note was written for, unlinked the one
	// given up on; written the sessions stored during this poll.
	pendingLinks map[string]*pendingLink
	linked       map[string]core.Spawn
	unlinked     map[string]core.Spawn
	written      map[string]bool
	// waiting are the foreign files holding a child stored without its
	// parent or its spawning call, by the parent session's id they wait
	// for; recheck the files to read again at the end of this poll,
	// their parent stored or grown (waiting.go).
	waiting map[string]map[string]bool
	recheck map[string]bool
	// owners are the session files owning each session id; dups the
	// other files yielding it, left out (owners.go).
	owners  map[string]string
	dups    map[string]map[string]bool
	started time.Time // when New made the Watcher (lag counts from it at most)
	holding bool      // this node holds the shared folder (Options.Shared)
	tick    uint64    // counts the reads of foreign transcripts (foreignTail.used)
	sumBuf  []byte    // what foreignTail.trusted reads a transcript through

	mu     sync.Mutex
	health map[string]*kindHealth // by kind
	dirErr string                 // the folder's latest walk error
	dirAt  time.Time
}

// fileKind is what one file holds.
type fileKind struct {
	dev, ino   uint64
	kind       dsh.FileKind
	fg         *dsh.Foreign
	compressed bool
	// A foreign file: the signature last synced (or failed), and the
	// offset of the end of its last complete line read.
	seen, failed [3]int64
	end          int64
	sessions     []string
	infos        map[string]core.SourceInfo // the source info recorded per session
	// tail is the decoder's state after end, for a plain transcript
	// whose format reads on (dsh.Foreign.Tail); nil: read it whole.
	tail *foreignTail
	// read is the sum of what the last read consumed of the file, kept
	// when tail is dropped (keepTails): its complete lines ending at end
	// again are trusted as unchanged (a partial line added, or only its
	// times changed) only while they still sum to it. Zero: not known
	// (the last read was not one pass from the start), read it whole.
	read prefixSum
	// waits are the parent sessions a child of the file waits for
	// (Watcher.waiting); recheck: read the file even though it did not
	// change, its parent having been stored or grown.
	waits   map[string]bool
	recheck bool
	// inferred are the parents (of waits) a child of the file waits for
	// only to have its link, matched by prompt, named exactly: by the
	// call it was matched to, rechecked once that call's stored events
	// change (parentSynced).
	inferred map[string]inferredWait
	// gaveUp are the parents (and the call) an inferred wait was given
	// up on (giveUpInferred): not waited for again for that call.
	gaveUp map[string]string
	// owned are the sessions the file owns; dupOf the owner of each
	// session it yields but another file owns (owners.go).
	owned map[string]bool
	dupOf map[string]string
}

// kindHealth is one kind's row of the folder's health.
type kindHealth struct {
	row      core.SourceHealth
	sessions map[string]bool
	files    map[string]bool
	dups     map[string]string // why each duplicate file (path NUL session id) is left out
}

type watchedFile struct {
	dev, ino  uint64
	format    dsh.Format
	tail      *dsh.Tail
	sessionID string
	// sum is the CRC-32C of the bytes tail consumed (end: its Offset;
	// -1, unknown): the file is read on from there only while its first
	// bytes still sum to it — a file rewritten in place and grown is
	// read whole.
	sum prefixSum
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
	// dup: another log owns the file's session (owners.go); the file is
	// not read while it does.
	dup bool
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
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Watcher{st: st, dir: dir, opts: o, log: o.Logger.With(logkey.Watch, dir), files: map[string]*watchedFile{}, started: o.Now(),
		kinds: map[string]*fileKind{}, health: map[string]*kindHealth{}, pendingLinks: map[string]*pendingLink{}, linked: map[string]core.Spawn{},
		unlinked: map[string]core.Spawn{}, written: map[string]bool{},
		waiting: map[string]map[string]bool{}, recheck: map[string]bool{},
		owners: map[string]string{}, dups: map[string]map[string]bool{}}
}

// Dir is the watched folder.
func (w *Watcher) Dir() string { return w.dir }

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
		if _, err := w.Poll(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Poll is one of Run's polls: with Options.Shared, it first makes sure
// this node holds the folder (holding false: another node does, nothing
// is read), then Scans.
func (w *Watcher) Poll(ctx context.Context) (holding bool, err error) {
	if w.opts.Shared != nil {
		held, err := w.opts.Shared.TryHold(ctx)
		if err != nil {
			w.mu.Lock()
			w.dirErr, w.dirAt = err.Error(), w.opts.Now()
			w.mu.Unlock()
			return false, nil // a database hiccup: try again on the next poll
		}
		w.mu.Lock()
		changed := held != w.holding
		w.holding = held
		w.mu.Unlock()
		if changed && held {
			w.log.Info("watch: this node now holds the folder", logkey.Dir, w.dir)
		}
		if !held {
			return false, nil
		}
	}
	return true, w.Scan(ctx)
}

// Scan makes one pass over the directory: new files, grown files, shrunk or
// replaced files, then the unchanged files of children waiting for a
// parent that this pass stored or grew (waiting.go). It returns an error
// only when ctx ends or the store is closed.
func (w *Watcher) Scan(ctx context.Context) error {
	paths := w.list()
	// Subagent transcripts after the others: a child's parent is then
	// stored first.
	sort.Slice(paths, func(i, j int) bool {
		ci, cj := isChildFile(paths[i]), isChildFile(paths[j])
		if ci != cj {
			return cj
		}
		return paths[i] < paths[j]
	})
	clear(w.written)
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
	if err := w.recheckWaiting(ctx); err != nil {
		return err
	}
	w.linkPending(ctx)
	for p, k := range w.kinds {
		if !seen[p] {
			delete(w.kinds, p)
			w.wait(p, k, nil, nil)
			if k.kind == dsh.KindDsh || k.kind == dsh.KindForeign {
				w.gone(p, k)
			}
		}
	}
	return nil
}

// maxDepth is how deep under the folder session files are looked for:
// dsh's <project>/<session>/session.jsonl is 3, Codex's YYYY/MM/DD/rollout
// 4, Claude Code's <project>/<session>/subagents/workflows/<id>/agent 6.
const maxDepth = 6

// isCandidate reports whether a file name may hold a session log.
func isCandidate(name string) bool {
	return strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".jsonl.zst") || strings.HasSuffix(name, ".jsonl.zstd")
}

// list walks the folder for candidate files. A folder that cannot be read
// (the watched one missing, a subfolder without permission) is reported in
// the health view and the log, once per new error, and the walk goes on.
func (w *Watcher) list() []string {
	var paths []string
	var errs []string
	root := filepath.Clean(w.dir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Sprintf("%s does not exist (yet)", root))
				return fs.SkipAll
			}
			errs = append(errs, err.Error())
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if rel, _ := filepath.Rel(root, p); rel != "." && strings.Count(rel, string(filepath.Separator)) >= maxDepth-1 {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && isCandidate(d.Name()) {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err.Error())
	}
	msg := strings.Join(errs, "; ")
	w.mu.Lock()
	changed := msg != w.dirErr
	w.dirErr = msg
	if changed && msg != "" {
		w.dirAt = w.opts.Now()
	}
	w.mu.Unlock()
	if changed && msg != "" {
		w.log.Warn("watch: cannot read part of the folder; going on with the rest", logkey.Dir, w.dir, logkey.Err, msg)
	}
	return paths
}

func (w *Watcher) report(s Sync) {
	if s.Kind == "" {
		s.Kind = "dsh"
	}
	w.mu.Lock()
	h := w.row(s.Kind)
	if s.Err != nil {
		h.row.LastError, h.row.LastErrorAt = s.Err.Error(), w.opts.Now()
	} else if s.Kind == "dsh" && s.SessionID != "" {
		h.sessions[s.SessionID] = true
		h.files[s.Path] = true
		if s.Added > 0 || s.Outcome == store.ImportCreated {
			h.row.LastRead, h.row.LastPath = w.opts.Now(), s.Path
		}
	}
	w.mu.Unlock()
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
	f, err := os.Open(path) // read-only: the agents' files are never written
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) { // else vanished between walk and open
			w.report(Sync{Path: path, Outcome: "failed", Err: fmt.Errorf("open %s: %w", path, err)})
		}
		return nil
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
	k := w.kinds[path]
	if k == nil || k.dev != dev || k.ino != ino || k.kind == dsh.KindUnknown && k.seen != sig {
		if k != nil && k.kind == dsh.KindForeign {
			w.gone(path, k) // replaced: its sessions are re-read below
			w.wait(path, k, nil, nil)
		}
		kind, fg, compressed, serr := dsh.SniffFile(path, f, w.opts.Foreign)
		if kind == dsh.KindUndecided {
			return nil // too little written yet
		}
		k = &fileKind{dev: dev, ino: ino, kind: kind, fg: fg, compressed: compressed}
		w.kinds[path] = k
		if kind == dsh.KindUnknown {
			k.seen = sig
			if serr != nil {
				w.report(Sync{Path: path, Kind: "other", Outcome: "failed", Err: serr})
				w.skip(path, serr.Error())
				return nil
			}
			w.skip(path, "not a session log of a kind prism reads")
			return nil
		}
	}
	switch k.kind {
	case dsh.KindUnknown:
		return nil
	case dsh.KindForeign:
		return w.syncForeign(ctx, path, f, fi, k)
	}
	wf := w.files[path]
	if wf != nil && wf.dup {
		if owner, ok := w.owners[wf.sessionID]; ok && owner != path && w.kinds[owner] != nil && wf.dev == dev && wf.ino == ino {
			return nil
		}
		wf = nil // its owner went, or it was replaced: read it anew
	}
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
	if wf != nil && sig == wf.seen {
		return nil // unchanged since it was read (a torn last frame waits for the rest of it)
	}
	if wf != nil && size == wf.tail.Offset() {
		wf = nil // same size, new times: rewritten in place
	}
	if wf != nil && (wf.sum.end != wf.tail.Offset() || !wf.sum.trusted(f, size, w.sumBuffer())) {
		wf = nil // grown, but what was read changed (rewritten in place) or was not summed: read it whole
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
	cs := &consumedSum{r: io.NewSectionReader(f, wf.tail.Offset(), size-wf.tail.Offset()), tail: wf.tail, p: wf.sum, held: w.sumBuffer()[:0]}
	events, ferr := wf.tail.FeedFrom(cs)
	wf.sum = cs.done()
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
	cs := &consumedSum{r: io.NewSectionReader(f, 0, size), tail: tail, held: w.sumBuffer()[:0]}
	events, ferr := tail.FeedFrom(cs)
	h, ok := tail.Header()
	if !ok {
		if ferr != nil {
			w.files[path] = &watchedFile{dev: dev, ino: ino, tail: tail, failed: sig}
			w.report(Sync{Path: path, Outcome: "failed", Err: withPath(ferr, path)})
		}
		return nil // no complete header frame yet
	}
	wf := &watchedFile{dev: dev, ino: ino, format: format, tail: tail, sessionID: h.ID, sum: cs.done()}
	if k := w.kinds[path]; k != nil {
		for id := range k.owned {
			if id != h.ID {
				w.release(path, k, id) // the log now holds another session
			}
		}
		if !w.claim(path, k, h.ID) {
			wf.dup, wf.seen = true, sig
			w.files[path] = wf
			return nil
		}
	}
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

// syncForeign brings the sessions of another agent's transcript up to
// date: when the file changed, it is decoded up to its last complete line
// (a line still being written is read once complete) — a plain transcript
// whose format reads on (dsh.Foreign.Tail) only from the end of the last
// read, from the decoder's state kept there (readTail), unless the file
// shrank or was rewritten — and each session it holds is brought up to
// date in the store: the new events appended when what was stored is
// still a prefix (storeTail), else reconciled whole (SyncWatched: an
// unchanged prefix is kept and only new events are appended; a log that
// diverges, as when the decoder closed a step that has now grown,
// replaces the watched session's log). A file marked for a recheck — a
// child of it waits for its parent, whose session was just stored or
// grew (waiting.go) — is read again though it did not change, and its
// health row is left as it was.
func (w *Watcher) syncForeign(ctx context.Context, path string, f *os.File, fi os.FileInfo, k *fileKind) error {
	sig := statSig(fi)
	// A recheck reads an unchanged file again (its parent was stored or
	// grew), not one that failed.
	recheck := k.recheck && sig == k.seen
	if !recheck && sig == k.seen || sig == k.failed {
		return nil
	}
	kind := k.fg.Name
	lim := w.st.ImportLimits()
	if max := orDefaultFileBytes(lim); fi.Size() > max {
		k.failed = sig
		w.report(Sync{Path: path, Kind: kind, Outcome: "failed", Err: fmt.Errorf("%s: file is larger than the limit of %d bytes", path, max)})
		return nil
	}
	end := fi.Size()
	if !k.compressed {
		var err error
		if end, err = lastLineEnd(f, fi.Size()); err != nil {
			k.failed = sig
			w.report(Sync{Path: path, Kind: kind, Outcome: "failed", Err: fmt.Errorf("read %s: %w", path, err)})
			return nil
		}
		if end == k.end && k.end > 0 && !recheck {
			if k.read.end == end && k.read.trusted(f, end, w.sumBuffer()) {
				k.seen = sig // only a partial line was added: read it once complete
				return nil
			}
			// Rewritten in place without growing, or not known not to
			// be (its prefix was not summed): read it whole.
			k.tail = nil
		}
		if end == 0 {
			return nil
		}
	}
	release, err := w.st.AcquireImport(ctx, true)
	if err != nil {
		return err
	}
	defer release()
	var logs []*dsh.Log
	var settled []int
	var t *foreignTail
	k.read = prefixSum{} // known again once read in one pass (readTail)
	if !k.compressed && k.fg.Tail != nil {
		t, logs, settled, err = w.readTail(path, f, k, end, lim)
	} else {
		logs, err = k.fg.ReadFileAt(path, f, end, k.compressed, lim)
	}
	if err != nil {
		k.failed = sig
		w.report(Sync{Path: path, Kind: kind, Outcome: "failed", Err: err})
		return nil
	}
	k.sessions = k.sessions[:0]
	for _, l := range logs {
		k.sessions = append(k.sessions, l.Header.ID)
	}
	waits := map[string]bool{}
	var inferred map[string]inferredWait
	var lastLine int
	for i, l := range logs {
		if n := len(l.Pos); n > 0 && l.Pos[n-1].Line > lastLine {
			lastLine = l.Pos[n-1].Line
		}
		id := l.Header.ID
		if !w.claim(path, k, id) || w.st.WasDeleted(id) {
			continue
		}
		var outcome string
		var added int
		if t != nil {
			outcome, added, err = w.storeTail(ctx, t, l, settled[i])
		} else {
			outcome, added, err = w.st.SyncWatched(ctx, l.Header, l.Events)
		}
		if err != nil {
			k.failed = sig
			w.report(Sync{Path: path, Kind: kind, SessionID: id, Outcome: "failed", Err: fmt.Errorf("%s: %w", path, err)})
			if errors.Is(err, store.ErrClosed) || ctx.Err() != nil {
				return err
			}
			return nil
		}
		if outcome == store.ImportSkipped {
			w.log.Info("watch: skipping a session deleted during this run; restart the watch to import it again", logkey.Path, path, logkey.SessionID, id)
		}
		if outcome == store.ImportCreated {
			// Created anew (on its first read, or deleted since through
			// another node): what was written beside it before — its
			// source info, its link note — went with it.
			delete(k.infos, id)
			delete(w.linked, id)
			delete(w.unlinked, id)
		}
		if l.Source != nil && outcome != store.ImportSkipped {
			if err := w.putSource(ctx, k, id, *l.Source); err != nil {
				w.report(Sync{Path: path, Kind: kind, SessionID: id, Outcome: "failed", Err: fmt.Errorf("%s: %w", path, err)})
			}
			if sp := l.Source.SpawnedBy; sp != nil && l.Header.ParentSession != "" {
				w.pend(id, l.Header.ParentSession, *sp, kind)
			}
			// A child of this file waits for a parent in another file
			// (an inline sidechain's parent is read with it).
			if p := waitingParent(l); p != "" && !slices.Contains(k.sessions, p) {
				waits[p] = true
			} else if sp := l.Source.SpawnedBy; p == "" && sp != nil && sp.Inferred {
				// Linked by its prompt only: it waits for the parent's
				// result naming it, read again when the events of the
				// call it was matched to change (parentSynced).
				if p := l.Header.ParentSession; p != "" && !slices.Contains(k.sessions, p) && k.gaveUp[p] != sp.CallID {
					iw := inferredWait{child: id, call: sp.CallID, sig: w.inferredSig(ctx, p, sp.CallID)}
					if prev, ok := k.inferred[p]; ok && prev.call == iw.call && prev.child == id {
						iw.tries = prev.tries // a read again does not restart the count
					}
					waits[p] = true
					if inferred == nil {
						inferred = map[string]inferredWait{}
					}
					inferred[p] = iw
				}
			}
		}
		if outcome != store.ImportSkipped {
			w.parentSynced(ctx, id, l.Events[len(l.Events)-min(added, len(l.Events)):])
		}
		if !recheck { // the file did not change: its health row neither
			raw, why := rawLines(l)
			w.note(kind, path, id, lastLine, fi.ModTime(), raw, why)
		}
		w.report(Sync{Path: path, Kind: kind, SessionID: id, Outcome: outcome, Added: added})
	}
	w.wait(path, k, waits, inferred)
	w.settleOwnership(path, k)
	k.seen, k.failed, k.end = sig, [3]int64{}, end
	return nil
}

// putSource records a session's source info when the store keeps it and
// it changed since last recorded.
func (w *Watcher) putSource(ctx context.Context, k *fileKind, id string, info core.SourceInfo) error {
	ss, ok := w.st.(SourceInfoStore)
	if have, known := k.infos[id]; !ok || known && sameSourceInfo(have, info) {
		return nil
	}
	if err := ss.PutSourceInfo(ctx, id, info); err != nil {
		return err
	}
	if k.infos == nil {
		k.infos = map[string]core.SourceInfo{}
	}
	k.infos[id] = info
	return nil
}

// sameSourceInfo reports whether a and b say the same (their spawning
// calls compared by value: each read decodes a new one).
func sameSourceInfo(a, b core.SourceInfo) bool {
	sa, sb := a.SpawnedBy, b.SpawnedBy
	a.SpawnedBy, b.SpawnedBy = nil, nil
	return a == b && (sa == nil) == (sb == nil) && (sa == nil || *sa == *sb)
}

// rawLines counts the log's source/raw events (lines kept raw) and says
// why the latest malformed one was kept.
func rawLines(l *dsh.Log) (int, string) {
	n := 0
	for _, e := range l.Events {
		if e.Type == "source/raw" {
			n++
		}
	}
	why := ""
	if len(l.Notes) > 0 {
		why = l.Notes[len(l.Notes)-1]
	}
	return n, why
}

// lastLineEnd returns the offset just past the last newline among the
// first size bytes of f (0: no complete line yet).
func lastLineEnd(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := lastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

func lastIndexByte(b []byte, c byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// row returns the health row of kind, made on first use. w.mu is held.
func (w *Watcher) row(kind string) *kindHealth {
	h := w.health[kind]
	if h == nil {
		h = &kindHealth{row: core.SourceHealth{Feed: w.dir, Kind: kind}, sessions: map[string]bool{}, files: map[string]bool{}}
		w.health[kind] = h
	}
	return h
}

// note records a sync of a foreign file's session in the health view.
func (w *Watcher) note(kind, path, id string, line int, modified time.Time, raw int, why string) {
	now := w.opts.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.row(kind)
	h.sessions[id] = true
	h.files[path] = true
	h.row.LastRead, h.row.LastPath, h.row.LastLine = now, path, line
	// A file last written before the watch started was caught up on, not
	// lagged behind: its lag counts from the start.
	if modified.Before(w.started) {
		modified = w.started
	}
	h.row.Lag = max(now.Sub(modified), 0)
	h.row.Raw = raw
	if why != "" {
		h.row.RawWhy = why
	}
}

// skip records a file left out, and why.
func (w *Watcher) skip(path, why string) {
	w.mu.Lock()
	h := w.row("other")
	first := !h.files[path]
	h.files[path] = true
	h.row.Skipped = len(h.files)
	h.row.SkippedWhy = filepath.Base(path) + ": " + why
	w.mu.Unlock()
	if first {
		w.log.Info("watch: leaving out a file", logkey.Path, path, logkey.Reason, why)
	}
}

// gone forgets a file that was deleted, rotated or replaced: it is
// reported in the health view; its sessions stay stored.
func (w *Watcher) gone(path string, k *fileKind) {
	kind := kindName(k)
	w.disown(path, k)
	w.mu.Lock()
	h := w.row(kind)
	delete(h.files, path)
	h.row.LastError, h.row.LastErrorAt = fmt.Sprintf("%s was deleted or replaced; its sessions stay stored", path), w.opts.Now()
	w.mu.Unlock()
	w.log.Info("watch: a file was deleted or replaced", logkey.Path, path)
}

// SourceHealth reports the folder's rows, one per kind of source seen in
// it (and "other" for files left out); a folder that cannot be read has a
// row saying so.
func (w *Watcher) SourceHealth() []core.SourceHealth {
	w.mu.Lock()
	defer w.mu.Unlock()
	var rows []core.SourceHealth
	for _, h := range w.health {
		r := h.row
		r.Sessions = len(h.sessions)
		if h.row.Kind != "other" {
			r.Files = len(h.files)
			r.Skipped, r.SkippedWhy = dupReport(h)
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Kind < rows[j].Kind })
	if w.dirErr != "" {
		if len(rows) == 0 {
			rows = append(rows, core.SourceHealth{Feed: w.dir, Kind: "folder"})
		}
		for i := range rows {
			if rows[i].LastError == "" || w.dirAt.After(rows[i].LastErrorAt) {
				rows[i].LastError, rows[i].LastErrorAt = w.dirErr, w.dirAt
			}
		}
	}
	if w.opts.Shared != nil && !w.holding {
		rows = append(rows, core.SourceHealth{Feed: w.dir, Kind: "folder", SkippedWhy: "another node holds this folder (--watch-shared); this one takes over if it dies"})
	} else if len(rows) == 0 {
		rows = append(rows, core.SourceHealth{Feed: w.dir, Kind: "folder", SkippedWhy: "no session files yet"})
	}
	return rows
}

// pendingLink is a child's link note still to write, and how often it
// was tried.
type pendingLink struct {
	parent string
	spawn  core.Spawn
	kind   string // the child's kind of source (its health row)
	tries  int
	due    bool // try it on this poll whatever its parent did
}

// maxLinkTries bounds the tries of a pending link: a try is made on a
// poll that stored (or grew) the link's parent session, so a spawning
// call not stored after this many is given up on (reported in the
// folder's health and the log), not looked for forever. The spawning
// call of a child is on disk when the child is read (its decoder found
// it there), so it is stored on the parent's next read: a few tries do.
const maxLinkTries = 16

// isChildFile reports whether path is a subagent's transcript
// (agent-<id>.jsonl).
func isChildFile(path string) bool {
	return strings.HasPrefix(filepath.Base(path), "agent-")
}

// pend records that child's link note, to call sp of session parent, is
// to be written, unless it was written or given up on for that same
// call; a link already pending for it keeps its tries.
func (w *Watcher) pend(child, parent string, sp core.Spawn, kind string) {
	if have, ok := w.linked[child]; ok && have == sp {
		return
	}
	if have, ok := w.unlinked[child]; ok && have == sp {
		return
	}
	if pl := w.pendingLinks[child]; pl != nil && pl.parent == parent && pl.spawn == sp {
		return
	}
	w.pendingLinks[child] = &pendingLink{parent: parent, spawn: sp, kind: kind, due: true}
}

// linkPending writes the link notes whose parent call is now stored. A
// pending link is tried on the poll it was found and then only on polls
// that stored its parent session (its call cannot have appeared
// otherwise), each try a read of the call's events by its id; it is given
// up on after maxLinkTries.
func (w *Watcher) linkPending(ctx context.Context) {
	for child, pl := range w.pendingLinks {
		if !pl.due && !w.written[pl.parent] {
			continue
		}
		pl.due = false
		pl.tries++
		ok, err := LinkChild(ctx, w.st, pl.parent, child, pl.spawn)
		if err != nil {
			// Not the call missing but the store failing: try again on
			// the next poll (counted: a lasting failure gives up too).
			pl.due = true
			w.log.Warn("watch: cannot link a subagent to its call", logkey.SessionID, child, logkey.Err, err)
		}
		if ok {
			delete(w.pendingLinks, child)
			w.linked[child] = pl.spawn
			continue
		}
		if pl.tries >= maxLinkTries {
			delete(w.pendingLinks, child)
			w.unlinked[child] = pl.spawn
			why := fmt.Sprintf("subagent %s is not nested in %s: its spawning call %s was not stored after %d reads of the parent", child, pl.parent, pl.spawn.CallID, pl.tries)
			w.mu.Lock()
			h := w.row(pl.kind)
			h.row.LastError, h.row.LastErrorAt = why, w.opts.Now()
			w.mu.Unlock()
			w.log.Warn("watch: giving up linking a subagent to its call", logkey.SessionID, child, logkey.Reason, why)
		}
	}
}
