package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"prism/core"
	"prism/core/logkey"
)

// Defaults of the OpenAI-compatible client: DeepSeek's public endpoint.
const (
	DefaultBaseURL = "https://api.deepseek.com"
	DefaultModel   = "deepseek-chat"

	defaultMaxRetries    = 2
	defaultMaxRetryDelay = 30 * time.Second
	defaultHeaderTimeout = 2 * time.Minute
	defaultIdleTimeout   = 5 * time.Minute // dsh's DEFAULT_STREAM_IDLE_TIMEOUT_MS
	defaultContextWindow = 128_000
)

// OpenAIConfig configures an OpenAI-compatible chat-completions client.
type OpenAIConfig struct {
	// BaseURL is the endpoint base; "/chat/completions" is appended.
	// Default DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token. Required.
	APIKey string
	// Model is the wire model name. Default DefaultModel.
	Model string
	// Provider is the provider route recorded in the log. Default "deepseek"
	// for a deepseek.com host, else "openai-compatible".
	Provider string
	// ContextWindow is recorded in request/context (0 = 128k tokens).
	ContextWindow int64
	// MaxRetries is how often a request failing before its stream starts
	// (connection error, 408, 409, 429, 5xx) is retried with exponential
	// backoff, honouring Retry-After / Retry-After-Ms. 0 means 2; negative
	// means no retries.
	MaxRetries int
	// MaxRetryDelay caps one backoff wait and the Retry-After honoured (a
	// longer server-requested delay ends the retries). 0 means 30s.
	MaxRetryDelay time.Duration
	// HeaderTimeout bounds the wait for response headers of each attempt.
	// 0 means 2 minutes. Ignored when HTTPClient is set.
	HeaderTimeout time.Duration
	// IdleTimeout bounds the silence between two stream events; it ends the
	// stream with code TIMEOUT. 0 means 5 minutes.
	IdleTimeout time.Duration
	// HTTPClient replaces the default client (tests).
	HTTPClient *http.Client
	// Logger receives retry and failure logs; nil means slog.Default().
	Logger *slog.Logger
}

// OpenAI is a streaming OpenAI-compatible chat-completions client. It
// converts prism's transcript to the wire format (tool results become role
// "tool" messages), streams with usage reporting, captures DeepSeek's
// reasoning_content as reasoning blocks, assembles parallel tool calls by
// wire index, and maps every failure to an *Error with dsh's LlmFailure
// facts. It is safe for concurrent use.
//
// The API key and the base URL's credentials (user:password@, ?api_key=
// and the like) never appear in its errors or logs: every error message is
// scrubbed (a provider may echo the Authorization header or the request
// URL back), and the base URL is shown redacted.
type OpenAI struct {
	cfg    OpenAIConfig
	client openai.Client
	logger *slog.Logger
	scrub  *Scrubber
	url    string // the base URL as shown: RedactURL(cfg.BaseURL)
}

// NewOpenAI returns a client for cfg.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.APIKey == "" {
		return nil, core.Errorf(core.CodeUnavailable, "model client: no API key configured")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, core.Errorf(core.CodeInvalid, "model client: base URL %q is not an http(s) URL", RedactURL(cfg.BaseURL))
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Provider == "" {
		cfg.Provider = "openai-compatible"
		if h := u.Hostname(); h == "deepseek.com" || strings.HasSuffix(h, ".deepseek.com") {
			cfg.Provider = "deepseek"
		}
	}
	if cfg.ContextWindow == 0 {
		cfg.ContextWindow = defaultContextWindow
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = defaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.MaxRetryDelay <= 0 {
		cfg.MaxRetryDelay = defaultMaxRetryDelay
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = defaultHeaderTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = defaultIdleTimeout
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	hc := cfg.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = cfg.HeaderTimeout
		hc = &http.Client{Transport: tr}
	}
	m := &OpenAI{cfg: cfg, logger: logger, scrub: NewScrubber(cfg.APIKey, cfg.BaseURL), url: RedactURL(cfg.BaseURL)}
	// The base URL's query (an api-version, a query key) rides on every
	// request; the SDK resolves paths against a query-less base.
	base := *u
	base.RawQuery, base.Fragment, base.RawPath = "", "", ""
	base.Path = strings.TrimRight(base.Path, "/") + "/"
	opts := []option.RequestOption{option.WithBaseURL(base.String())}
	for name, values := range u.Query() {
		for _, v := range values {
			opts = append(opts, option.WithQueryAdd(name, v))
		}
	}
	m.client = openai.NewClient(append(opts,
		option.WithAPIKey(cfg.APIKey),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(cfg.MaxRetries),
		option.WithMaxRetryDelay(cfg.MaxRetryDelay),
		// Ambient OPENAI_* organization/project settings must not travel to
		// another provider.
		option.WithHeaderDel("OpenAI-Organization"),
		option.WithHeaderDel("OpenAI-Project"),
		option.WithMiddleware(m.logAttempts),
	)...)
	return m, nil
}

// Info implements Model.
func (m *OpenAI) Info() Info {
	return Info{Provider: m.cfg.Provider, Model: m.cfg.Model, ContextWindow: m.cfg.ContextWindow}
}

// logAttempts logs each retry attempt and its outcome.
func (m *OpenAI) logAttempts(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	attempt := req.Header.Get("X-Stainless-Retry-Count")
	if attempt != "" && attempt != "0" {
		m.logger.Info("model request retry", logkey.Provider, m.cfg.Provider, logkey.Model, m.cfg.Model, logkey.Attempt, attempt)
	}
	res, err := next(req)
	if err == nil && res.StatusCode >= 400 {
		m.logger.Warn("model request failed", logkey.Provider, m.cfg.Provider, logkey.Model, m.cfg.Model,
			logkey.Status, res.StatusCode, logkey.Attempt, attempt, logkey.RetryAfter, res.Header.Get("Retry-After"))
	}
	return res, err
}

// errIdle is the cancel cause of the idle watchdog.
var errIdle = errors.New("stream idle timeout")

// Stream implements Model. Retries happen before the stream starts; once
// the first byte of the body arrived, a failure ends the stream.
func (m *OpenAI) Stream(ctx context.Context, req Request) (Stream, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, &Error{Failure: core.LLMFailure{Message: err.Error(), Code: CodeInvalidRequest}, Err: err}
	}
	sctx, cancel := context.WithCancelCause(ctx)
	var res *http.Response
	err = m.client.Post(sctx, "chat/completions", params, &res,
		option.WithJSONSet("stream", true),
		option.WithHeader("Accept", "text/event-stream"))
	if err != nil {
		cancel(nil)
		return nil, m.scrub.ScrubError(m.mapError(ctx, sctx, err))
	}
	if res == nil || res.Body == nil {
		cancel(nil)
		return nil, &Error{Failure: core.LLMFailure{Message: m.name() + " API returned no response body", Code: CodeEmptyResponse}}
	}
	s := &openaiStream{m: m, parent: ctx, ctx: sctx, cancel: cancel, tr: newTranslator(), session: req.SessionID}
	// Every byte received — keep-alive comments included — resets the idle
	// watchdog, as dsh's idleWatchdog pulses on comments.
	s.idle = time.AfterFunc(m.cfg.IdleTimeout, func() { cancel(errIdle) })
	res.Body = &pulseReader{ReadCloser: res.Body, pulse: func() { s.idle.Reset(m.cfg.IdleTimeout) }}
	s.decoder = ssestream.NewDecoder(res)
	return s, nil
}

func (m *OpenAI) name() string {
	if m.cfg.Provider == "deepseek" {
		return "DeepSeek"
	}
	return "model"
}

// mapError turns a request or stream error into an *Error.
func (m *OpenAI) mapError(parent, sctx context.Context, err error) *Error {
	if parent.Err() != nil {
		return &Error{Failure: core.LLMFailure{Message: m.name() + " request aborted by caller", Code: CodeAborted}, Err: err}
	}
	if errors.Is(context.Cause(sctx), errIdle) {
		return &Error{Failure: core.LLMFailure{
			Message: fmt.Sprintf("%s stream idle timeout after %dms", m.name(), m.cfg.IdleTimeout.Milliseconds()),
			Code:    CodeTimeout}, Err: err}
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		f := core.LLMFailure{Status: apiErr.StatusCode}
		f.Message = apiErr.Message
		if f.Message == "" {
			f.Message = fmt.Sprintf("%s API error (HTTP %d)", m.name(), apiErr.StatusCode)
		}
		f.Code = httpErrorCode(apiErr.StatusCode, apiErr.Code+" "+apiErr.Type+" "+apiErr.Message)
		if apiErr.Response != nil {
			f.ProviderRetryAfterMs = retryAfterMs(apiErr.Response.Header, time.Now())
			f.RequestID = requestID(apiErr.Response.Header)
		}
		return &Error{Failure: f, Err: err}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &Error{Failure: core.LLMFailure{
			Message: fmt.Sprintf("%s API request to %s timed out", m.name(), m.url), Code: CodeTimeout}, Err: err}
	}
	return &Error{Failure: core.LLMFailure{
		Message: fmt.Sprintf("%s API request to %s failed: %v", m.name(), m.url, err), Code: CodeTransport}, Err: err}
}

// httpErrorCode maps a non-2xx status (and the provider's error detail) to
// a stable code, as dsh's httpErrorCode.
func httpErrorCode(status int, detail string) string {
	d := strings.ToLower(detail)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return CodeAuth
	case strings.Contains(d, "insufficient_quota") || strings.Contains(d, "insufficient balance") ||
		strings.Contains(d, "quota"):
		return CodeQuotaExceeded
	case status == http.StatusTooManyRequests:
		return CodeRateLimit
	case status == http.StatusBadRequest:
		if strings.Contains(d, "context length") || strings.Contains(d, "context_length") ||
			strings.Contains(d, "maximum context") || strings.Contains(d, "too many tokens") {
			return CodeContextWindow
		}
		return CodeInvalidRequest
	case status >= 500:
		return CodeServer
	}
	return "HTTP_" + strconv.Itoa(status)
}

// retryAfterMs parses Retry-After-Ms, or Retry-After (seconds or an HTTP
// date), into milliseconds; 0 when absent or not positive.
func retryAfterMs(h http.Header, now time.Time) int64 {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 {
			return int64(f)
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f > 0 {
			return int64(f * 1000)
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d.Milliseconds()
		}
	}
	return 0
}

func requestID(h http.Header) string {
	if v := h.Get("X-Request-Id"); v != "" {
		return v
	}
	return h.Get("X-Deepseek-Request-Id")
}

// openaiStream reads one SSE response.
type openaiStream struct {
	m       *OpenAI
	parent  context.Context
	ctx     context.Context
	cancel  context.CancelCauseFunc
	decoder ssestream.Decoder
	idle    *time.Timer
	tr      *translator
	session string

	queue []core.StreamChunk
	done  bool  // [DONE] seen and the tail queued
	err   error // terminal error, returned again by later Recv calls

	closeOnce sync.Once
}

// Recv implements Stream.
func (s *openaiStream) Recv() (core.StreamChunk, error) {
	for {
		if len(s.queue) > 0 {
			c := s.queue[0]
			s.queue = s.queue[1:]
			return c, nil
		}
		if s.err != nil {
			return core.StreamChunk{}, s.err
		}
		if s.done {
			return core.StreamChunk{}, io.EOF
		}
		if s.parent.Err() != nil {
			s.fail(s.m.mapError(s.parent, s.ctx, s.parent.Err()))
			continue
		}
		if !s.decoder.Next() {
			err := s.decoder.Err()
			switch {
			case s.parent.Err() != nil || s.ctx.Err() != nil:
				if err == nil {
					err = context.Cause(s.ctx)
				}
				s.fail(s.m.mapError(s.parent, s.ctx, err))
			case err != nil:
				s.fail(&Error{Failure: core.LLMFailure{
					Message: fmt.Sprintf("%s API stream from %s failed: %v", s.m.name(), s.m.url, err),
					Code:    CodeTransport}, Err: err})
			default:
				s.fail(&Error{Failure: core.LLMFailure{
					Message: "SSE payload stream ended without [DONE]", Code: CodeStreamClosed}})
			}
			continue
		}
		ev := s.decoder.Event()
		out, done, err := s.tr.push(ev.Data)
		s.queue = append(s.queue, out...)
		if err != nil {
			s.fail(err)
			continue
		}
		if done {
			s.done = true
			s.stop()
		}
	}
}

func (s *openaiStream) fail(err *Error) {
	err = s.m.scrub.ScrubError(err)
	s.err = err
	s.m.logger.Warn("model stream failed", logkey.Provider, s.m.cfg.Provider, logkey.Model, s.m.cfg.Model,
		logkey.SessionID, s.session, logkey.Code, err.Failure.Code, logkey.Err, err)
	s.stop()
}

func (s *openaiStream) stop() {
	s.closeOnce.Do(func() {
		s.idle.Stop()
		s.cancel(nil)
		_ = s.decoder.Close()
	})
}

// Close implements Stream.
func (s *openaiStream) Close() error {
	s.stop()
	return nil
}

// pulseReader calls pulse whenever bytes arrive.
type pulseReader struct {
	io.ReadCloser
	pulse func()
}

// Read implements io.Reader.
func (r *pulseReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if n > 0 {
		r.pulse()
	}
	return n, err
}
