package web

// Share links: the reader's side. Everything under /s/ goes through
// handleShare, which resolves the token and dispatches the few reads a link
// grants; anything else — an unknown, malformed, expired or revoked token,
// a path outside the link's scope, another method — is the one share 404
// page, the same bytes whatever was asked (no existence leak).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"prism/core"
	"prism/core/logkey"
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
	links := views.ShareLinks(token)
	if sh.Scoped() {
		links = links.ScopedShare()
	}
	return shareReq{sh: sh, token: token, links: links}, nil
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
		return shareFailure{err}
	}
	c.Set(shareIDKey, sr.sh.ID)
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
	var busy *shareBusy
	if errors.As(err, &busy) {
		return s.shareBusyPage(c, busy)
	}
	// A bad parameter (an at outside the link's scope included) is not a
	// read the link grants either.
	if errors.Is(err, errShareNotFound) || core.ErrorCode(err) == core.CodeNotFound || core.ErrorCode(err) == core.CodeInvalid {
		if c.Response().Committed {
			return nil
		}
		return s.shareNotFound(c)
	}
	if err != nil {
		// Whatever else failed is logged whole (handleError) and told
		// the reader only by its status: its text names sessions.
		return shareFailure{err}
	}
	return nil
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

// shareBusyPage answers a share read refused for want of room (shareBudget):
// 429 or 503, Retry-After, and a page that says the link is busy.
func (s *Server) shareBusyPage(c echo.Context, busy *shareBusy) error {
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", strconv.Itoa(busy.retry))
	if c.Request().Method == http.MethodHead {
		h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
		return c.NoContent(busy.status)
	}
	return s.render(c, busy.status, views.ShareBusy(views.PageMeta{Title: "Busy · prism", Assets: s.assets, Public: true}, busy.msg+"."))
}

// shareLog returns what a link shows: the session's header and events up
// to its scope, redacted when the link says so — for a live link whose
// hub is open, the log the hub redacted (each event once for every read of
// the link; shareLogOwn for a download).
func (s *Server) shareLog(ctx context.Context, sh share.Share) (core.SessionHeader, []core.Event, error) {
	if !sh.Scoped() {
		if h, events, ok := s.broker.linkLog(view{key: linkKey(sh.ID, sh.Redact)}); ok {
			return h, events, nil
		}
	}
	return s.shareLogOwn(ctx, sh)
}

// shareLogOwn returns what a link shows, read and redacted for this
// request alone, in one pass: a download of the log (JSONL) gets every
// chunk's text as a pass over the whole log redacts it, where a hub's
// incremental pass withholds the text of a stream of chunks that spanned
// two of its batches (its message carries the text).
func (s *Server) shareLogOwn(ctx context.Context, sh share.Share) (core.SessionHeader, []core.Event, error) {
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
	h = shareHeader(h)
	if sh.UpToSeq != nil { // the source's contract, held here too: nothing later leaves
		n := 0
		for n < len(events) && events[n].Seq <= *sh.UpToSeq {
			n++
		}
		events = events[:n]
	}
	// Named before redacted (sharealias.go).
	f, err := s.linkFamily(ctx, sh)
	if err != nil {
		return h, nil, err
	}
	events = aliasEvents(events, f.aliases)
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
	if live {
		// A page whose stream would be refused says the link is busy.
		if err := s.shareBudget.full(sr.sh.ID, s.tune); err != nil {
			return err
		}
	}
	if c.Request().Method == http.MethodGet {
		// A reload answered 304 is a view too.
		if err := s.deps.Shares.RecordShareView(ctx, sr.sh.ID); err != nil {
			s.log.WarnContext(ctx, "share: view not recorded", logkey.Err, err)
		}
	}
	tag, fresh, err := s.shareNotModified(c, sr, "page")
	if fresh || err != nil {
		return err
	}
	render := func() ([]byte, error) {
		s.broker.stats.pages.Add(1)
		v, _, err := s.replayPage(c, s.shareSource(sr), live, p)
		if err != nil {
			return nil, err
		}
		v.Meta = s.shareMeta(v.Head.Title)
		return mustRenderCtx(ctx, views.SessionPage(v))
	}
	// A crowd opening the link renders its page once: the validator names
	// exactly what decides the bytes.
	page, err := s.sharePages.get(ctx, tag, render)
	if errors.Is(err, context.Canceled) && ctx.Err() == nil {
		page, err = render() // the reader whose render it waited for left
	}
	if err != nil {
		return err
	}
	return c.HTMLBlob(http.StatusOK, page)
}

// mustRenderCtx renders a component into bytes of its own.
func mustRenderCtx(ctx context.Context, comp templ.Component) ([]byte, error) {
	var buf bytes.Buffer
	if err := comp.Render(ctx, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// shareCacheControl lets a link's reader keep its page and export and ask
// whether they changed (ETag, If-None-Match), and keeps every shared cache
// — a proxy, a CDN — from storing them: a revoked or expired link must stop
// answering at once, and only this server knows when it does.
const shareCacheControl = "private, no-cache"

// shareNotModified sets the validator (tag) of a link's page or export
// (what: "page", "export") and answers 304 when the request already holds
// it (fresh). The validator is a hash of what decides the bytes: the
// server's build, the link (its id, scope and redaction), the session's
// summary (its events, last seq and time, status, title, counters) and the
// query; it also keys the rendered pages the server keeps (sharePages). It
// is weak: an export's note names the minute it was made. A link is
// resolved before this on every request, so a revoked or expired one is
// the share 404 however fresh the reader's copy.
func (s *Server) shareNotModified(c echo.Context, sr shareReq, what string) (tag string, fresh bool, err error) {
	sum, err := s.deps.Sessions.Summary(c.Request().Context(), sr.sh.SessionID)
	if err != nil {
		return "", false, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%t\x00%t\x00", s.buildTag, what, sr.sh.ID, sr.sh.Redact, s.deps.Commits != nil)
	if sr.sh.UpToSeq != nil {
		fmt.Fprintf(h, "%d", *sr.sh.UpToSeq)
	}
	// The notes the link shows decide its bytes too (repair's why; its
	// labels when it shows them), and so do the names of its children.
	f, err := s.linkFamily(c.Request().Context(), sr.sh)
	if err != nil {
		return "", false, err
	}
	h.Write([]byte(f.key))
	// A link with its children shows their cards: each child's log decides
	// its bytes as much as the parent's does.
	for _, id := range f.ids {
		csum, err := s.deps.Sessions.Summary(c.Request().Context(), id)
		if core.ErrorCode(err) == core.CodeNotFound {
			fmt.Fprintf(h, "\x00%s\x00gone", id)
			continue
		}
		if err != nil {
			return "", false, err
		}
		if err := json.NewEncoder(h).Encode(csum); err != nil {
			return "", false, fmt.Errorf("share validator of %s: child %s: %w", sr.sh.ID, id, err)
		}
	}
	digest := noteDigest(s.shareNotes(c.Request().Context(), sr.sh, f.aliases))
	for _, call := range slices.Sorted(maps.Keys(digest)) {
		fmt.Fprintf(h, "\x00%s\x00%s", call, digest[call])
	}
	if err := json.NewEncoder(h).Encode(sum); err != nil {
		return "", false, fmt.Errorf("share validator of %s: %w", sr.sh.ID, err)
	}
	h.Write([]byte(c.Request().URL.RawQuery))
	tag = `W/"` + base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:18]) + `"`
	hdr := c.Response().Header()
	hdr.Set("Cache-Control", shareCacheControl)
	hdr.Set("ETag", tag)
	if !etagMatches(c.Request().Header.Get("If-None-Match"), tag) {
		return tag, false, nil
	}
	return tag, true, c.NoContent(http.StatusNotModified)
}

// etagMatches reports whether an If-None-Match header names tag, by the
// weak comparison RFC 9110 prescribes for it ("*" names any).
func etagMatches(header, tag string) bool {
	weak := func(t string) string { return strings.TrimPrefix(strings.TrimSpace(t), "W/") }
	for _, t := range strings.Split(header, ",") {
		if t = strings.TrimSpace(t); t == "*" || t != "" && weak(t) == weak(tag) {
			return true
		}
	}
	return false
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
		reader: s.shareReader(context.Background(), sr.sh),
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
	leave, err := s.shareBudget.admit(sr.sh.ID, s.tune)
	if err != nil {
		release()
		return nil, 0, nil, err
	}
	ctx, cancel := context.WithCancel(c.Request().Context())
	unregister := s.shareStreams.add(sr.sh.ID, cancel)
	return ctx, cursor, func() { unregister(); cancel(); leave(); release() }, nil
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
	t := views.Fold(h, events, s.deps.Presenter)
	rd := s.shareReader(ctx, sh)
	if rd.ScopedChildren {
		rd.ChildrenUntil = max(t.Summary().LastTime, 1)
	}
	t.SetReader(rd)
	return t, nil
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
	h, events, err := s.shareLogOwn(ctx, sr.sh)
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
	if _, fresh, err := s.shareNotModified(c, sr, "export"); fresh || err != nil {
		return err
	}
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
// follows the link's hub (linkView), which every reader of the link
// shares: the session folded and redacted once for all of them, each
// update rendered once, with the link's URLs. The hub ends when the link is
// revoked (at once through this server, within Tuning.ShareCheck from
// elsewhere) or expires, and its streams say so.
func (s *Server) shareStream(c echo.Context, sr shareReq) error {
	sig, err := signalsOf(c)
	if err != nil {
		return err
	}
	cursor, release, err := s.admitStream(c)
	if err != nil {
		return err
	}
	defer release()
	leave, err := s.shareBudget.admit(sr.sh.ID, s.tune)
	if err != nil {
		return err
	}
	defer leave()
	startSSE(c)
	ctx, w := c.Request().Context(), s.newStreamConn(c)
	if sig.replaying() {
		// A page that stood at an event goes live as a fresh load opens
		// the link: its latest window, not every later card appended.
		var ok bool
		if cursor, ok = s.openLive(ctx, w, s.shareSource(sr)); !ok {
			return nil
		}
	}
	s.follow(ctx, w, s.linkView(sr), cursor)
	return nil
}

// shareEndedMessage is what an open share stream says when its link stops
// granting access.
const shareEndedMessage = "This link was revoked or has expired: live updates stopped."

// linkView is the live view of a link: its session, redacted as it says,
// with its URLs; the hub asks the store every Tuning.ShareCheck whether
// the link still grants access.
func (s *Server) linkView(sr shareReq) view {
	v := view{key: linkKey(sr.sh.ID, sr.sh.Redact), session: sr.sh.SessionID, links: sr.links,
		link: &linkView{id: sr.sh.ID, reader: func(ctx context.Context) views.Reader { return s.shareReader(ctx, sr.sh) }, active: func(ctx context.Context) error {
			_, err := s.resolveShare(ctx, sr.token)
			if errors.Is(err, errShareNotFound) {
				return errLinkEnded
			}
			return err
		}}}
	if sr.sh.Redact {
		v.link.redactor = s.deps.Redactor
	}
	if sr.sh.Children {
		v.link.aliases = func(ctx context.Context) (map[string]string, error) {
			f, err := s.linkFamily(ctx, sr.sh)
			if err != nil {
				return nil, err
			}
			return f.aliases, nil
		}
	}
	return v
}
