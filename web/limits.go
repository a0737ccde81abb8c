package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"prism/core"
)

// How the server bounds what clients send: every request body is capped in
// size (Tuning.MaxBodyBytes; imports Tuning.MaxImportBytes) and in time (a
// read deadline that follows the body: Tuning.BodyTimeout for it all and
// for any stall, Tuning.ImportTimeout for a whole upload), headers by
// Tuning.HeaderTimeout (Serve). Streams get a write deadline per write
// (Tuning.WriteTimeout) and, when configured, a cap per client address.
// None of it is Echo's Timeout middleware or a server-wide WriteTimeout,
// which would end every SSE stream.

// bodyGuardKey is where a request's bodyGuard is kept in its echo.Context.
const bodyGuardKey = "prism.bodyGuard"

// bodyGuard is a request body bounded in size and time. It remembers why a
// read failed, so whatever the handler makes of the error, the answer is
// 413 or 408.
type bodyGuard struct {
	r        io.ReadCloser // an http.MaxBytesReader over the body
	rc       *http.ResponseController
	limit    int64
	idle     time.Duration // the longest stall between two reads
	deadline time.Time     // when the whole body must have arrived
	tooLarge bool
	timedOut bool

	rate   *rateGuard // an import's minimum rate, or nil
	mu     sync.Mutex // orders Read's deadline against cutSlow's
	cutOff bool       // the rate guard cut the body
}

// aLongTimeAgo is a read deadline that has passed: it wakes a blocked read.
var aLongTimeAgo = time.Unix(1, 0)

// cutSlow ends a body that arrives too slowly: a blocked read wakes with
// a deadline error, and every later read fails.
func (g *bodyGuard) cutSlow() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cutOff = true
	_ = g.rc.SetReadDeadline(aLongTimeAgo)
}

// Read implements io.Reader: each read may wait until the earlier of the
// body's deadline and the stall limit; at the end of the body the read
// deadline is lifted, so a handler that works on after reading is not cut
// off by it.
func (g *bodyGuard) Read(p []byte) (int, error) {
	d := time.Now().Add(g.idle)
	if g.deadline.Before(d) {
		d = g.deadline
	}
	g.mu.Lock()
	if g.cutOff {
		g.mu.Unlock()
		return 0, os.ErrDeadlineExceeded
	}
	_ = g.rc.SetReadDeadline(d)
	g.mu.Unlock()
	n, err := g.r.Read(p)
	if g.rate != nil {
		g.rate.add(n)
	}
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		if g.rate != nil {
			g.rate.finish()
		}
		_ = g.rc.SetReadDeadline(time.Time{})
	case errors.As(err, &tooLarge):
		g.tooLarge = true
	case errors.Is(err, os.ErrDeadlineExceeded):
		g.timedOut = true
	}
	return n, err
}

// Close implements io.Closer.
func (g *bodyGuard) Close() error { return g.r.Close() }

// failure is the error a request whose body broke its bounds answers with,
// or nil.
func (g *bodyGuard) failure() error {
	if g.rate != nil {
		if err := g.rate.failure(); err != nil {
			return err
		}
	}
	switch {
	case g.tooLarge:
		return errTooLarge(g.limit)
	case g.timedOut:
		return core.Errorf(core.CodeTimeout, "the request body did not arrive in time (the server waits %s for a body, or for a stalled one to go on); the connection is closed", g.idle)
	}
	return nil
}

func errTooLarge(limit int64) error {
	return core.Errorf(core.CodeTooLarge, "the request body is larger than this route's limit of %s", byteSize(limit))
}

// byteSize writes a limit for people: "1 MiB", "512 MiB", "300 bytes".
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// maxLoginBody bounds the sign-in form's body.
const maxLoginBody = 64 << 10

// guardBodies bounds every request body (see bodyGuard); the import route
// gets its own size and time.
func (s *Server) guardBodies(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			return next(c)
		}
		limit, total := s.tune.MaxBodyBytes, s.tune.BodyTimeout
		if s.classes.upload[c.Path()] {
			limit, total = s.tune.MaxImportBytes, s.tune.ImportTimeout
		} else if own := s.classes.bodyCap[c.Path()]; own > 0 && own < limit {
			limit = own
		}
		if r.ContentLength > limit {
			// Refused unread; the server closes the connection rather than
			// drain what follows.
			r.Close = true
			return errTooLarge(limit)
		}
		w := c.Response()
		g := &bodyGuard{r: http.MaxBytesReader(w, r.Body, limit), rc: http.NewResponseController(w),
			limit: limit, idle: s.tune.BodyTimeout, deadline: time.Now().Add(total)}
		// Bounded from now: also what net/http reads of a body the
		// handler left unread.
		_ = g.rc.SetReadDeadline(time.Now().Add(g.idle))
		if s.classes.upload[c.Path()] && s.tune.ImportMinRate > 0 {
			g.rate = newRateGuard(s.tune.Clock, s.tune.ImportMinRate, s.tune.ImportRateWindow, g.cutSlow)
			defer g.rate.finish()
		}
		r.Body = g
		c.Set(bodyGuardKey, g)
		return next(c)
	}
}

// bodyReceived stops the rate check of a body the handler has read all it
// needs of (a multipart form's closing boundary may not reach the body's
// end).
func bodyReceived(c echo.Context) {
	if g, ok := c.Get(bodyGuardKey).(*bodyGuard); ok && g.rate != nil {
		g.rate.finish()
	}
}

// bodyFailure returns the 413 or 408 a request answers when its body broke
// its bounds, else nil.
func bodyFailure(c echo.Context) error {
	if g, ok := c.Get(bodyGuardKey).(*bodyGuard); ok {
		return g.failure()
	}
	return nil
}

// mediaType returns the request's Content-Type without parameters.
func mediaType(c echo.Context) string {
	ct, _, err := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if err != nil {
		return ""
	}
	return ct
}

// formValues parses a form body (application/x-www-form-urlencoded or
// multipart/form-data) within the body bounds. A body of another type is
// refused with 415; a route that takes no field may pass optional.
func formValues(c echo.Context, optional bool) (url.Values, error) {
	r := c.Request()
	switch ct := mediaType(c); {
	case ct == echo.MIMEApplicationForm:
		if err := r.ParseForm(); err != nil {
			return nil, formError(c, err)
		}
		return r.PostForm, nil
	case ct == echo.MIMEMultipartForm:
		if err := r.ParseMultipartForm(32 << 10); err != nil {
			return nil, formError(c, err)
		}
		return r.PostForm, nil
	case optional && r.ContentLength <= 0 && ct == "":
		return url.Values{}, nil
	default:
		return nil, core.Errorf(core.CodeUnsupportedMediaType,
			"the body must be a form (application/x-www-form-urlencoded or multipart/form-data), not %q", r.Header.Get(echo.HeaderContentType))
	}
}

func formError(c echo.Context, err error) error {
	if f := bodyFailure(c); f != nil {
		return f
	}
	var tooLarge *http.MaxBytesError // a route's own, stricter cap
	if errors.As(err, &tooLarge) {
		return errTooLarge(tooLarge.Limit)
	}
	return core.Errorf(core.CodeInvalid, "the form does not parse: %v", err)
}

// decodeJSON reads a JSON request body into v: Content-Type
// application/json, one object with only v's fields, nothing after it. With
// emptyOK, an empty body leaves v as it is (every field optional).
func decodeJSON(c echo.Context, v any, shape string, emptyOK bool) error {
	r := c.Request()
	if emptyOK && r.ContentLength == 0 {
		return nil
	}
	if ct := mediaType(c); ct != echo.MIMEApplicationJSON {
		return core.Errorf(core.CodeUnsupportedMediaType, "the body must be JSON (Content-Type: application/json), not %q", r.Header.Get(echo.HeaderContentType))
	}
	failed := func(err error) error {
		if f := bodyFailure(c); f != nil {
			return f
		}
		var tooLarge *http.MaxBytesError // a route's own, stricter cap
		if errors.As(err, &tooLarge) {
			return errTooLarge(tooLarge.Limit)
		}
		return nil
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if f := failed(err); f != nil {
			return f
		}
		if errors.Is(err, io.EOF) {
			if emptyOK {
				return nil
			}
			return core.Errorf(core.CodeInvalid, "the request body is empty; it must be %s", shape)
		}
		return core.Errorf(core.CodeInvalid, "the request body must be %s: %v", shape, err)
	}
	if err := dec.Decode(&json.RawMessage{}); !errors.Is(err, io.EOF) {
		if f := failed(err); f != nil {
			return f
		}
		return core.Errorf(core.CodeInvalid, "the request body must be %s alone: there is data after the JSON object", shape)
	}
	return nil
}

// streamSlots counts the open streams of each client address
// (Tuning.MaxStreamsPerClient).
type streamSlots struct {
	mu   sync.Mutex
	open map[string]int
}

// take holds a stream slot for the request's client address; release
// gives it back. Past the cap it fails with 429.
func (s *Server) takeStreamSlot(c echo.Context) (release func(), err error) {
	limit := s.tune.MaxStreamsPerClient
	if limit <= 0 {
		return func() {}, nil
	}
	addr, _, err := net.SplitHostPort(c.Request().RemoteAddr)
	if err != nil {
		addr = c.Request().RemoteAddr
	}
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	if s.streams.open[addr] >= limit {
		return nil, core.Errorf(core.CodeTooManyRequests,
			"this client (%s) already has %d live streams open, the server's limit per client; close a page (or tab) of this server and reload", addr, limit)
	}
	if s.streams.open == nil {
		s.streams.open = map[string]int{}
	}
	s.streams.open[addr]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.streams.mu.Lock()
			defer s.streams.mu.Unlock()
			if s.streams.open[addr]--; s.streams.open[addr] <= 0 {
				delete(s.streams.open, addr)
			}
		})
	}, nil
}

// shareBudget counts the open streams of share links (live streams and
// playbacks), per link and in all, whichever listener serves them
// (Tuning.ShareStreamsPerLink, Tuning.ShareStreams). The owner's streams
// are not counted: a crowd on a public link never keeps the owner out.
type shareBudget struct {
	mu      sync.Mutex
	perLink map[string]int
	total   int
}

// shareBusy is a share stream refused for want of room: 429 when its link
// is full, 503 when every share stream is taken.
type shareBusy struct {
	status int
	// retry is the Retry-After the answer carries, in seconds.
	retry int
	msg   string
}

func (e *shareBusy) Error() string { return e.msg }

// shareRetryAfter is the Retry-After of a busy answer, in seconds.
const shareRetryAfter = 30

// check returns the refusal a new stream of link id would get now, or nil.
// b.mu is held.
func (b *shareBudget) check(id string, t Tuning) *shareBusy {
	if t.ShareStreamsPerLink > 0 && b.perLink[id] >= t.ShareStreamsPerLink {
		return &shareBusy{status: http.StatusTooManyRequests, retry: shareRetryAfter,
			msg: fmt.Sprintf("this link is busy: %d people are following it, the most it serves at once. Try again in a minute", b.perLink[id])}
	}
	if t.ShareStreams > 0 && b.total >= t.ShareStreams {
		return &shareBusy{status: http.StatusServiceUnavailable, retry: shareRetryAfter,
			msg: fmt.Sprintf("shared sessions are busy: %d live streams are open, the most this server serves at once. Try again in a minute", b.total)}
	}
	return nil
}

// full returns the refusal a new stream of link id would get now, or nil
// (the link's page answers it rather than render a page whose stream would
// be refused).
func (b *shareBudget) full(id string, t Tuning) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if busy := b.check(id, t); busy != nil {
		return busy
	}
	return nil
}

// admit takes a stream of link id, or refuses it (*shareBusy); leave gives
// it back.
func (b *shareBudget) admit(id string, t Tuning) (leave func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if busy := b.check(id, t); busy != nil {
		return nil, busy
	}
	if b.perLink == nil {
		b.perLink = map[string]int{}
	}
	b.perLink[id]++
	b.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.total--
			if b.perLink[id]--; b.perLink[id] <= 0 {
				delete(b.perLink, id)
			}
		})
	}, nil
}
