package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"prism/core/logkey"
	"prism/engine"
	"prism/sources/watch"
)

// runWatch tails folders into the store until interrupted: each DIR (or
// claude, codex: their default places) is watched for dsh logs, Claude
// Code transcripts and Codex rollouts, told apart by content; with no DIR,
// dsh's sessions directory.
func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := dbFlag(fs)
	mem := importMemoryFlag(fs)
	args, err := parseInterspersed(fs, args)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	lim, err := importLimits(*mem)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		dir, err := watch.DefaultDshSessionsDir()
		if err != nil {
			return err
		}
		args = []string{dir}
	}
	dirs, err := resolveWatch(args)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	opened, err := engine.Open(ctx, *dbPath, engine.Options{Logger: logger, Limits: lim})
	if err != nil {
		return err
	}
	defer opened.Close()
	st, ok := opened.(watch.Store)
	if !ok {
		return fmt.Errorf("%w: prism watch: this store cannot be watched into", errUsage)
	}
	var wg sync.WaitGroup
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			logger.Warn("folder does not exist yet; waiting for it", logkey.Dir, dir)
		}
		logger.Info("watching", logkey.Dir, dir, logkey.DB, *dbPath)
		w := watch.New(st, dir, watch.Options{Logger: logger, Foreign: engine.Formats()})
		wg.Go(func() {
			if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				logger.Error("watch stopped", logkey.Dir, dir, logkey.Err, err)
			}
		})
	}
	wg.Wait()
	return nil
}
