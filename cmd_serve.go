package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"prism/backend"
	"prism/backend/attend"
	"prism/core"
	"prism/core/attention"
	"prism/core/logkey"
	"prism/core/model"
	"prism/core/notes"
	"prism/core/price"
	"prism/core/redact"
	"prism/engine"
	"prism/sources/dsh"
	"prism/sources/watch"
	"prism/views"
	"prism/web"
	"prism/web/ownerauth"
)

// serveConfig is the serve command's configuration: flags, each with a
// PRISM_* environment default.
type serveConfig struct {
	// Addr is the listen address; loopback by default.
	Addr string
	// DB is the store: a SQLite file path or a postgres:// URL.
	DB string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// SyncNormal relaxes SQLite's synchronous=FULL to NORMAL.
	SyncNormal bool
	// Watch are the folders to tail into the store (--watch, repeatable;
	// claude and codex name their default places): dsh sessions, Claude
	// Code projects, Codex sessions, each file's kind told by content.
	Watch []string
	// WatchShared: the watched folders are seen by every node of a
	// PostgreSQL store, and one node at a time tails each (an advisory
	// lock; another takes over when the holder dies).
	WatchShared bool
	// NoDemo skips the demo session on an empty database.
	NoDemo bool
	// Prices is a price table: inline JSON or a file's path ("" = no
	// costs shown).
	Prices string
	// Labels is the comma-separated set of labels the cards' label form
	// suggests ("" = views.DefaultLabels; free text is allowed anyway).
	Labels string
	// Retain, when set, deletes sessions that ended longer ago than it
	// (checked at start, then daily); 0 keeps everything.
	Retain time.Duration
	// RepairInterval is how often a node on PostgreSQL looks for running
	// sessions whose node is gone, to repair them (0: pgstore's default).
	RepairInterval time.Duration
	// AllowedHosts are extra Host header values the server answers (DNS
	// rebinding protection admits only loopback names on a loopback bind).
	AllowedHosts []string
	// ImportLimits bound what uploads and --watch decode (--import-memory).
	ImportLimits dsh.Limits
	// MaxStreamsPerClient caps the live streams one client address may
	// hold open (0 = no cap).
	MaxStreamsPerClient int
	// ImportMinRateKiB is the slowest an import upload may arrive, in KiB
	// a second averaged over each 10 s (--import-min-rate; 0 = no minimum).
	ImportMinRateKiB int
	// ShareStreamsPerLink and ShareStreams cap the open streams of one
	// share link and of all links (web.Tuning; negative = no cap).
	ShareStreamsPerLink int
	ShareStreams        int
	// ShareAddr is the share listener's address ("" = none): it serves
	// share links and static files only.
	ShareAddr string
	// OTLPAddr is the OTLP listener's address ("" = none): it serves only
	// POST /v1/traces, with the owner token when one is set.
	OTLPAddr string
	// OTLPEndpoint is a collector's OTLP/HTTP traces URL ("" = none):
	// each committed turn is pushed there as GenAI spans.
	OTLPEndpoint string
	// PublicURL is the scheme and host share URLs start with ("" = the
	// request's).
	PublicURL string
	// RedactRules are the user's redaction rules (regular expressions).
	RedactRules []string
	// Rules is the attention rules file ("" = none); SIGHUP reads it again.
	Rules string
	// rules and prices are the parsed rules file and price table
	// (runServe fills them before openBackend).
	rules  *attention.Rules
	prices price.Table
	// OwnerToken is PRISM_OWNER_TOKEN (environment only, never a flag).
	OwnerToken string
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
	fs.StringVar(&cfg.DB, "db", envOr("PRISM_DB", "./prism.db"), dbUsage)
	fs.StringVar(&cfg.LogLevel, "log-level", envOr("PRISM_LOG_LEVEL", "info"), "log level: debug, info, warn, error (env PRISM_LOG_LEVEL)")
	fs.BoolVar(&cfg.SyncNormal, "sync-normal", envBool("PRISM_SYNC_NORMAL"), "relax SQLite synchronous=FULL to NORMAL: faster, may lose the last commits on power loss (env PRISM_SYNC_NORMAL=1)")
	fs.Var(newWatchFlag(&cfg.Watch, os.Getenv("PRISM_WATCH")), "watch", "tail this folder into the store, repeatable: dsh sessions, Claude Code projects, Codex sessions, told apart by content; claude = ~/.claude/projects (CLAUDE_CONFIG_DIR), codex = ~/.codex/sessions (CODEX_HOME); a folder named claude is ./claude (env PRISM_WATCH, a list separated by "+string(os.PathListSeparator)+")")
	fs.BoolVar(&cfg.WatchShared, "watch-shared", envBool("PRISM_WATCH_SHARED"), "PostgreSQL: the --watch folders are on a volume every node sees; one node at a time tails each, another takes over when it dies (env PRISM_WATCH_SHARED=1)")
	fs.BoolVar(&cfg.NoDemo, "no-demo", envBool("PRISM_NO_DEMO"), "do not start the demo session on an empty database (env PRISM_NO_DEMO=1)")
	fs.StringVar(&cfg.Labels, "labels", os.Getenv("PRISM_LABELS"), "comma-separated labels the cards' label form suggests (default wrong,slow,good,flaky; any other text may be typed) (env PRISM_LABELS)")
	fs.StringVar(&cfg.Prices, "prices", os.Getenv("PRISM_PRICES"), "price table, USD per 1M tokens per model: inline JSON ({\"deepseek-chat\": {\"input\": 0.27, \"output\": 1.10}}) or the path of a file holding it; session pages show costs (env PRISM_PRICES)")
	retain := fs.String("retain", os.Getenv("PRISM_RETAIN"), "delete sessions whose last event is older than this and that are not running, daily, e.g. 30d (env PRISM_RETAIN; default: keep everything)")
	repairEvery := fs.String("repair-interval", os.Getenv("PRISM_REPAIR_INTERVAL"),
		"PostgreSQL: how often this node looks for sessions that look running but whose node is gone (their lock is free) to repair them; such a session is repaired after two intervals, e.g. 2s (env PRISM_REPAIR_INTERVAL; default 2s)")
	hosts := fs.String("allowed-hosts", os.Getenv("PRISM_ALLOWED_HOSTS"), "comma-separated extra Host names the server answers, e.g. a proxy's name (env PRISM_ALLOWED_HOSTS)")
	mem := importMemoryFlag(fs)
	fs.IntVar(&cfg.MaxStreamsPerClient, "max-streams-per-client", envInt("PRISM_MAX_STREAMS_PER_CLIENT", 0),
		"live streams one client address may hold open; 0 = no cap (proxies, NAT and load balancers put many readers behind one address) (env PRISM_MAX_STREAMS_PER_CLIENT)")
	fs.IntVar(&cfg.ImportMinRateKiB, "import-min-rate", envInt("PRISM_IMPORT_MIN_RATE", 16),
		"KiB/s an import upload must keep up, averaged over each 10 s, or be cut with 408; 0 = no minimum (env PRISM_IMPORT_MIN_RATE)")
	fs.IntVar(&cfg.ShareStreamsPerLink, "share-max-streams-per-link", envInt("PRISM_SHARE_MAX_STREAMS_PER_LINK", 1000),
		"live streams one share link may have open at once (its viewers); past it the link answers 429 with Retry-After and a busy page; -1 = no cap, 0 = the default (env PRISM_SHARE_MAX_STREAMS_PER_LINK)")
	fs.IntVar(&cfg.ShareStreams, "share-max-streams", envInt("PRISM_SHARE_MAX_STREAMS", 5000),
		"live streams all share links together may have open at once; past it they answer 503 with Retry-After; the owner's pages are not counted; -1 = no cap, 0 = the default (env PRISM_SHARE_MAX_STREAMS)")
	fs.StringVar(&cfg.OTLPAddr, "otlp-addr", os.Getenv("PRISM_OTLP_ADDR"), "listener serving only the OTLP/HTTP trace receiver (POST /v1/traces), e.g. 127.0.0.1:4318; off loopback it needs PRISM_OWNER_TOKEN (env PRISM_OTLP_ADDR)")
	fs.StringVar(&cfg.OTLPEndpoint, "otlp-endpoint", os.Getenv("PRISM_OTLP_ENDPOINT"), "push each committed turn as OpenTelemetry GenAI spans to this OTLP/HTTP traces URL, e.g. http://127.0.0.1:4318/v1/traces; OTEL_EXPORTER_OTLP_HEADERS applies (env PRISM_OTLP_ENDPOINT)")
	fs.StringVar(&cfg.ShareAddr, "share-addr", os.Getenv("PRISM_SHARE_ADDR"), "second listener serving only share links (/s/…) and static files, e.g. 0.0.0.0:8081 (env PRISM_SHARE_ADDR)")
	fs.StringVar(&cfg.PublicURL, "public-url", os.Getenv("PRISM_PUBLIC_URL"), "scheme and host share URLs start with, e.g. https://share.example.com (env PRISM_PUBLIC_URL; default: the request's)")
	fs.Func("redact-rule", "a regular expression whose matches share links redact as [redacted:custom] (repeatable; a group named secret limits it to that part)", func(v string) error {
		cfg.RedactRules = append(cfg.RedactRules, v)
		return nil
	})
	fs.StringVar(&cfg.Rules, "rules", os.Getenv("PRISM_RULES"), "attention rules: a TOML file of [[rule]] tables (pending, approval-waiting, loop, error-streak, budget, idle, query) with badge, webhook and cancel actions; SIGHUP reads it again (env PRISM_RULES)")
	cfg.OwnerToken = os.Getenv("PRISM_OWNER_TOKEN")
	cfg.agent = addAgentFlags(fs)
	cfg.mcp = addMCPFlags(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	if cfg.ImportMinRateKiB < 0 {
		return cfg, fmt.Errorf("%w: --import-min-rate must be 0 (no minimum) or a positive number of KiB/s, got %d", errUsage, cfg.ImportMinRateKiB)
	}
	lim, err := importLimits(*mem)
	if err != nil {
		return cfg, err
	}
	cfg.ImportLimits = lim
	if _, err := cfg.mcp.configs(); err != nil {
		return cfg, err
	}
	if cfg.Retain, err = parseRetain(*retain); err != nil {
		return cfg, err
	}
	if *repairEvery != "" {
		d, err := time.ParseDuration(*repairEvery)
		if err != nil || d < 10*time.Millisecond || d > time.Hour {
			return cfg, fmt.Errorf("%w: --repair-interval must be a duration from 10ms to 1h, e.g. 2s, got %q", errUsage, *repairEvery)
		}
		cfg.RepairInterval = d
	}
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			cfg.AllowedHosts = append(cfg.AllowedHosts, h)
		}
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return cfg, fmt.Errorf("%w: --public-url must be http(s)://host[:port] with no path, got %q", errUsage, cfg.PublicURL)
		}
	}
	return cfg, nil
}

// errNoOwnerToken is the refusal to listen off loopback without an owner.
func errNoOwnerToken(addr string) error {
	return fmt.Errorf("refusing to serve on %s without an owner token: that address is reachable from other machines, "+
		"and every session (and starting new ones) would be open to them. Set PRISM_OWNER_TOKEN (at least %d characters, "+
		"e.g. PRISM_OWNER_TOKEN=$(openssl rand -hex 16); in a container: docker run -e PRISM_OWNER_TOKEN=…), "+
		"or listen on 127.0.0.1. Share links can be served alone with --share-addr", addr, ownerauth.MinTokenLen)
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
	logger := newLogger(stderr, level, model.NewScrubber(apiKey(), cfg.agent.baseURL, cfg.OwnerToken))
	var guard *ownerauth.Guard
	if cfg.OwnerToken != "" {
		if guard, err = ownerauth.New(cfg.OwnerToken, ownerauth.Options{}); err != nil {
			return err
		}
	}
	redactor, err := redact.New(cfg.RedactRules...)
	if err != nil {
		return fmt.Errorf("%w: --redact-rule: %v", errUsage, err)
	}
	var prices price.Table
	if cfg.Prices != "" {
		if prices, err = loadPrices(cfg.Prices); err != nil {
			return fmt.Errorf("%w: --prices: %v", errUsage, err)
		}
	}
	labels, err := parseLabels(cfg.Labels)
	if err != nil {
		return fmt.Errorf("%w: --labels: %v", errUsage, err)
	}
	cfg.prices = prices
	if cfg.Rules != "" {
		if cfg.rules, err = loadRules(cfg); err != nil {
			return fmt.Errorf("%w: --rules: %v", errUsage, err)
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	if guard == nil && !ownerauth.IsLoopback(ln.Addr()) {
		return errNoOwnerToken(cfg.Addr)
	}
	var shareLn net.Listener
	if cfg.ShareAddr != "" {
		if shareLn, err = net.Listen("tcp", cfg.ShareAddr); err != nil {
			return fmt.Errorf("listen (--share-addr): %w", err)
		}
		defer shareLn.Close()
	}
	var otlpLn net.Listener
	if cfg.OTLPAddr != "" {
		if otlpLn, err = net.Listen("tcp", cfg.OTLPAddr); err != nil {
			return fmt.Errorf("listen (--otlp-addr): %w", err)
		}
		defer otlpLn.Close()
		if guard == nil && !ownerauth.IsLoopback(otlpLn.Addr()) {
			return errNoOwnerToken(cfg.OTLPAddr)
		}
	}

	deps, closeBackend, err := openBackend(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer closeBackend()
	deps.Logger = logger
	deps.Tuning.MaxStreamsPerClient = cfg.MaxStreamsPerClient
	deps.Tuning.ImportMinRate = int64(cfg.ImportMinRateKiB) << 10
	if cfg.ImportMinRateKiB == 0 {
		deps.Tuning.ImportMinRate = -1 // no minimum
	}
	deps.Tuning.ShareStreamsPerLink = cfg.ShareStreamsPerLink
	deps.Tuning.ShareStreams = cfg.ShareStreams
	deps.Redactor = redactor
	deps.Prices = prices
	deps.Labels = labels
	if guard != nil {
		// The logins live in the store: a sign-out holds after a restart
		// and on every node of a shared PostgreSQL.
		logins, ok := deps.Shares.(ownerauth.Logins)
		if !ok {
			return fmt.Errorf("the session store keeps no owner logins")
		}
		if guard, err = ownerauth.New(cfg.OwnerToken, ownerauth.Options{Logins: logins}); err != nil {
			return err
		}
	}
	deps.Owner = guard
	deps.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	if shareLn != nil {
		if a, ok := shareLn.Addr().(*net.TCPAddr); ok {
			deps.SharePort = a.Port
		}
	}
	srv := web.New(deps)
	defer srv.Close()
	if svc, ok := deps.Attention.(*attend.Service); ok && cfg.Rules != "" {
		stopHUP := reloadOnHUP(cfg, svc, nil)
		defer stopHUP()
	}

	// The listeners stop when any does.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 3)
	n := 1
	if otlpLn != nil {
		n++
		logger.Info("serving OTLP traces", logkey.URL, "http://"+otlpLn.Addr().String()+views.OTLPTracesURL())
		go func() { errc <- srv.ServeOTLP(ctx, otlpLn) }()
	}
	if shareLn != nil {
		n++
		logger.Info("serving share links", logkey.URL, "http://"+shareLn.Addr().String())
		go func() { errc <- srv.ServeShares(ctx, shareLn) }()
	}
	logger.Info("serving", logkey.URL, "http://"+ln.Addr().String(), logkey.OwnerToken, guard != nil)
	go func() { errc <- srv.Serve(ctx, ln) }()
	var first error
	for range n {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) && first == nil {
			first = err
		}
		stop()
	}
	return first
}

// newLogger returns the server's text logger. Every attribute passes
// through scrub before it is written, so neither the API key nor the base
// URL's credentials reach the log, whichever error carried them.
func newLogger(w io.Writer, level slog.Level, scrub *model.Scrubber) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		switch a.Value.Kind() {
		case slog.KindString:
			a.Value = slog.StringValue(scrub.Scrub(a.Value.String()))
		case slog.KindAny:
			text := fmt.Sprint(a.Value.Any())
			if clean := scrub.Scrub(text); clean != text {
				a.Value = slog.StringValue(clean)
			}
		}
		return a
	}}))
}

// parseLabels reads --labels: comma-separated labels, each one a valid
// label (notes.CheckLabel); "" is the default set (nil).
func parseLabels(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []string
	for _, l := range strings.Split(v, ",") {
		l, err := notes.CheckLabel(l)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", l, err)
		}
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, nil
}

// loadPrices reads --prices: a JSON price table written inline (it starts
// with "{") or the path of a file holding one.
func loadPrices(v string) (price.Table, error) {
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		t, err := price.Parse([]byte(v))
		if err != nil {
			return nil, fmt.Errorf("inline price table: %w", err)
		}
		return t, nil
	}
	return price.Load(v)
}

// parseRetain reads a --retain value: a Go duration ("36h") or a number of
// days ("30d"); "" or "0" is off. Anything under an hour is refused: a
// typo must not delete a day's sessions.
func parseRetain(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%w: --retain %q: want a positive number of days (30d) or a duration (72h)", errUsage, s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%w: --retain %q: want a positive number of days (30d) or a duration (72h)", errUsage, s)
		}
	}
	if d < time.Hour {
		return 0, fmt.Errorf("%w: --retain %q: at least 1h", errUsage, s)
	}
	return d, nil
}

// openBackend builds what the web server consumes: the store (SQLite or
// PostgreSQL) as the session source, commit feed and importer (package
// backend's adapters); a registry of the built-in tools and the MCP
// servers' tools (--mcp) as the presenter; the agent runner (on PostgreSQL,
// one that forwards follow-ups and cancels to the node running a session);
// and, with --watch, a watcher of a dsh sessions directory. On an empty
// database it starts one demo session on the scripted model, so a newcomer
// sees cards move (one, however many nodes start together). The returned
// func releases everything (runner first, then the store).
func openBackend(ctx context.Context, cfg serveConfig, log *slog.Logger) (web.Deps, func(), error) {
	feed := &backend.Feed{}
	st, err := engine.Open(ctx, cfg.DB, engine.Options{Logger: log, SyncNormal: cfg.SyncNormal, Limits: cfg.ImportLimits, Committed: feed.Publish, RepairInterval: cmp.Or(cfg.RepairInterval, engine.DefaultRepairInterval)})
	if err != nil {
		return web.Deps{}, nil, err
	}
	watched, _ := st.(watch.Store)
	if len(cfg.Watch) > 0 && watched == nil {
		st.Close()
		return web.Deps{}, nil, fmt.Errorf("%w: --watch: this store cannot be watched into", errUsage)
	}
	if repaired, err := st.RepairOpenTurns(ctx); err != nil {
		log.Warn("crash repair of open sessions failed", logkey.Err, err)
	} else if len(repaired) > 0 {
		log.Info("closed turns a previous run left open", logkey.Sessions, len(repaired))
	}
	mcpTools := []*core.Tool(nil)
	closeMCP := func() {}
	if cfg.mcp != nil {
		if mcpTools, closeMCP, err = cfg.mcp.open(ctx, log); err != nil {
			st.Close()
			return web.Deps{}, nil, err
		}
	}
	presenter, err := backend.Presenters(log, mcpTools...)
	if err != nil {
		closeMCP()
		st.Close()
		return web.Deps{}, nil, err
	}
	runner, approvals, closeRunner, err := cfg.agent.newAgentRunner(st, log, mcpTools...)
	if err != nil {
		closeMCP()
		st.Close()
		return web.Deps{}, nil, err
	}
	local := runner // this process's runner: the attention rules' cancel
	var decider web.Approvals = approvals
	if c, ok := st.(backend.Cluster); ok {
		runner, decider = backend.NewClusterRunner(runner.(backend.AgentRunner), approvals, c, log)
	}
	bg, stopBG := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if cfg.OTLPEndpoint != "" {
		pusher, err := backend.NewPusher(cfg.OTLPEndpoint, backend.Source{Store: st}, log)
		if err != nil {
			stopBG()
			closeRunner()
			closeMCP()
			st.Close()
			return web.Deps{}, nil, fmt.Errorf("%w: --otlp-endpoint: %w", errUsage, err)
		}
		feed.OnLocalCommit(pusher.Observe) // once per commit across nodes: its own node pushes
		wg.Go(func() { pusher.Run(bg) })
		log.Info("pushing turns as OTLP traces", logkey.URL, cfg.OTLPEndpoint)
	}
	var reporters []core.SourceReporter
	for _, w := range startWatchers(bg, &wg, watched, cfg.Watch, cfg.WatchShared, log) {
		reporters = append(reporters, w)
	}
	var attn *attend.Service
	if cfg.rules != nil {
		attn = newAttention(cfg, st, local, log)
		feed.OnCommit(attn.Observe)
		feed.OnReplace(attn.Replaced)
		wg.Go(func() { attn.Run(bg) })
		log.Info("attention rules", logkey.File, cfg.Rules, logkey.Rules, len(cfg.rules.Rules))
	}
	if cfg.Retain > 0 {
		wg.Go(func() { backend.Retain(bg, st, cfg.Retain, time.Now, log) })
		log.Info("retention: sessions are deleted once they ended longer ago than the retention period", logkey.Retain, cfg.Retain)
	}
	release := func() {
		stopBG()
		wg.Wait()
		closeRunner()
		closeMCP()
		if err := st.Close(); err != nil {
			log.Error("close store", logkey.Err, err)
		}
	}
	demoID := ""
	if !cfg.NoDemo {
		var id string
		started, err := st.IfEmpty(ctx, func(ctx context.Context) error {
			var err error
			id, err = runner.StartSession(ctx, web.StartRequest{Prompt: model.DemoPrompt, Model: model.DemoModelName})
			return err
		})
		if err != nil {
			release()
			return web.Deps{}, nil, fmt.Errorf("start the demo session: %w", err)
		}
		if started {
			log.Info("empty database: started the scripted demo session", logkey.SessionID, id)
			demoID = id
		}
	}
	deps := web.Deps{
		Sessions:  backend.Source{Store: st},
		Commits:   feed,
		Importer:  backend.Importer{Store: st},
		Deleter:   backend.Deleter{Store: st},
		Runner:    runner,
		Approvals: decider,
		Presenter: presenter,
		Shares:    st,
		Notes:     st,
		DemoID:    demoID,
		Sources:   reporters,
		Watchable: watchHints(cfg.Watch),

		AllowedHosts: cfg.AllowedHosts,
	}
	if attn != nil {
		deps.Attention = attn
	}
	if sp, ok := st.(backend.SpanStore); ok {
		// senders counts spans per OTLP sender (service.name): a row each
		// on the source-health page.
		senders := &backend.SenderStats{}
		deps.Traces = backend.Traces{Store: sp, Stats: senders, Logger: log}
		deps.Sources = append(deps.Sources, senders)
	} else {
		log.Warn("the OTLP trace receiver is off: this store keeps no spans")
	}
	if f, ok := st.(backend.Finder); ok {
		deps.Search = backend.Search{Store: f}
	} else {
		// Without a Searcher the list shows no search box and /search and
		// /api/search answer 503.
		log.Warn("full-text search is off: this store has no search index")
	}
	return deps, release, nil
}
