package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"prism/core/logkey"
	"prism/engine"
	"prism/sources/watch"
)

// runWatch tails a dsh sessions directory into the store until interrupted.
func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := dbFlag(fs)
	mem := importMemoryFlag(fs)
	dirs, err := parseInterspersed(fs, args)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if len(dirs) > 1 {
		return fmt.Errorf("%w: prism watch [--db PATH] [--import-memory MiB] [DIR]", errUsage)
	}
	lim, err := importLimits(*mem)
	if err != nil {
		return err
	}
	dir := ""
	if len(dirs) == 1 {
		dir = dirs[0]
	} else if dir, err = watch.DefaultDshSessionsDir(); err != nil {
		return err
	}
	if engine.IsPostgres(*dbPath) {
		return fmt.Errorf("%w: prism watch needs a SQLite --db (tailing dsh sessions into PostgreSQL is not supported yet)", errUsage)
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
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		logger.Warn("dsh sessions directory does not exist yet; waiting for it", logkey.Dir, dir)
	}
	logger.Info("watching", logkey.Dir, dir, logkey.DB, *dbPath)
	err = watch.New(st, dir, watch.Options{Logger: logger}).Run(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
