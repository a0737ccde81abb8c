package web

// SSE frame formatting: every byte a stream writes is formatted here, once
// per frame, and shared by every subscriber.

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/starfederation/datastar-go/datastar"

	"prism/views"
)

// idOnly is an SSE event with an id and no data: the client records the id
// as its Last-Event-ID and dispatches nothing.
func idOnly(seq int64) []byte {
	return []byte("id: " + strconv.FormatInt(seq, 10) + "\n\n")
}

// renderPage formats the page's header and transcript window of tl as one
// morph whose event id is seq.
func renderPage(ctx context.Context, tl *views.Timeline, window int, seq int64) ([]byte, error) {
	patches, err := views.RenderPage(ctx, tl, window)
	if err != nil {
		return nil, err
	}
	return formatPatches(patches, strconv.FormatInt(seq, 10)), nil
}

// renderFrameFor formats an update as SSE datastar-patch-elements events,
// its links those of a reader following l (the owner's session, or a share
// link); the last event carries the update's seq as its event id, so a
// reconnecting client resumes after it.
func renderFrameFor(ctx context.Context, tl *views.Timeline, l views.Links, u views.Update) ([]byte, error) {
	patches, err := views.RenderUpdateFor(ctx, tl, l, u)
	if err != nil {
		return nil, err
	}
	return formatPatches(patches, strconv.FormatInt(u.Seq, 10)), nil
}

// formatPatches formats patches with datastar-go, once, into bytes that can
// be written to any number of streams. Every stream's patches go through it:
// it makes each patch's text safe for SSE data lines (sseSafe, sseLine).
func formatPatches(patches []views.Patch, id string) []byte {
	w := &bufWriter{h: http.Header{}}
	sse := datastar.NewSSE(w, formatRequest)
	for i, p := range patches {
		var opts []datastar.PatchElementOption
		if p.Selector != "" {
			opts = append(opts, datastar.WithSelector(sseLine(p.Selector)))
		}
		if p.Mode == "append" {
			opts = append(opts, datastar.WithModeAppend())
		} else if p.Mode == "prepend" {
			opts = append(opts, datastar.WithModePrepend())
		} else if p.Mode == "remove" {
			opts = append(opts, datastar.WithModeRemove())
		}
		if i == len(patches)-1 && id != "" {
			opts = append(opts, datastar.WithPatchElementsEventID(id))
		}
		_ = sse.PatchElements(sseSafe(p.HTML), opts...) // writes to memory; cannot fail
	}
	return w.buf.Bytes()
}

// sseSafe makes text safe to carry in SSE data lines. datastar-go splits
// elements on LF only, but the client (like EventSource) also ends a line
// at a CR, so a CR that reached a patch would end its data line and start a
// field of its own ("\rdata: mode remove"). CRLF and CR become LF — what an
// HTML parser makes of them anyway, so the patched DOM is unchanged — and
// the other C0 controls except tab, and DEL, become U+FFFD. views cleans
// what it renders; this is the formatter's guarantee for every patch.
func sseSafe(s string) string {
	i := 0
	for i < len(s) {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			break
		}
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				continue
			}
			b.WriteByte('\n')
		case c < 0x20 && c != '\n' && c != '\t', c == 0x7f:
			b.WriteString("\uFFFD")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// sseLine makes a one-line field safe: datastar-go writes it as one data
// line, so a line break of any kind, like every other C0 control, becomes
// U+FFFD.
func sseLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '\uFFFD'
		}
		return r
	}, s)
}

var formatRequest, _ = http.NewRequestWithContext(context.Background(), http.MethodGet, "/", nil)

// bufWriter is an in-memory http.ResponseWriter for formatting SSE bytes.
type bufWriter struct {
	h   http.Header
	buf bytes.Buffer
}

func (w *bufWriter) Header() http.Header         { return w.h }
func (w *bufWriter) Write(b []byte) (int, error) { return w.buf.Write(b) }
func (w *bufWriter) WriteHeader(int)             {}
func (w *bufWriter) Flush()                      {}

// startSSE starts an SSE response the way Echo needs it: headers set and
// the status written (so Echo knows the response is committed and never
// appends a JSON error to the stream), no write deadline, no proxy
// buffering. Events are then formatted by formatPatches and written as
// bytes.
func startSSE(c echo.Context) {
	rc := http.NewResponseController(c.Response().Writer)
	_ = rc.SetWriteDeadline(time.Time{}) // ErrNotSupported under httptest is fine
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Response().WriteHeader(http.StatusOK)
	datastar.NewSSE(c.Response(), c.Request())
}
