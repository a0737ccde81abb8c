package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"

	"prism/core/logkey"
	"prism/web"
)

// serveConfig is the serve command's configuration: flags, each with a
// PRISM_* environment default.
type serveConfig struct {
	// Addr is the listen address; loopback by default.
	Addr string
	// DB is the SQLite database path.
	DB string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// SyncNormal relaxes SQLite's synchronous=FULL to NORMAL.
	SyncNormal bool
	// Watch is a dsh sessions directory to tail into the store ("" = none).
	Watch string
	// NoDemo skips the demo session on an empty database.
	NoDemo bool
	// AllowedHosts are extra Host header values the server answers (DNS
	// rebinding protection admits only loopback names on a loopback bind).
	AllowedHosts []string
	// agent configures the agent runner.
	agent *agentFlags
	// mcp lists the MCP servers whose tools the agent may call.
	mcp *mcpFlags
}

// parseServeFlags reads the serve flags over their environment defaults.
func parseServeFlags(args []string, stderr io.Writer) (serveConfig, error) {
	var cfg serveConfig
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "addr", envOr("PRISM_ADDR", "127.0.0.1:8080"), "listen address (env PRISM_ADDR)")
	fs.StringVar(&cfg.DB, "db", envOr("PRISM_DB", "./prism.db"), "SQLite database path (env PRISM_DB)")
	fs.StringVar(&cfg.LogLevel, "log-level", envOr("PRISM_LOG_LEVEL", "info"), "log level: debug, info, warn, error (env PRISM_LOG_LEVEL)")
	fs.BoolVar(&cfg.SyncNormal, "sync-normal", envBool("PRISM_SYNC_NORMAL"), "relax SQLite synchronous=FULL to NORMAL: faster, may lose the last commits on power loss (env PRISM_SYNC_NORMAL=1)")
	fs.StringVar(&cfg.Watch, "watch", os.Getenv("PRISM_WATCH"), "tail this dsh sessions directory into the store, e.g. ~/.dsh/sessions (env PRISM_WATCH)")
	fs.BoolVar(&cfg.NoDemo, "no-demo", envBool("PRISM_NO_DEMO"), "do not start the demo session on an empty database (env PRISM_NO_DEMO=1)")
	hosts := fs.String("allowed-hosts", os.Getenv("PRISM_ALLOWED_HOSTS"), "comma-separated extra Host names the server answers, e.g. a proxy's name (env PRISM_ALLOWED_HOSTS)")
	cfg.agent = addAgentFlags(fs)
	cfg.mcp = addMCPFlags(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, fmt.Errorf("%w: %v", errUsage, err)
	}
	if _, err := cfg.mcp.configs(); err != nil {
		return cfg, err
	}
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			cfg.AllowedHosts = append(cfg.AllowedHosts, h)
		}
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	return cfg, nil
}

// runServe serves the dashboard until ctx is done.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseServeFlags(args, stderr)
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return fmt.Errorf("%w: bad --log-level %q", errUsage, cfg.LogLevel)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	deps, closeBackend, err := openBackend(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer closeBackend()
	deps.Logger = logger
	srv := web.New(deps)
	defer srv.Close()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	logger.Info("serving", logkey.URL, "http://"+ln.Addr().String())
	if err := srv.Serve(ctx, ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
