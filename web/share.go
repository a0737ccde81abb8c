package web

// Share links: the reader's side. Everything under /s/ goes through
// handleShare, which resolves the token and dispatches the few reads a link
// grants; anything else — an unknown, malformed, expired or revoked token,
// a path outside the link's scope, another method — is the one share 404
// page, the same bytes whatever was asked (no existence leak).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/logkey"
	"prism/core/redact"
	"prism/core/share"
	"prism/sources/dsh"
	"prism/static"
	"prism/views"
)

// errShareNotFound is every share read that is not granted.
var errShareNotFound = errors.New("share: not found")

// shareReq is a resolved, active link and what it shows.
type shareReq struct {
	sh    share.Share
	token string
	links views.Links
}

// now reads the server's clock.
func (s *Server) now() time.Time {
	if s.deps.Now != nil {
		return s.deps.Now()
	}
	return time.Now()
}

// resolveShare returns the active link of token, or errShareNotFound.
func (s *Server) resolveShare(ctx context.Context, token string) (shareReq, error) {
	if s.deps.Shares == nil {
		return shareReq{}, errShareNotFound
	}
	hash, ok := share.ParseToken(token)
	if !ok {
		return shareReq{}, errShareNotFound
	}
	sh, err := s.deps.Shares.ShareByToken(ctx, hash)
	switch {
	case core.ErrorCode(err) == core.CodeNotFound:
		return shareReq{}, errShareNotFound
	case err != nil:
		return shareReq{}, err
	case !sh.Active(s.now()):
		return shareReq{}, errShareNotFound
	}
	return shareReq{sh: sh, token: token, links: views.ShareLinks(token)}, nil
}

// handleShare handles every method and path under /s/.
func (s *Server) handleShare(c echo.Context) error {
	r := c.Request()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return s.shareNotFound(c)
	}
	parts, ok := shareParts(r.URL.EscapedPath())
	if !ok {
		return s.shareNotFound(c)
	}
	ctx := r.Context()
	sr, err := s.resolveShare(ctx, parts[0])
	if errors.Is(err, errShareNotFound) {
		return s.shareNotFound(c)
	}
	if err != nil {
		return err
	}
	switch {
	case len(parts) == 1:
		err = s.sharePage(c, sr)
	case len(parts) == 2 && parts[1] == "stream" && isPlayback(c):
		err = s.sharePlayback(c, sr)
	case len(parts) == 2 && parts[1] == "stream" && !sr.sh.Scoped():
		err = s.shareStream(c, sr)
	case len(parts) == 2 && parts[1] == "earlier":
		err = s.earlier(c, s.shareSource(sr))
	case len(parts) == 2 && parts[1] == "later":
		err = s.later(c, s.shareSource(sr))
	case len(parts) == 2 && parts[1] == "seek":
		err = s.seek(c, s.shareSource(sr))
	case len(parts) == 2 && parts[1] == "events":
		err = s.shareEvents(c, sr)
	case len(parts) == 2 && parts[1] == "export.html":
		err = s.shareExport(c, sr)
	case len(parts) == 3 && parts[1] == "calls":
		err = s.shareCall(c, sr, parts[2])
	case len(parts) == 4 && parts[1] == "calls" && isCallFile(parts[3]):
		err = s.shareCallFile(c, sr, parts[2], parts[3])
	default:
		err = errShareNotFound
	}
	// A bad parameter (an at outside the link's scope included) is not a
	// read the link grants either.
	if errors.Is(err, errShareNotFound) || core.ErrorCode(err) == core.CodeNotFound || core.ErrorCode(err) == core.CodeInvalid {
		if c.Response().Committed {
			return nil
		}
		return s.shareNotFound(c)
	}
	return err
}

// shareParts splits /s/TOKEN/… into its unescaped segments.
func shareParts(escaped string) ([]string, bool) {
	rest, ok := strings.CutPrefix(escaped, views.ShareRoutePrefix)
	if !ok || rest == "" {
		return nil, false
	}
	parts := strings.Split(rest, "/")
	for i, p := range parts {
		v, err := url.PathUnescape(p)
		if err != nil || v == "" {
			return nil, false
		}
		parts[i] = v
	}
	return parts, true
}

// shareNotFound writes the share 404 page: one set of bytes, rendered once.
func (s *Server) shareNotFound(c echo.Context) error {
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	if c.Request().Method == http.MethodHead {
		h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
		return c.NoContent(http.StatusNotFound)
	}
	return c.HTMLBlob(http.StatusNotFound, s.share404)
}

// shareLog returns what a link shows: the session's header and events up
// to its scope, redacted when the link says so. upTo < 0 means the whole
// log as it is now.
func (s *Server) shareLog(ctx context.Context, sh share.Share) (core.SessionHeader, []core.Event, error) {
	var h core.SessionHeader
	var events []core.Event
	var err error
	if sh.UpToSeq != nil {
		h, events, err = s.deps.Sessions.EventsUpTo(ctx, sh.SessionID, *sh.UpToSeq)
	} else {
		h, events, err = s.deps.Sessions.LoadSession(ctx, sh.SessionID)
	}
	if err != nil {
		return h, nil, err
	}
	if sh.UpToSeq != nil { // the source's contract, held here too: nothing later leaves
		n := 0
		for n < len(events) && events[n].Seq <= *sh.UpToSeq {
			n++
		}
		events = events[:n]
	}
	if sh.Redact {
		h, events, _ = s.deps.Redactor.Session(h, events)
	}
	return h, events, nil
}

func (s *Server) shareMeta(title string) views.PageMeta {
	m := s.meta(title)
	m.Public = true
	return m
}

// sharePage handles GET /s/TOKEN: the replay page — at an event of the
// link's scope with ?at= ("of K": the scope's last event), around a call or
// an event with ?call=, ?card=, ?event=. It counts a view.
func (s *Server) sharePage(c echo.Context, sr shareReq) error {
	ctx := c.Request().Context()
	p, err := placeOf(c)
	if err != nil {
		return err
	}
	live := !sr.sh.Scoped() && s.deps.Commits != nil
	v, _, err := s.replayPage(c, s.shareSource(sr), live, p)
	if err != nil {
		return err
	}
	v.Meta = s.shareMeta(v.Head.Title)
	if c.Request().Method == http.MethodGet {
		if err := s.deps.Shares.RecordShareView(ctx, sr.sh.ID); err != nil {
			s.log.WarnContext(ctx, "share: view not recorded", logkey.Err, err)
		}
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return s.render(c, http.StatusOK, views.SessionPage(v))
}

// shareSource is a link's replay source: its scope, redacted as the link
// says, with its URLs. A playback through it ends at the end of what it
// loaded; a live link's reader then goes live on the link's stream.
func (s *Server) shareSource(sr shareReq) replaySource {
	return replaySource{
		key:   "share " + sr.sh.ID,
		links: sr.links,
		load: func(ctx context.Context) (core.SessionHeader, []core.Event, error) {
			return s.shareLog(ctx, sr.sh)
		},
		follow: !sr.sh.Scoped() && s.deps.Commits != nil,
		reader: views.Reader{ReadOnly: true},
	}
}

// admitShareStream admits a stream of a share link's page (its live
// stream or a playback) as admitStream does, and registers it so that the
// link's revocation or expiry ends it: ctx ends then. done releases both.
func (s *Server) admitShareStream(c echo.Context, sr shareReq) (ctx context.Context, cursor int64, done func(), err error) {
	cursor, release, err := s.admitStream(c)
	if err != nil {
		return nil, 0, nil, err
	}
	ctx, cancel := context.WithCancel(c.Request().Context())
	unregister := s.shareStreams.add(sr.sh.ID, cancel)
	return ctx, cursor, func() { unregister(); cancel(); release() }, nil
}

// sharePlayback handles GET /s/TOKEN/stream?speed=…&after=… (or &until=):
// a playback of the link's view of the log on its page's stream. It takes a
// stream slot as the link's live stream does, and ends when the link is
// revoked through this server.
func (s *Server) sharePlayback(c echo.Context, sr shareReq) error {
	pb, err := playbackOf(c)
	if err != nil {
		return err
	}
	ctx, cursor, done, err := s.admitShareStream(c, sr)
	if err != nil {
		return err
	}
	defer done()
	startSSE(c)
	s.playback(ctx, s.newStreamConn(c), s.shareSource(sr), cursor, *pb)
	return nil
}

// shareFold folds what the link shows.
func (s *Server) shareFold(ctx context.Context, sh share.Share) (*views.Timeline, error) {
	h, events, err := s.shareLog(ctx, sh)
	if err != nil {
		return nil, err
	}
	return views.Fold(h, events, s.deps.Presenter), nil
}

// shareCard returns the card of callID that the link shows (?card= picks
// one of several), or errShareNotFound.
func shareCard(c echo.Context, t *views.Timeline, callID string) (*views.Card, error) {
	cards := t.CardsByCallID(callID)
	if len(cards) == 0 {
		return nil, errShareNotFound
	}
	want := c.QueryParam("card")
	if want == "" {
		return cards[0], nil
	}
	for _, k := range cards {
		if k.ID == want {
			return k, nil
		}
	}
	return nil, errShareNotFound
}

// shareCall handles GET /s/TOKEN/calls/CALL: the projections page.
func (s *Server) shareCall(c echo.Context, sr shareReq, callID string) error {
	t, card, err := s.shareCallCard(c, sr, callID)
	if err != nil {
		return err
	}
	v := views.NewCallPageFor(s.shareMeta("call "+short(callID)), t, sr.links, card)
	return s.render(c, http.StatusOK, views.CallPage(v))
}

// shareCallFile handles GET /s/TOKEN/calls/CALL/{content.txt,
// arguments.txt, meta.json}, within the link's scope and redaction.
func (s *Server) shareCallFile(c echo.Context, sr shareReq, callID, file string) error {
	_, card, err := s.shareCallCard(c, sr, callID)
	if err != nil {
		return err
	}
	return writeCallFile(c, file, callID, card)
}

// shareCallCard folds what the link shows and finds the card of callID in
// it (errShareNotFound when it is not there).
func (s *Server) shareCallCard(c echo.Context, sr shareReq, callID string) (*views.Timeline, *views.Card, error) {
	t, err := s.shareFold(c.Request().Context(), sr.sh)
	if err != nil {
		return nil, nil, err
	}
	card, err := shareCard(c, t, callID)
	return t, card, err
}

// contentText is a call's content as a text file: text blocks verbatim,
// any other block as one marked line of its JSON ("[image block] {…}"),
// joined by newlines.
func contentText(c core.Content) []byte {
	var buf bytes.Buffer
	for i, b := range c {
		if i > 0 {
			buf.WriteByte('\n')
		}
		if t, ok := b.(*core.TextBlock); ok {
			buf.WriteString(t.Text)
			continue
		}
		buf.WriteString("[" + b.BlockType() + " block] ")
		data, err := json.Marshal(b)
		if err != nil {
			buf.WriteString("(not encodable: " + err.Error() + ")")
			continue
		}
		buf.Write(data)
	}
	return buf.Bytes()
}

// isCallFile reports whether name is one of a call's downloads.
func isCallFile(name string) bool {
	return name == views.CallContentFile || name == views.CallArgumentsFile || name == views.CallMetaFile
}

// writeCallFile writes one of a call's downloads:
//
//   - content.txt: the model-facing content (contentText);
//   - arguments.txt: the raw argument string exactly as the model sent it,
//     which may be invalid JSON;
//   - meta.json: the result's presentation meta (null when the tool set
//     none).
//
// A call without a result has no content or meta (404), and a result whose
// call was never logged has no arguments (404) unless its step's assistant
// message asked for it (then they are the request's).
func writeCallFile(c echo.Context, file, callID string, card *views.Card) error {
	var body []byte
	ctype := "text/plain; charset=utf-8"
	switch file {
	case views.CallContentFile:
		if card.Result == nil {
			return core.Errorf(core.CodeNotFound, "call %q has no result yet", callID)
		}
		body = contentText(card.Result.Projection().Content)
	case views.CallArgumentsFile:
		if !card.HasCall && !card.Requested {
			return core.Errorf(core.CodeNotFound, "call %q was never logged: its arguments are unknown", callID)
		}
		body = []byte(card.Args)
	case views.CallMetaFile:
		if card.Result == nil {
			return core.Errorf(core.CodeNotFound, "call %q has no result yet", callID)
		}
		ctype = "application/json"
		var buf bytes.Buffer
		if meta := card.Result.Projection().Meta; len(meta) == 0 {
			buf.WriteString("null")
		} else if err := json.Indent(&buf, meta, "", "  "); err != nil {
			return fmt.Errorf("meta of call %q: %w", callID, err)
		}
		buf.WriteByte('\n')
		body = buf.Bytes()
	default:
		return core.Errorf(core.CodeNotFound, "no such download %q", file)
	}
	h := c.Response().Header()
	name := strings.TrimSuffix(file, path.Ext(file)) + "-" + callID + path.Ext(file)
	h.Set(echo.HeaderContentDisposition, mime.FormatMediaType("inline", map[string]string{"filename": name}))
	return c.Blob(http.StatusOK, ctype, body)
}

// shareEvents handles GET /s/TOKEN/events: what the link shows as JSONL.
func (s *Server) shareEvents(c echo.Context, sr shareReq) error {
	ctx := c.Request().Context()
	h, events, err := s.shareLog(ctx, sr.sh)
	if err != nil {
		return err
	}
	return s.writeJSONL(c, h, events, "prism-shared-session.jsonl")
}

// writeJSONL writes a session log as a JSONL download.
func (s *Server) writeJSONL(c echo.Context, h core.SessionHeader, events []core.Event, filename string) error {
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "application/x-ndjson")
	w.Header().Set(echo.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": filename}))
	if err := dsh.WriteJSONL(w, h, events); err != nil {
		if !w.Committed {
			return err
		}
		s.log.ErrorContext(c.Request().Context(), "export: write failed", logkey.SessionID, h.ID, logkey.Err, err)
	}
	return nil
}

// shareExport handles GET /s/TOKEN/export.html.
func (s *Server) shareExport(c echo.Context, sr shareReq) error {
	t, err := s.shareFold(c.Request().Context(), sr.sh)
	if err != nil {
		return err
	}
	return s.writeExport(c, t, ExportNote(s.now(), sr.sh.UpToSeq, sr.sh.Redact))
}

// ExportNote says what an export holds: when it was made (now), up to
// which event (nil: all of it), whether it was redacted.
func ExportNote(now time.Time, upTo *int64, redacted bool) string {
	note := "Exported from prism on " + now.UTC().Format("2006-01-02 15:04 UTC")
	if upTo != nil {
		note += ", up to event " + strconv.FormatInt(*upTo, 10)
	}
	if redacted {
		note += ", secrets redacted"
	}
	return note + "."
}

// exportCSP lets a saved file style itself and nothing else: no script, no
// request to any server.
const exportCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// ExportCSS is what an export.html inlines: prism's stylesheet and the
// code highlighter's.
func ExportCSS() string {
	appCSS, _ := fs.ReadFile(static.FS, "app.css")
	return string(appCSS) + "\n" + views.HighlightCSS()
}

// WriteExportHTML writes the fold t as one self-contained HTML file — its
// stylesheets inline, no script, no link to any server, every turn, step
// and card — the file GET /sessions/{id}/export.html serves and `prism
// export --html` writes. note says what the file holds (ExportNote).
func WriteExportHTML(ctx context.Context, w io.Writer, t *views.Timeline, note string) error {
	return views.ExportPage(views.NewExport(t, ExportCSS(), note)).Render(ctx, w)
}

// writeExport writes t as one self-contained HTML file (the owner's
// /sessions/ID/export.html and a link's /s/TOKEN/export.html share it).
func (s *Server) writeExport(c echo.Context, t *views.Timeline, note string) error {
	v := views.NewExport(t, s.exportCSS, note)
	h := c.Response().Header()
	h.Set("Content-Security-Policy", exportCSP)
	name := "prism-session-" + t.Header().ID + ".html"
	h.Set(echo.HeaderContentDisposition, mime.FormatMediaType("inline", map[string]string{"filename": name}))
	return s.render(c, http.StatusOK, views.ExportPage(v))
}

// shareStream handles GET /s/TOKEN/stream: a live link's SSE stream. It
// renders its own frames — from the link's (redacted) view of the log,
// with the link's URLs — rather than the session hub's, and ends within
// Tuning.ShareCheck of the link's revocation or expiry.
func (s *Server) shareStream(c echo.Context, sr shareReq) error {
	ctx, cursor, done, err := s.admitShareStream(c, sr)
	if err != nil {
		return err
	}
	defer done()
	watch, stop := s.broker.watch(sr.sh.SessionID)
	defer stop()

	hdr, events, err := s.deps.Sessions.LoadSession(ctx, sr.sh.SessionID)
	if err != nil {
		return err
	}
	if cursor > int64(len(events))-1 {
		cursor = int64(len(events)) - 1 // the page cannot be ahead of the log
	}
	startSSE(c)
	w := s.newStreamConn(c)
	ls := newLinkStream(s, sr, hdr)
	ls.fold(events[:cursor+1])
	if !w.write(ls.render(ctx, events[cursor+1:])) {
		return nil
	}
	check := time.NewTicker(s.tune.ShareCheck)
	defer check.Stop()
	keep := time.NewTicker(s.tune.KeepAlive)
	defer keep.Stop()
	for {
		select {
		case <-ctx.Done():
			if c.Request().Context().Err() == nil { // revoked through this server
				w.fail(shareEndedMessage)
			}
			return nil
		case <-check.C:
			if _, err := s.resolveShare(ctx, sr.token); err != nil {
				if errors.Is(err, errShareNotFound) {
					w.fail(shareEndedMessage)
					return nil
				}
				s.log.WarnContext(ctx, "share stream: link not checked", logkey.Err, err)
			}
		case <-keep.C:
			if !w.write([]byte(": keep-alive\n\n")) {
				return nil
			}
		case <-watch.wake:
			if watch.replaced.Swap(false) {
				// The whole log was replaced: start over from it.
				hdr, events, err := s.deps.Sessions.LoadSession(ctx, sr.sh.SessionID)
				if err != nil {
					w.fail("live updates stopped: the session could not be read. Reload to retry.")
					return nil
				}
				ls = newLinkStream(s, sr, hdr)
				ls.fold(events)
				if !w.write(ls.page(ctx)) {
					return nil
				}
				continue
			}
			more, err := s.deps.Sessions.EventsAfter(ctx, sr.sh.SessionID, ls.last)
			if err != nil {
				if ctx.Err() == nil {
					w.fail("live updates stopped: the session could not be read. Reload to retry.")
				}
				return nil
			}
			if !w.write(ls.render(ctx, more)) {
				return nil
			}
		}
	}
}

// shareEndedMessage is what an open share stream says when its link stops
// granting access.
const shareEndedMessage = "This link was revoked or has expired: live updates stopped."

// linkStream is one share stream's own fold of the log: the events it has
// seen, redacted as a walk from the start, folded with the link's URLs.
type linkStream struct {
	s      *Server
	sr     shareReq
	walker *redact.Walker // nil when the link is not redacted
	tl     *views.Timeline
	co     views.Coalescer
	last   int64 // seq of the last event taken
}

func newLinkStream(s *Server, sr shareReq, h core.SessionHeader) *linkStream {
	ls := &linkStream{s: s, sr: sr, last: -1}
	if sr.sh.Redact {
		ls.walker = s.deps.Redactor.Walker()
		h = ls.walker.Header(h)
	}
	ls.tl = views.NewTimeline(h, s.deps.Presenter)
	return ls
}

func (ls *linkStream) redact(events []core.Event) []core.Event {
	if ls.walker == nil {
		return events
	}
	return ls.walker.Events(events)
}

// fold takes events without rendering them (what the page already shows).
func (ls *linkStream) fold(events []core.Event) {
	if len(events) == 0 {
		return
	}
	ls.tl.ApplyAll(ls.redact(events))
	ls.last = events[len(events)-1].Seq
}

// render takes events that continue the log and returns their frames.
// Chunk updates are not held back (a share stream flushes every batch).
func (ls *linkStream) render(ctx context.Context, events []core.Event) []byte {
	var out []byte
	for len(events) > 0 && events[0].Seq <= ls.last {
		events = events[1:]
	}
	if len(events) == 0 {
		return nil
	}
	emit := func(u views.Update) error {
		if u.Empty() {
			out = append(out, idOnly(u.Seq)...)
			return nil
		}
		patches, err := views.RenderUpdateFor(ctx, ls.tl, ls.sr.links, u)
		if err != nil {
			return err
		}
		out = append(out, formatPatches(patches, strconv.FormatInt(u.Seq, 10))...)
		return nil
	}
	red := ls.redact(events)
	for i := range red {
		if err := ls.co.Apply(ls.tl, &red[i], emit); err != nil {
			ls.s.log.ErrorContext(ctx, "share stream: render failed", logkey.Err, err)
		}
	}
	if err := ls.co.Flush(emit); err != nil {
		ls.s.log.ErrorContext(ctx, "share stream: render failed", logkey.Err, err)
	}
	ls.last = events[len(events)-1].Seq
	return out
}

// page re-renders the whole page window (after the log was replaced).
func (ls *linkStream) page(ctx context.Context) []byte {
	patches, err := views.RenderPageFor(ctx, ls.tl, ls.sr.links, ls.s.tune.Window)
	if err != nil {
		ls.s.log.ErrorContext(ctx, "share stream: render failed", logkey.Err, err)
		return nil
	}
	return formatPatches(patches, strconv.FormatInt(ls.tl.LastSeq(), 10))
}
