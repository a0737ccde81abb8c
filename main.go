// Command prism runs an AI agent's tool core and shows, live in the browser,
// what the agent does: each tool call is a card that appears pending when the
// model asks for it and completes when its result is committed.
//
// Usage:
//
//	prism [serve] [flags]          serve the dashboard (default 127.0.0.1:8080, ./prism.db)
//	prism exec TOOL 'RAW-ARGS'     run one tool call and print every projection as JSON
//	prism import [--db PATH] [--as ID] [--replace] FILE…
//	                               import prism JSONL, dsh session.jsonl(.zstd) or a dsh export .zip
//	prism delete [--db PATH] ID…   delete sessions (events, share links, subagents)
//	prism export [--db PATH] [--html] ID  write a session as JSONL (or one HTML file) to stdout
//	prism watch [--db PATH] [DIR…]  tail folders (dsh, Claude Code, Codex; claude, codex) into the store
//	prism migrate --from prism.db --to postgres://…  copy a SQLite store into PostgreSQL
//	prism testgen [--db PATH] ID CALLID -o DIR  write a Go test of a recorded call's cards
//	prism testgen [--db PATH] --label L -o DIR  … of every call labelled L
//	prism compare [--db PATH] [--json] A B  compare two sessions call by call (exit 0 same, 1 differ, 2 error)
//	prism fork [--db PATH] ID --at-turn N [--as NEW_ID] [--prompt …] [--model …] [--system …] [--tools replay|live]
//	                               fork a session at a completed turn (and run a prompt)
//	prism help [COMMAND]           list the commands, or one command's flags (also prism --help)
//
// --db (or PRISM_DB) is a SQLite file or a postgres:// URL: several prism
// nodes may share one PostgreSQL database.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"prism/engine"
	"prism/sources/dsh"
	"prism/store"
)

// command is one prism subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists the subcommands; "serve" is the default.
func commands() []command {
	return []command{
		{"serve", "serve the dashboard (the default command)", runServe},
		{"exec", "run one tool call and print its projections", runExec},
		{"import", "import session logs", runImport},
		{"delete", "delete sessions", runDelete},
		{"export", "export a session as JSONL, one HTML file (--html), OTLP/JSON GenAI spans (--otlp) or a zip with its notes (--with-notes); the labels dataset (--labels)", runExport},
		{"watch", "tail folders of dsh, Claude Code and Codex sessions", runWatch},
		{"migrate", "copy a SQLite store into PostgreSQL", runMigrate},
		{"testgen", "write a Go test of a recorded call's cards (save as test)", runTestgen},
		{"compare", "compare two sessions call by call (exit 0: the same, 1: they differ, 2: an error)", runCompare},
		{"fork", "fork a stored session at a completed turn, optionally running a new prompt", runFork},
	}
}

// errUsage marks a command-line mistake (exit status 2).
var errUsage = errors.New("usage")

// exitError carries a specific exit status without printing more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// usage lists every command with one line.
func usage(w io.Writer) {
	fmt.Fprint(w, "prism runs an AI agent's tool core and shows each tool call live in the browser.\n\n"+
		"Usage: prism [COMMAND] [FLAGS] [ARGS]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "  help     list the commands, or show one command's flags: prism help COMMAND\n\n"+
		"Without a command prism serves the dashboard (prism serve). A command's flags: prism help COMMAND,\n"+
		"or prism COMMAND --help.\n")
}

// run dispatches args to a subcommand and returns the process exit status.
// prism --help (-h, help) lists the commands; prism help COMMAND prints
// that command's flags (on stdout, exit status 0).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name := "serve"
	switch {
	case len(args) > 0 && isHelp(args[0]), len(args) == 1 && args[0] == "help":
		usage(stdout)
		return 0
	case len(args) > 1 && args[0] == "help":
		// A command's own help: its flag set prints its flags.
		name, args, stderr = args[1], []string{"-h"}, stdout
	case len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-':
		name, args = args[0], args[1:]
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		err := c.run(ctx, args, stdout, stderr)
		var ee exitError
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			// The flag set printed the command's flags.
			return 0
		case errors.As(err, &ee):
			return ee.code
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "prism %s: %v\n", name, err)
			return 2
		default:
			fmt.Fprintf(stderr, "prism %s: %v\n", name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "prism: unknown command %q\n\n", name)
	usage(stderr)
	return 2
}

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
// PRISM_IMPORT_MEMORY; default dsh.DefaultLimits()).
func importMemoryFlag(fs *flag.FlagSet) *int {
	def := int(dsh.DefaultLimits().MaxMemoryBytes >> 20)
	return fs.Int("import-memory", envInt("PRISM_IMPORT_MEMORY", def),
		"MiB of decoded events one imported or watched file may hold in memory; a larger session is refused (env PRISM_IMPORT_MEMORY)")
}

// importLimits returns the decoder limits for an --import-memory value.
func importLimits(mib int) (dsh.Limits, error) {
	if mib <= 0 {
		return dsh.Limits{}, fmt.Errorf("%w: --import-memory must be a positive number of MiB, got %d", errUsage, mib)
	}
	return dsh.Limits{MaxMemoryBytes: int64(mib) << 20}, nil
}

// storeExists refuses a SQLite file that is not there (opening it would
// create an empty store); a PostgreSQL URL is checked by connecting.
func storeExists(dsn string) error {
	if engine.IsPostgres(dsn) {
		return nil
	}
	if _, err := os.Stat(dsn); err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	return nil
}

func openStore(ctx context.Context, dsn string, lim dsh.Limits, stderr io.Writer) (store.Store, error) {
	return engine.Open(ctx, dsn, engine.Options{Limits: lim, Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
}

// envOr returns the environment variable key, or def when it is unset or empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
