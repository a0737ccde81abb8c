package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"

	"prism/core/logkey"
	"prism/engine"
	"prism/pgstore"
	"prism/sources/watch"
	"prism/web"
)

// watchFlag is --watch: repeatable, each value a folder or the name of a
// default place (claude, codex). Its default is PRISM_WATCH, a list
// separated by the OS path-list separator; a --watch on the command line
// replaces the environment's list.
type watchFlag struct {
	dirs *[]string
	set  bool
}

func newWatchFlag(dirs *[]string, env string) *watchFlag {
	for _, d := range strings.Split(env, string(os.PathListSeparator)) {
		if d = strings.TrimSpace(d); d != "" {
			*dirs = append(*dirs, d)
		}
	}
	return &watchFlag{dirs: dirs}
}

func (f *watchFlag) String() string {
	if f == nil || f.dirs == nil {
		return ""
	}
	return strings.Join(*f.dirs, string(os.PathListSeparator))
}

func (f *watchFlag) Set(v string) error {
	if !f.set {
		*f.dirs, f.set = nil, true
	}
	*f.dirs = append(*f.dirs, v)
	return nil
}

// resolveWatch turns --watch values into folders (claude, codex: their
// default places), each once.
func resolveWatch(args []string) ([]string, error) {
	var dirs []string
	seen := map[string]bool{}
	for _, a := range args {
		ds, err := watch.Resolve(a)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			if !seen[d] {
				seen[d] = true
				dirs = append(dirs, d)
			}
		}
	}
	return dirs, nil
}

// folderLocker is a store whose nodes can share watched folders
// (pgstore: one node at a time holds each, by an advisory lock).
type folderLocker interface {
	FolderLock(dir string) *pgstore.FolderLock
}

// startWatchers starts one watcher per folder, each reading every format
// prism knows, and returns them (their health rows feed /sources). With
// shared, the folders are seen by every node of a PostgreSQL store and
// one node at a time tails each.
func startWatchers(ctx context.Context, wg *sync.WaitGroup, st watch.Store, args []string, shared bool, log *slog.Logger) []*watch.Watcher {
	dirs, err := resolveWatch(args)
	if err != nil {
		log.Error("watch: cannot resolve the folders", logkey.Err, err)
		return nil
	}
	var ws []*watch.Watcher
	locker, _ := st.(folderLocker)
	if shared && locker == nil {
		log.Warn("--watch-shared needs a PostgreSQL --db; each folder is watched by this node alone")
	}
	for _, dir := range dirs {
		o := watch.Options{Logger: log, Foreign: engine.Formats()}
		var lock *pgstore.FolderLock
		if shared && locker != nil {
			lock = locker.FolderLock(dir)
			o.Shared = lock
		}
		w := watch.New(st, dir, o)
		ws = append(ws, w)
		wg.Go(func() {
			if lock != nil {
				defer lock.Close()
			}
			if err := w.Run(ctx); err != nil {
				log.Error("watch stopped", logkey.Dir, dir, logkey.Err, err)
			}
		})
		log.Info("watching", logkey.Dir, dir)
	}
	return ws
}

// watchHints are the default places found on this machine that no --watch
// names: the list page tells a newcomer it can watch them, and nothing is
// read from them until asked.
func watchHints(args []string) []web.WatchHint {
	watched := map[string]bool{}
	if dirs, err := resolveWatch(args); err == nil {
		for _, d := range dirs {
			watched[d] = true
		}
	}
	var hints []web.WatchHint
	for _, p := range watch.Detected() {
		if !watched[p.Dir] {
			hints = append(hints, web.WatchHint{Agent: p.Label, Dir: p.Dir, Command: "prism serve --watch=" + p.Name})
		}
	}
	return hints
}
