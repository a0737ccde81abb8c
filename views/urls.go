package views

import (
	"net/url"
	"strconv"
)

// The URLs of prism's pages and endpoints. Every template and handler
// builds its links, form actions, stream URLs and redirects with these
// functions. The route patterns below are the only ones the server knows:
// package web's route table (web/routes.go) registers each with its
// method, handler and access, and web's tests check that each builder's
// URL reaches the route it names. Path segments are escaped with
// url.PathEscape.

// Route patterns, in Echo's syntax.
const (
	// The session list and the session pages.
	RouteHome          = "/"
	RouteListStream    = "/stream"
	RouteSession       = "/sessions/:id"
	RouteSessionStream = "/sessions/:id/stream"
	RouteEarlier       = "/sessions/:id/earlier"
	RouteLater         = "/sessions/:id/later"
	RouteSeek          = "/sessions/:id/seek"
	RouteCall          = "/sessions/:id/calls/:callId"
	RouteStart         = "/sessions"
	RouteMessages      = "/sessions/:id/messages"
	RouteCancel        = "/sessions/:id/cancel"
	RouteDelete        = "/sessions/:id/delete"
	RouteSearch        = "/search"
	// Two sessions compared call by call, their live stream, and the
	// picker that chooses the second (?a=ID; with &b=ID it redirects).
	RouteCompare       = "/compare/:a/:b"
	RouteCompareStream = "/compare/:a/:b/stream"
	RouteComparePick   = "/compare"
	RouteAPICompare    = "/api/compare/:a/:b"
	// The owner's exports, whose renderers share links reuse.
	RouteSessionExportHTML = "/sessions/:id/export.html"
	RouteCallContent       = "/sessions/:id/calls/:callId/content.txt"
	RouteCallArguments     = "/sessions/:id/calls/:callId/arguments.txt"
	RouteCallMeta          = "/sessions/:id/calls/:callId/meta.json"
	// RouteCallTest is a call saved as a test: a zip of a Go test of its
	// cards (package views/testgen).
	RouteCallTest = "/sessions/:id/calls/:callId/test.zip"
	// Approvals: a card's decision form.
	RouteApproval = "/sessions/:id/approvals/:approvalId"
	// Share links: the owner's form, preview and revoke button; the
	// readers' pages, all under ShareRoutePrefix (web dispatches them).
	RouteShareCreate  = "/sessions/:id/shares"
	RouteSharePreview = "/sessions/:id/shares/preview"
	RouteShareRevoke  = "/shares/:shareId/revoke"
	ShareRoutePrefix  = "/s/"
	RouteShare        = ShareRoutePrefix + "*"
	// The owner's sign-in.
	RouteLogin  = "/login"
	RouteLogout = "/logout"
	// The JSON API.
	RouteAPISessions     = "/api/sessions"
	RouteAPISession      = "/api/sessions/:id"
	RouteExport          = "/api/sessions/:id/events"
	RouteAPIImport       = "/api/sessions/import"
	RouteAPISearch       = "/api/search"
	RouteAPIApprovals    = "/api/approvals"
	RouteAPIApproval     = "/api/sessions/:id/approvals/:approvalId"
	RouteAPIPolicy       = "/api/sessions/:id/approval-policy"
	RouteAPIShares       = "/api/sessions/:id/shares"
	RouteAPISharePreview = "/api/sessions/:id/shares/preview"
	RouteAPIShare        = "/api/shares/:shareId"
	// The OTLP/HTTP trace receiver (OpenTelemetry's standard path).
	RouteOTLPTraces     = "/v1/traces"
	RouteAPINotes       = "/api/sessions/:id/notes"
	RouteAPINote        = "/api/sessions/:id/notes/:noteId"
	RouteAPIAnnotations = "/api/sessions/:id/annotations"
	RouteAPIAnnotation  = "/api/sessions/:id/annotations/:noteId"
	// The card's label form (Datastar): add, edit, remove.
	RouteLabels = "/sessions/:id/labels"
	RouteLabel  = "/sessions/:id/labels/:noteId"
	// Static files and the liveness probe.
	RouteStatic       = "/static/*"
	RouteHighlightCSS = "/static/highlight.css"
	RouteHealth       = "/healthz"
)

// OTLPTracesURL is the OTLP/HTTP trace receiver's endpoint, the path an
// exporter's OTEL_EXPORTER_OTLP_ENDPOINT gets appended.
func OTLPTracesURL() string { return RouteOTLPTraces }

// HomeURL is the session list, filtered by query when it is not empty.
func HomeURL(query string) string { return withQuery(RouteHome, "q", query) }

// ListStreamURL is the session list's SSE stream for a query.
func ListStreamURL(query string) string { return withQuery(RouteListStream, "q", query) }

// The session list's query parameters.
const (
	ParamQuery     = "q"         // title or id contains
	ParamStatus    = "status"    // running | idle | ended | interrupted
	ParamHasErrors = "errors"    // "1": only sessions with failed calls
	ParamAnnotated = "annotated" // "1": only sessions with a label
	ParamSort      = "sort"      // updated (default) | created | calls | errors
)

// ListFilter is what the session list shows and in which order.
type ListFilter struct {
	Query, Status string
	HasErrors     bool
	Annotated     bool
	Sort          string
	// Attention keeps the sessions with an open attention firing.
	Attention bool
}

func (f ListFilter) values() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{ParamQuery: f.Query, ParamStatus: f.Status, ParamSort: f.Sort} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.HasErrors {
		q.Set(ParamHasErrors, "1")
	}
	if f.Attention {
		q.Set(ParamAttention, "1")
	}
	if f.Annotated {
		q.Set(ParamAnnotated, "1")
	}
	return q
}

// ListURL is the session list with f applied.
func ListURL(f ListFilter) string {
	if q := f.values(); len(q) > 0 {
		return RouteHome + "?" + q.Encode()
	}
	return RouteHome
}

// ListFilterStreamURL is the session list's SSE stream for f.
func ListFilterStreamURL(f ListFilter) string {
	if q := f.values(); len(q) > 0 {
		return RouteListStream + "?" + q.Encode()
	}
	return RouteListStream
}

// The search's query parameters.
const (
	ParamOrder  = "order"  // rank | time
	ParamCursor = "cursor" // a page's nextCursor
	ParamLimit  = "limit"  // hits per page (the API)
)

// SearchURL is the search page for query, in order ("" = best match
// first), from cursor ("" = the first page).
func SearchURL(query, order, cursor string) string {
	q := url.Values{}
	for k, v := range map[string]string{"q": query, ParamOrder: order, ParamCursor: cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return RouteSearch
	}
	return RouteSearch + "?" + q.Encode()
}

// APISearchURL is the search API for query.
func APISearchURL(query, order, cursor string, limit int) string {
	q := url.Values{"q": {query}}
	if order != "" {
		q.Set(ParamOrder, order)
	}
	if cursor != "" {
		q.Set(ParamCursor, cursor)
	}
	if limit > 0 {
		q.Set(ParamLimit, strconv.Itoa(limit))
	}
	return RouteAPISearch + "?" + q.Encode()
}

// SessionURL is a session's inspector page.
func SessionURL(id string) string { return "/sessions/" + url.PathEscape(id) }

// ParamShared names, on a session page, the share link its form just
// created, whose URL the page shows once.
const ParamShared = "shared"

// SessionSharedURL is session id's page showing, once, the share link the
// page's form created (key: its place in the server's memory), its share
// panel open.
func SessionSharedURL(id, key string) string {
	return SessionURL(id) + "?" + ParamShared + "=" + url.QueryEscape(key) + "#share-panel"
}

// CompareURL is the page comparing session a with session b.
func CompareURL(a, b string) string { return "/compare/" + url.PathEscape(a) + "/" + url.PathEscape(b) }

// CompareStreamURL is the compare page's SSE stream.
func CompareStreamURL(a, b string) string { return CompareURL(a, b) + "/stream" }

// APICompareURL is the comparison of session a with b as JSON.
func APICompareURL(a, b string) string {
	return "/api/compare/" + url.PathEscape(a) + "/" + url.PathEscape(b)
}

// ComparePickURL is the page that picks a session to compare a with.
func ComparePickURL(a string) string { return RouteComparePick + "?a=" + url.QueryEscape(a) }

// SessionStreamURL is the inspector's SSE stream, resuming after seq.
func SessionStreamURL(id string, after int64) string {
	return SessionURL(id) + "/stream?after=" + strconv.FormatInt(after, 10)
}

// EarlierURL loads the transcript segments before seq before.
func EarlierURL(id string, before int64) string {
	return SessionURL(id) + "/earlier?before=" + strconv.FormatInt(before, 10)
}

// SeekURL moves a replay page to a place: the page's query (Place.URL's)
// on the seek endpoint, which answers with patches.
func SeekURL(id string, p Place) string { return SessionLinks(id).SeekBase() + p.Query() }

// StepURL moves a replay page one step (by StepEvent, StepCall, StepMark,
// StepError or StepTurn; dir > 0 forward) from where it stands.
func StepURL(id, by string, dir int) string {
	sign := "-"
	if dir > 0 {
		sign = "+"
	}
	return SessionLinks(id).SeekBase() + "?step=" + url.QueryEscape(by+sign)
}

// PlayURL plays the session's log after seq after at speed (1, 10, 50) on
// the page's stream: the live path's frames, paced.
func PlayURL(id string, after int64, speed int) string {
	return SessionStreamURL(id, after) + "&speed=" + strconv.Itoa(speed)
}

// CallURL is the projections page of one call; card picks one card when a
// call id has several ("" for the first).
func CallURL(sessionID, callID, card string) string {
	return withQuery(SessionURL(sessionID)+"/calls/"+url.PathEscape(callID), "card", card)
}

// CallTestURL downloads one call saved as a test ("save as test": a zip of
// a Go test of its cards, its recording and their golden); card picks one
// card when a call id has several ("" for the first).
func CallTestURL(sessionID, callID, card string) string {
	return withQuery(SessionURL(sessionID)+"/calls/"+url.PathEscape(callID)+"/test.zip", "card", card)
}

// DeleteURL is where a session page's delete form posts.
func DeleteURL(id string) string { return SessionURL(id) + "/delete" }

// CardURL is a card's place on its session page.
func CardURL(sessionID, elemID string) string { return SessionURL(sessionID) + "#" + elemID }

// The session page's query parameters: a point in time to show the session
// at, and a target to show and mark. Handlers read them by these names.
const (
	// ParamAt is a seq: the session as it was right after that event.
	ParamAt = "at"
	// ParamCall is a call id: the window around its first card.
	ParamCall = "call"
	// ParamCard is a card's element id: that card (with ParamCall, one of
	// the call's cards where a model reused the id; alone, any card).
	ParamCard = "card"
	// ParamEvent is a seq: the window around the element that event made
	// or changed (a message, reasoning, a card, a turn).
	ParamEvent = "event"
)

// Place is where a session page stands and what it shows: the session at a
// seq (At ≥ 0) or live (At < 0), around a call (Call, Card) or an event
// (Event ≥ 0), or at its latest window.
type Place struct {
	At    int64
	Call  string
	Card  string
	Event int64
}

// Targets reports whether p names a target (a call, a card or an event).
func (p Place) Targets() bool { return p.Call != "" || p.Card != "" || p.Event >= 0 }

// LivePlace is the live page at its latest window.
func LivePlace() Place { return Place{At: -1, Event: -1} }

// URL is the session page of id at p.
func (p Place) URL(id string) string { return SessionURL(id) + p.Query() }

// Query is p's query string ("?at=…", "" for the live page's latest
// window).
func (p Place) Query() string {
	q := url.Values{}
	if p.At >= 0 {
		q.Set(ParamAt, strconv.FormatInt(p.At, 10))
	}
	if p.Call != "" {
		q.Set(ParamCall, p.Call)
	}
	if p.Card != "" {
		q.Set(ParamCard, p.Card)
	}
	if p.Event >= 0 {
		q.Set(ParamEvent, strconv.FormatInt(p.Event, 10))
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// SessionAtURL is session id as it was right after event seq at.
func SessionAtURL(id string, at int64) string {
	return Place{At: at, Event: -1}.URL(id)
}

// SessionCallURL is session id's page around a card of call callID, marked
// as the current element: its first card, or the card whose element id is
// card.
func SessionCallURL(id, callID, card string) string {
	return Place{At: -1, Call: callID, Card: card, Event: -1}.URL(id)
}

// SessionEventURL is session id's page around the element event seq made
// or changed, marked as the current element.
func SessionEventURL(id string, seq int64) string {
	return Place{At: -1, Event: seq}.URL(id)
}

// StartURL is where the start form posts a new session.
func StartURL() string { return RouteStart }

// MessagesURL is where a follow-up message is posted.
func MessagesURL(id string) string { return SessionURL(id) + "/messages" }

// CancelURL is where a session's running turn is cancelled.
func CancelURL(id string) string { return SessionURL(id) + "/cancel" }

// ApprovalURL is where a card's Approve and Reject buttons post.
func ApprovalURL(sessionID, approvalID string) string {
	return SessionURL(sessionID) + "/approvals/" + url.PathEscape(approvalID)
}

// APIApprovalsURL lists the approvals waiting across sessions.
func APIApprovalsURL() string { return RouteAPIApprovals }

// APIApprovalURL is where a JSON decision on one approval is posted.
func APIApprovalURL(sessionID, approvalID string) string {
	return "/api/sessions/" + url.PathEscape(sessionID) + "/approvals/" + url.PathEscape(approvalID)
}

// APIPolicyURL is where a session's approval policy is set.
func APIPolicyURL(sessionID string) string {
	return "/api/sessions/" + url.PathEscape(sessionID) + "/approval-policy"
}

// APINotesURL lists a session's notes (kind "" = every kind) and is
// where a new note is posted.
func APINotesURL(sessionID, kind string) string {
	return withQuery("/api/sessions/"+url.PathEscape(sessionID)+"/notes", "kind", kind)
}

// APINoteURL is where one note is replaced or removed.
func APINoteURL(sessionID, noteID string) string {
	return "/api/sessions/" + url.PathEscape(sessionID) + "/notes/" + url.PathEscape(noteID)
}

// APIAnnotationsURL is where a label is posted ({callId?, label, score?,
// note?}).
func APIAnnotationsURL(sessionID string) string {
	return "/api/sessions/" + url.PathEscape(sessionID) + "/annotations"
}

// APIAnnotationURL is where one label is replaced or removed.
func APIAnnotationURL(sessionID, noteID string) string {
	return APIAnnotationsURL(sessionID) + "/" + url.PathEscape(noteID)
}

// LabelsURL is where a card's label form posts a new label.
func LabelsURL(sessionID string) string { return SessionURL(sessionID) + "/labels" }

// LabelURL is where a card's label form posts an edit of a label, and
// (with ?remove=1) its removal.
func LabelURL(sessionID, noteID string) string {
	return LabelsURL(sessionID) + "/" + url.PathEscape(noteID)
}

// ExportURL is a session's log as JSONL.
func ExportURL(id string) string { return "/api/sessions/" + url.PathEscape(id) + "/events" }

// StaticURL is a static asset, versioned by its content hash so it can be
// cached for good.
func StaticURL(name, version string) string {
	return withQuery("/static/"+name, "v", version)
}

func withQuery(path, key, value string) string {
	if value == "" {
		return path
	}
	return path + "?" + url.Values{key: {value}}.Encode()
}
