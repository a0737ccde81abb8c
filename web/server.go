// Package web is prism's HTTP face: the Echo server, its pages, the JSON
// API, and the live path — one SSE stream per page, fed by a broker that
// folds committed events into the same view models the pages render, so a
// card patched live equals the card a reload shows.
//
// web imports core, views and static, never the store: main hands it the
// small interfaces declared in deps.go.
package web

import (
	stdgzip "compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a-h/templ"
	"github.com/klauspost/compress/gzhttp"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"prism/core/logkey"
	"prism/static"
	"prism/views"
)

// Server is prism's web server. Build it with New; serve Handler(), or
// Serve a listener.
type Server struct {
	// children keeps the nested children's logs (and their folds) by id
	// while their last seq stands (sessionChildren).
	children childCache
	deps     Deps
	tune     Tuning
	log      *slog.Logger
	e        *echo.Echo
	broker   *Broker
	assets   views.Assets
	hlCSS    []byte
	// highlights memoizes the code cards' highlighting for every page of
	// this server (views.Reader.Highlights).
	highlights *views.HighlightCache
	remove     func()
	hosts      atomic.Pointer[hostPolicy]
	streams    streamSlots
	// linkChildren keeps the children's logs as the share links that nest
	// them show them (linkChild), by the cached log they come from.
	linkChildren struct {
		mu sync.Mutex
		m  map[linkChildKey]*linkChild
	}

	share404     []byte // the one answer to every share read not granted
	exportCSS    string // the stylesheets an export.html inlines
	shareStreams streamRegistry
	shareBudget  shareBudget
	// sharePages keeps recently rendered share pages by their validator
	// (sharePage): a crowd opening a link renders its page once.
	sharePages renderCache[string]
	// buildTag names this build's pages (its assets and module version):
	// part of every share validator, so a new build never answers 304
	// with an old one's page.
	buildTag  string
	shareEcho *echo.Echo // the --share-addr listener's handler
	otlpEcho  *echo.Echo // the --otlp-addr listener's handler
	// otlpSlots holds one token per OTLP export being received
	// (Tuning.OTLPReceives).
	otlpSlots chan struct{}
	// wait paces playback: it waits d or until ctx is done (false).
	wait     func(ctx context.Context, d time.Duration) bool
	chapters chapterCache
	classes  routeClasses // the route table's columns the middleware reads
	// created holds share links the session page's form just made, for
	// the page its POST redirects to.
	created shownOnce
}

// New returns a server over deps. It panics when Sessions or Presenter is
// missing (a wiring bug). Call Close to detach it from the commit feed.
func New(deps Deps) *Server {
	if deps.Sessions == nil || deps.Presenter == nil {
		panic("web.New: Deps.Sessions and Deps.Presenter are required")
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Shares != nil && deps.Redactor == nil {
		panic("web.New: Deps.Redactor is required with Deps.Shares")
	}
	s := &Server{deps: deps, tune: deps.Tuning.withDefaults(), log: deps.Logger, wait: waitFor,
		highlights: views.NewHighlightCache(views.DefaultHighlightEntries)}
	s.otlpSlots = make(chan struct{}, s.tune.OTLPReceives)
	s.hosts.Store(newHostPolicy(nil, deps.AllowedHosts))
	s.hlCSS = []byte(views.HighlightCSS())
	s.assets = views.Assets{
		CSS:          views.StaticURL("app.css", static.Hash("app.css")),
		JS:           views.StaticURL("app.js", static.Hash("app.js")),
		Travel:       views.StaticURL("travel.js", static.Hash("travel.js")),
		Compare:      views.StaticURL("compare.js", static.Hash("compare.js")),
		Datastar:     views.StaticURL("datastar.js", static.Hash("datastar.js")),
		Icon:         views.StaticURL("icon.svg", static.Hash("icon.svg")),
		Filter:       views.StaticURL("filter.js", static.Hash("filter.js")),
		HighlightCSS: views.StaticURL("highlight.css", hashBytes(s.hlCSS)),
	}
	s.exportCSS = ExportCSS()
	s.buildTag = buildTag(s.assets)
	s.sharePages.maxSize = sharePageCacheBytes
	s.share404 = mustRender(views.ShareNotFound(views.PageMeta{Title: "Not found · prism", Assets: s.assets, Public: true}))
	s.broker = newBroker(deps.Sessions, deps.Presenter, s.tune, s.log)
	s.broker.reader = s.ownerReader
	s.broker.child = s.readChild
	s.broker.list.prices = deps.Prices
	s.broker.list.attn = s.sessionAttention
	s.broker.list.forks = s.forkCount
	s.broker.board.render = s.boardFrame
	if deps.Commits != nil {
		removeCommit := deps.Commits.OnCommit(s.broker.Publish)
		removeReplace := deps.Commits.OnReplace(func(id string) {
			s.chapters.forget(id)
			s.children.forget(id)
			s.broker.Replace(id)
		})
		removeNotes := func() {}
		if nf, ok := deps.Commits.(NoteFeed); ok {
			removeNotes = nf.OnNotes(s.broker.Notes)
		}
		s.remove = func() { removeCommit(); removeReplace(); removeNotes() }
	}
	s.e = s.routes()
	s.shareEcho = s.shareRoutes()
	s.otlpEcho = s.otlpRoutes()
	return s
}

// sharePageCacheBytes bounds the rendered share pages the server keeps.
const sharePageCacheBytes = 8 << 20

// mustRender renders a component that depends on nothing but its
// arguments (a wiring bug otherwise).
func mustRender(c templ.Component) []byte {
	html, err := views.Render(context.Background(), c)
	if err != nil {
		panic("web: render a fixed page: " + err.Error())
	}
	return []byte(html)
}

// ShareHandler returns the handler of the share listener (--share-addr): it
// answers share links (/s/…) and static files, and the share 404 page to
// everything else. It needs no owner token, wherever it listens.
func (s *Server) ShareHandler() http.Handler { return s.shareEcho }

// Handler returns the server's HTTP handler. It answers the Host names of
// a loopback listener (and Deps.AllowedHosts); Serve adapts that to the
// listener it is given.
func (s *Server) Handler() http.Handler { return s.e }

// Routes lists the main listener's routes (method and path pattern).
func (s *Server) Routes() []*echo.Route { return s.e.Routes() }

// Broker returns the server's broker (its Publish is what the commit feed
// calls).
func (s *Server) Broker() *Broker { return s.broker }

// Close detaches the server from the commit feed and stops its hubs; open
// streams report it in the page and end.
func (s *Server) Close() {
	if s.remove != nil {
		s.remove()
	}
	s.broker.Close()
}

// Serve serves on ln until ctx is done, then shuts down gracefully: every
// request's context derives from ctx (BaseContext), so open streams end
// and Shutdown does not wait for them. It has no WriteTimeout: SSE streams
// live long.
//
// The listen address decides which Host headers are answered (a guard
// against DNS rebinding): on loopback only localhost, 127.0.0.1 and ::1;
// on an unspecified address (0.0.0.0, ::) any; Deps.AllowedHosts adds
// names and restricts an unspecified address to them.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.hosts.Store(newHostPolicy(ln.Addr(), s.deps.AllowedHosts))
	return s.serve(ctx, ln, s.e)
}

// ServeShares serves the share listener (ShareHandler) on ln until ctx is
// done, shutting down as Serve does.
func (s *Server) ServeShares(ctx context.Context, ln net.Listener) error {
	return s.serve(ctx, ln, s.shareEcho)
}

func (s *Server) serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.tune.HeaderTimeout, // bodies: guardBodies; streams: a deadline per write
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shut)
	if e := <-errc; e != nil && !errors.Is(e, http.ErrServerClosed) {
		return e
	}
	return err
}

func (s *Server) routes() *echo.Echo {
	table := s.routeTable()
	s.classes = classify(table)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(middleware.Recover())
	e.Use(s.logRequests)
	e.Use(securityHeaders)
	e.Use(s.checkHost)
	e.Use(s.requireOwner)
	e.Use(sameOrigin())
	e.Use(s.guardBodies)
	e.Use(gzip(s.classes.raw))

	// Every route is a row of routeTable (routes.go).
	register(e, table)
	return e
}

// gzip compresses responses except the raw routes (streams, where a frame
// is written to hundreds of subscribers as is, and the liveness probe) and
// share links' streams, with klauspost/compress's
// gzhttp at its fastest level: several times the speed of compress/gzip
// on a page of many cards, for a smaller body. It leaves alone what is
// small (under 1 KB) or already compressed (archives, images), and
// sends gzip only (no zstd), as before.
func gzip(raw map[string]bool) echo.MiddlewareFunc {
	wrap, err := gzhttp.NewWrapper(gzhttp.CompressionLevel(stdgzip.BestSpeed), gzhttp.EnableZstd(false))
	if err != nil {
		panic(err) // the options are constants
	}
	skip := func(c echo.Context) bool {
		return raw[c.Path()] ||
			strings.HasPrefix(c.Request().URL.Path, views.ShareRoutePrefix) && strings.HasSuffix(c.Request().URL.Path, "/stream")
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if skip(c) {
				return next(c)
			}
			res := c.Response()
			plain := res.Writer
			var err error
			wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				res.Writer = w
				// Echo's error handler runs after this middleware: an
				// error it answers goes out uncompressed, on the writer
				// the handler did not write to (gzhttp sends nothing for
				// a response that wrote nothing).
				defer func() { res.Writer = plain }()
				err = next(c)
			})).ServeHTTP(plain, c.Request())
			return err
		}
	}
}

// shareRoutes is the share listener's handler: /s/… and /static/…, the
// share 404 for everything else.
func (s *Server) shareRoutes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if !c.Response().Committed && statusOf(err) == http.StatusNotFound || statusOf(err) == http.StatusMethodNotAllowed {
			_ = s.shareNotFound(c)
			return
		}
		s.handleError(err, c)
	}
	e.Use(middleware.Recover())
	e.Use(s.logRequests)
	e.Use(securityHeaders)
	e.Use(s.guardBodies)
	e.Use(gzip(nil))
	e.Any(views.RouteShare, s.handleShare)
	e.GET(views.RouteHighlightCSS, s.handleHighlightCSS)
	e.HEAD(views.RouteHighlightCSS, headAsGet(s.handleHighlightCSS))
	e.GET(views.RouteStatic, s.handleStatic)
	e.HEAD(views.RouteStatic, headAsGet(s.handleStatic))
	e.Any("/*", s.shareNotFound)
	e.Any("/", s.shareNotFound)
	return e
}

// otlpRoutes is the OTLP listener's handler (--otlp-addr): POST /v1/traces
// only, with the main listener's owner token and body guard. It checks no
// Host and no origin: OTLP bodies are not a type a page can send across
// origins without a CORS preflight, which it never grants.
func (s *Server) otlpRoutes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(middleware.Recover())
	e.Use(s.logRequests)
	e.Use(securityHeaders)
	e.Use(s.requireOwner)
	e.Use(s.guardBodies)
	e.POST(views.RouteOTLPTraces, s.handleOTLPTraces)
	return e
}

// OTLPHandler returns the handler of the OTLP listener (--otlp-addr): it
// serves only POST /v1/traces (Deps.Traces), with the owner token when one
// is set.
func (s *Server) OTLPHandler() http.Handler { return s.otlpEcho }

// ServeOTLP serves the OTLP listener (OTLPHandler) on ln until ctx is done,
// shutting down as Serve does.
func (s *Server) ServeOTLP(ctx context.Context, ln net.Listener) error {
	return s.serve(ctx, ln, s.otlpEcho)
}

// headAsGet answers a HEAD request with a GET route's handler, which sees
// the request as a GET; the response keeps the HEAD request, so net/http
// sends the headers the GET would have had and no body.
func headAsGet(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request().Clone(c.Request().Context())
		r.Method = http.MethodGet
		c.SetRequest(r)
		return h(c)
	}
}

// render writes a templ component as an HTML response.
func (s *Server) render(c echo.Context, status int, comp templ.Component) error {
	buf := templ.GetBuffer()
	defer templ.ReleaseBuffer(buf)
	if err := comp.Render(c.Request().Context(), buf); err != nil {
		return err
	}
	return c.HTMLBlob(status, buf.Bytes())
}

func (s *Server) meta(title string) views.PageMeta {
	if title == "" {
		title = "prism"
	} else {
		title += " · prism"
	}
	return views.PageMeta{Title: title, Assets: s.assets}
}

func (s *Server) handleHighlightCSS(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	return c.Blob(http.StatusOK, "text/css; charset=utf-8", s.hlCSS)
}

var staticFiles = http.FileServerFS(mustSub(static.FS))

func mustSub(f fs.FS) fs.FS { return f }

func (s *Server) handleStatic(c echo.Context) error {
	name := c.Param("*")
	if _, err := fs.Stat(static.FS, name); err != nil || name == "" || name == "static.go" {
		return echo.NewHTTPError(http.StatusNotFound, "no such asset")
	}
	h := c.Response().Header()
	if c.QueryParam("v") != "" {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	r := c.Request().Clone(c.Request().Context())
	r.URL.Path = "/" + name
	staticFiles.ServeHTTP(c.Response(), r)
	return nil
}

// logRequests logs each request at debug level (errors are logged by
// handleError).
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		s.log.DebugContext(c.Request().Context(), "request", append(requestAttrs(c),
			logkey.Status, c.Response().Status, logkey.Duration, time.Since(start))...)
		return err
	}
}

// shareIDKey is where handleShare keeps the id of the link a request
// resolved, for the logs.
const shareIDKey = "prism.shareID"

// requestAttrs are the log attributes that say which request a line is
// about: its method and path — a share link's token, the secret that
// grants access, replaced by "{token}" — and the link's id when the token
// resolved to one.
func requestAttrs(c echo.Context) []any {
	r := c.Request()
	attrs := []any{logkey.Method, r.Method, logkey.Path, logPath(r.URL.Path)}
	if id, ok := c.Get(shareIDKey).(string); ok {
		attrs = append(attrs, logkey.ShareID, id)
	}
	return attrs
}

// logPath is a request path as logs show it: under /s/, the token
// segment is "{token}".
func logPath(path string) string {
	rest, ok := strings.CutPrefix(path, views.ShareRoutePrefix)
	if !ok {
		return path
	}
	if _, after, more := strings.Cut(rest, "/"); more {
		return views.ShareRoutePrefix + "{token}/" + after
	}
	return views.ShareRoutePrefix + "{token}"
}

// buildTag names the build that renders pages: its assets' hashes, the
// main module's version and VCS revision when the binary records them, and
// the executable's size and time (a rebuild with uncommitted changes).
func buildTag(a views.Assets) string {
	tag := fmt.Sprintf("%+v", a)
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			tag += fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		tag += bi.Main.Version + bi.Main.Sum
		for _, st := range bi.Settings {
			if st.Key == "vcs.revision" || st.Key == "vcs.modified" || st.Key == "vcs.time" {
				tag += st.Key + "=" + st.Value
			}
		}
	}
	return hashBytes([]byte(tag))
}

func hashBytes(b []byte) string {
	var h uint64 = 14695981039346656037
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return fmt.Sprintf("%012x", h&0xffffffffffff)
}
