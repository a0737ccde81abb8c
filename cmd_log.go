package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"prism/backend"
	"prism/core/logkey"
	"prism/core/sessionlog"
	"prism/db"
	"prism/pgstore"
	"prism/sources/otel"
	"prism/store"
	"prism/views"
	"prism/web"
)

// dbFlag registers --db on fs: the store — a SQLite file (default
// ./prism.db) or a postgres:// URL (env PRISM_DB).
func dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", envOr("PRISM_DB", "./prism.db"), dbUsage)
}

// dbUsage is the help of every --db flag.
const dbUsage = "the session store: a SQLite file, or a PostgreSQL URL postgres://user:password@host:port/database (env PRISM_DB)"

// parseInterspersed parses flags that may come before, between or after
// the positional arguments, and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// importMemoryFlag registers --import-memory on fs: the memory budget, in
// MiB, for the decoded events of one imported file (env
// PRISM_IMPORT_MEMORY; default sessionlog.DefaultLimits()).
func importMemoryFlag(fs *flag.FlagSet) *int {
	def := int(sessionlog.DefaultLimits().MaxMemoryBytes >> 20)
	return fs.Int("import-memory", envInt("PRISM_IMPORT_MEMORY", def),
		"MiB of decoded events one imported or watched file may hold in memory; a larger session is refused (env PRISM_IMPORT_MEMORY)")
}

// importLimits returns the decoder limits for an --import-memory value.
func importLimits(mib int) (sessionlog.Limits, error) {
	if mib <= 0 {
		return sessionlog.Limits{}, fmt.Errorf("%w: --import-memory must be a positive number of MiB, got %d", errUsage, mib)
	}
	return sessionlog.Limits{MaxMemoryBytes: int64(mib) << 20}, nil
}

// storeExists refuses a SQLite file that is not there (opening it would
// create an empty store); a PostgreSQL URL is checked by connecting.
func storeExists(dsn string) error {
	if pgstore.IsURL(dsn) {
		return nil
	}
	if _, err := os.Stat(dsn); err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	return nil
}

func openStore(ctx context.Context, dsn string, lim sessionlog.Limits, stderr io.Writer) (sessionStore, error) {
	return openSessionStore(ctx, dsn, storeOptions{Limits: lim, Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
}

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
		for _, r := range res {
			fmt.Fprintf(stdout, "%s\t%s\t%d events\n", r.SessionID, r.Outcome, r.Events)
			for _, n := range r.Notes() {
				fmt.Fprintf(stderr, "prism import: %s: %s\n", f, n)
			}
		}
	}
	if failed > 0 {
		return exitError{code: 1}
	}
	return nil
}

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
	st, err := openStore(ctx, *dbPath, sessionlog.Limits{}, stderr)
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

// runExport writes one session to stdout: as prism JSONL, or with --html as
// one self-contained HTML file (the server's export.html).
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := dbFlag(fs)
	html := fs.Bool("html", false, "write one self-contained HTML file (inline CSS, no script) instead of JSONL")
	otlp := fs.Bool("otlp", false, "write the session as OpenTelemetry GenAI spans: one OTLP/JSON ExportTraceServiceRequest (POST it to /v1/traces)")
	ids, err := parseInterspersed(fs, args)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if len(ids) != 1 {
		return fmt.Errorf("%w: prism export [--db PATH] [--html | --otlp] SESSION_ID", errUsage)
	}
	if *html && *otlp {
		return fmt.Errorf("%w: --html and --otlp exclude each other", errUsage)
	}
	if err := storeExists(*dbPath); err != nil {
		return err
	}
	st, err := openStore(ctx, *dbPath, sessionlog.Limits{}, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	if !*html && !*otlp {
		return st.Export(ctx, ids[0], stdout)
	}
	l, err := st.LoadSession(ctx, ids[0])
	if err != nil {
		return err
	}
	if *otlp {
		req, err := otel.Export(l.Info.Header, l.Events)
		if err != nil {
			return err
		}
		js, err := otel.EncodeJSON(req)
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(js, '\n'))
		return err
	}
	presenter, err := backend.Presenters(slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		return err
	}
	t := views.Fold(l.Info.Header, l.Events, presenter)
	bw := bufio.NewWriter(stdout)
	if err := web.WriteExportHTML(ctx, bw, t, web.ExportNote(time.Now(), nil, false)); err != nil {
		return err
	}
	return bw.Flush()
}

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
	} else if dir, err = db.DefaultDshSessionsDir(); err != nil {
		return err
	}
	if pgstore.IsURL(*dbPath) {
		return fmt.Errorf("%w: prism watch needs a SQLite --db (tailing dsh sessions into PostgreSQL is not supported yet)", errUsage)
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	st, err := db.Open(ctx, *dbPath, db.Options{Logger: logger, Limits: lim})
	if err != nil {
		return err
	}
	defer st.Close()
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		logger.Warn("dsh sessions directory does not exist yet; waiting for it", logkey.Dir, dir)
	}
	logger.Info("watching", logkey.Dir, dir, logkey.DB, *dbPath)
	err = st.NewWatcher(dir, db.WatchOptions{}).Run(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
