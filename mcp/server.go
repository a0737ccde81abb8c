package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"prism/core"
	"prism/core/logkey"
)

// Defaults of Options.
const (
	DefaultCallTimeout    = 60 * time.Second
	DefaultConnectTimeout = 30 * time.Second
)

// Options configures how prism runs MCP servers.
type Options struct {
	// CallTimeout bounds one tool call (the tool's timeout: TOOL_TIMEOUT);
	// 0 means DefaultCallTimeout.
	CallTimeout time.Duration
	// ConnectTimeout bounds starting a server and its handshake; 0 means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Presenters draw the cards of tools by full name (mcp__<server>__<tool>).
	Presenters map[string]Presenter
	// Env is the environment of command servers; nil means prism's own,
	// less PRISM_API_KEY and DEEPSEEK_API_KEY.
	Env []string
	// Logger receives connection events and the servers' stderr lines; nil
	// discards them.
	Logger *slog.Logger
}

func (o Options) timeout() time.Duration {
	if o.CallTimeout > 0 {
		return o.CallTimeout
	}
	return DefaultCallTimeout
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// Server is one MCP server as a source of tools. It connects on demand and
// reconnects on the call after its connection broke. It is safe for
// concurrent use.
type Server struct {
	cfg    Config
	opts   Options
	client *sdk.Client
	log    *slog.Logger

	mu     sync.Mutex // serializes connecting
	sess   *sdk.ClientSession
	closed bool
	tools  []*core.Tool
}

// Connect starts (or reaches) the server, lists its tools and defines each
// as a raw core tool. The server stays connected until Close.
func Connect(ctx context.Context, cfg Config, opts Options) (*Server, error) {
	s := &Server{
		cfg:    cfg,
		opts:   opts,
		client: sdk.NewClient(&sdk.Implementation{Name: "prism", Version: "1"}, nil),
		log:    opts.logger().With(logkey.MCPServer, cfg.Name),
	}
	sess, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]string{}
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("mcp server %q: tools/list: %w", cfg.Name, err)
		}
		name := ToolName(cfg.Name, t.Name)
		if prev, dup := seen[name]; dup {
			s.log.Warn("mcp tool skipped: its name collides with another tool's", logkey.MCPTool, t.Name, logkey.Tool, name, logkey.Reason, "also the name of "+prev)
			continue
		}
		seen[name] = t.Name
		tool, err := s.define(t)
		if err != nil {
			s.log.Warn("mcp tool skipped", logkey.MCPTool, t.Name, logkey.Err, err)
			continue
		}
		s.tools = append(s.tools, tool)
	}
	for name := range opts.Presenters {
		if srv, _, ok := SplitToolName(name); ok && srv == cfg.Name && seen[name] == "" {
			s.log.Warn("presenter for a tool the server does not list", logkey.Tool, name)
		}
	}
	s.log.Info("mcp server connected", logkey.Tools, len(s.tools), logkey.Target, s.target())
	return s, nil
}

// Name returns the server's configured name.
func (s *Server) Name() string { return s.cfg.Name }

// Tools returns the server's tools, as listed when it connected.
func (s *Server) Tools() []*core.Tool { return s.tools }

// Close ends the connection (and stops a command server).
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.sess == nil {
		return nil
	}
	err := s.sess.Close()
	s.sess = nil
	return err
}

func (s *Server) target() string {
	if s.cfg.URL != "" {
		return s.cfg.URL
	}
	return s.cfg.Command[0]
}

// session returns the live session, connecting first when there is none.
func (s *Server) session(ctx context.Context) (*sdk.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, unavailable(s.cfg.Name, "", errors.New("the server was closed"))
	}
	if s.sess != nil {
		return s.sess, nil
	}
	d := s.opts.ConnectTimeout
	if d <= 0 {
		d = DefaultConnectTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	sess, err := s.client.Connect(cctx, s.transport(), nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, unavailable(s.cfg.Name, "", fmt.Errorf("connect to %s: %w", s.target(), err))
	}
	s.sess = sess
	go s.watch(sess)
	return sess, nil
}

// watch forgets a session once its connection ends (a crashed server), so
// that the next call reconnects.
func (s *Server) watch(sess *sdk.ClientSession) {
	err := sess.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == sess {
		s.sess = nil
		if !s.closed {
			s.log.Warn("mcp server connection ended; the next call reconnects", logkey.Err, err)
		}
	}
}

// drop closes sess after a call saw its connection break.
func (s *Server) drop(sess *sdk.ClientSession) {
	s.mu.Lock()
	if s.sess == sess {
		s.sess = nil
	}
	s.mu.Unlock()
	_ = sess.Close()
}

func (s *Server) transport() sdk.Transport {
	if s.cfg.URL != "" {
		return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, MaxRetries: -1, DisableStandaloneSSE: true}
	}
	cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
	cmd.Env = s.opts.Env
	if cmd.Env == nil {
		cmd.Env = childEnv(os.Environ())
	}
	cmd.Stderr = &lineLogger{log: s.log}
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
}

// childEnv is the environment without prism's model API keys: a server
// has no business with them.
func childEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if strings.HasPrefix(kv, "PRISM_API_KEY=") || strings.HasPrefix(kv, "DEEPSEEK_API_KEY=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// call runs tools/call and returns dsh's canonical value {content,
// structuredContent?}, or the failure of the call.
func (s *Server) call(ctx context.Context, tool string, args any) (any, error) {
	obj, ok := args.(map[string]any)
	if !ok {
		return nil, &core.Error{Name: "ToolArgsError", Code: core.CodeInvalidArgs,
			Message: `invalid arguments: "arguments" must be an object`}
	}
	sess, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: obj})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, ctx.Err() // the pipeline reports the timeout or the cancellation
	default:
		var wire *jsonrpc.Error
		if errors.As(err, &wire) {
			return nil, &core.Error{Name: "McpRequestError", Code: CodeRequestFailed, Err: err,
				Message: fmt.Sprintf("mcp server %q refused tools/call %q: %s (code %d)", s.cfg.Name, tool, wire.Message, wire.Code)}
		}
		s.drop(sess)
		return nil, unavailable(s.cfg.Name, tool, err)
	}
	if res.IsError {
		return nil, &core.Error{Name: "McpToolError", Code: CodeToolError, Message: errorText(res.Content)}
	}
	content := make([]json.RawMessage, 0, len(res.Content))
	for _, c := range res.Content {
		raw, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("mcp server %q: tool %q: content: %w", s.cfg.Name, tool, err)
		}
		content = append(content, raw)
	}
	value := map[string]any{"content": content}
	if res.StructuredContent != nil {
		value["structuredContent"] = res.StructuredContent
	}
	return value, nil
}

// unavailable is the failure of a server that cannot be reached or whose
// connection broke.
func unavailable(server, tool string, err error) error {
	msg := fmt.Sprintf("mcp server %q is unavailable: %v", server, err)
	if tool != "" {
		msg = fmt.Sprintf("mcp server %q: tools/call %q failed: %v (the server's connection ended; the next call reconnects)", server, tool, err)
	}
	return &core.Error{Name: "McpConnectionError", Code: CodeUnavailable, Message: msg, Err: err}
}

// errorText is the message of an isError result: its text blocks.
func errorText(content []sdk.Content) string {
	var parts []string
	for _, c := range content {
		if t, ok := c.(*sdk.TextContent); ok && t.Text != "" {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		return "the MCP tool reported an error without text"
	}
	return strings.Join(parts, "\n")
}

// lineLogger logs a server's stderr line by line.
type lineLogger struct {
	log *slog.Logger
	buf []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			if len(l.buf) > 4096 {
				l.emit(l.buf)
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

func (l *lineLogger) emit(line []byte) {
	if s := strings.TrimRight(string(line), "\r"); s != "" {
		l.log.Info("mcp server stderr", logkey.Line, s)
	}
}

var _ io.Writer = (*lineLogger)(nil)

// Set is the servers of one configuration.
type Set struct {
	servers []*Server
}

// Open connects every configured server. A server that cannot be reached
// or listed fails the whole set (the others are closed), naming it.
func Open(ctx context.Context, cfgs []Config, opts Options) (*Set, error) {
	set := &Set{}
	for _, c := range cfgs {
		s, err := Connect(ctx, c, opts)
		if err != nil {
			set.Close()
			return nil, err
		}
		set.servers = append(set.servers, s)
	}
	return set, nil
}

// Tools returns every server's tools, in configuration order.
func (s *Set) Tools() []*core.Tool {
	var out []*core.Tool
	for _, srv := range s.servers {
		out = append(out, srv.tools...)
	}
	return out
}

// Close closes every server.
func (s *Set) Close() error {
	var errs []error
	for _, srv := range s.servers {
		errs = append(errs, srv.Close())
	}
	return errors.Join(errs...)
}
