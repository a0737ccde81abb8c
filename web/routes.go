package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"prism/views"
)

// anyMethod registers a route for every method (echo's Any).
const anyMethod = "*"

// route is one row of the main listener's route table.
type route struct {
	method  string           // an http.Method* or anyMethod; a GET route answers HEAD too (see head)
	pattern string           // a views.Route* pattern: views' URL builders produce its URLs
	handle  echo.HandlerFunc // the handler
	// head answers HEAD on a GET route; nil: handle does, seeing a GET
	// (headAsGet; net/http drops the body).
	head echo.HandlerFunc
	// public: answered without the owner's token when one is set
	// (requireOwner). A pattern ending in * makes its whole prefix public.
	public bool
	// raw: never compressed (SSE streams, where one frame goes to many
	// subscribers as is, and the liveness probe).
	raw bool
	// upload: the body is bounded by Tuning.MaxImportBytes and
	// ImportTimeout instead of MaxBodyBytes and BodyTimeout (guardBodies).
	upload bool
	// bodyCap: a body cap of the route's own, below Tuning.MaxBodyBytes
	// (guardBodies refuses a larger body with 413 naming this cap); 0: the
	// server's.
	bodyCap int64
}

// routeTable is every route of the main listener, in one place: routes
// registers each row, and the middleware reads its public, raw and upload
// columns. The share listener (--share-addr) serves the public rows of
// share links and static files only (shareRoutes).
func (s *Server) routeTable() []route {
	const GET, POST, PUT, DELETE = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete
	return []route{
		// The session list and the session pages (HTML, SSE and forms).
		{method: GET, pattern: views.RouteHome, handle: s.handleHome},
		{method: GET, pattern: views.RouteListStream, handle: s.handleListStream, head: s.handleStreamHead, raw: true},
		{method: GET, pattern: views.RouteSession, handle: s.handleSession},
		{method: GET, pattern: views.RouteSessionStream, handle: s.handleSessionStream, head: s.handleStreamHead, raw: true},
		{method: GET, pattern: views.RouteEarlier, handle: s.handleEarlier},
		{method: GET, pattern: views.RouteLater, handle: s.handleLater},
		{method: GET, pattern: views.RouteSeek, handle: s.handleSeek},
		{method: GET, pattern: views.RouteCall, handle: s.handleCall},
		{method: POST, pattern: views.RouteStart, handle: s.handleStart},
		{method: POST, pattern: views.RouteMessages, handle: s.handleMessage},
		{method: POST, pattern: views.RouteCancel, handle: s.handleCancel},
		{method: POST, pattern: views.RouteDelete, handle: s.handleDelete},
		{method: POST, pattern: views.RouteForks, handle: s.handleForkForm},
		{method: GET, pattern: views.RouteForks, handle: s.handleForksPage},
		{method: GET, pattern: views.RouteSearch, handle: s.handleSearch},
		// Two sessions compared call by call (owner only, never a share link).
		{method: GET, pattern: views.RouteComparePick, handle: s.handleComparePick},
		{method: GET, pattern: views.RouteCompare, handle: s.handleCompare},
		{method: GET, pattern: views.RouteCompareStream, handle: s.handleCompareStream, head: s.handleCompareStreamHead, raw: true},
		{method: GET, pattern: views.RouteSources, handle: s.handleSources},
		// The owner's exports.
		{method: GET, pattern: views.RouteSessionExportHTML, handle: s.handleExportHTML, head: s.handleExportHTML},
		{method: GET, pattern: views.RouteCallContent, handle: s.handleCallFile(views.CallContentFile)},
		{method: GET, pattern: views.RouteCallArguments, handle: s.handleCallFile(views.CallArgumentsFile)},
		{method: GET, pattern: views.RouteCallMeta, handle: s.handleCallFile(views.CallMetaFile)},
		{method: GET, pattern: views.RouteCallTest, handle: s.handleCallTest},
		// Labels: a card's label forms (add, edit, remove).
		{method: POST, pattern: views.RouteLabels, handle: s.handleLabelForm, bodyCap: maxNoteBody},
		{method: POST, pattern: views.RouteLabel, handle: s.handleLabelForm, bodyCap: maxNoteBody},
		// Attention rules: the read-only rules page, the board, the open
		// firings and a person's acknowledgement.
		{method: GET, pattern: views.RouteRules, handle: s.handleRules},
		{method: GET, pattern: views.RouteBoard, handle: s.handleBoard},
		{method: GET, pattern: views.RouteBoardStream, handle: s.handleBoardStream, head: s.handleStreamHead, raw: true},
		{method: GET, pattern: views.RouteAPIAttention, handle: s.handleAPIAttention},
		{method: POST, pattern: views.RouteAPIAttentionAck, handle: s.handleAttentionAck, bodyCap: maxNoteBody},
		// Approvals: a card's decision form.
		{method: POST, pattern: views.RouteApproval, handle: s.handleDecide, bodyCap: maxDecisionBody},
		// Share links: the owner's form, preview and revoke button, and
		// the readers' pages (every method: what is not a read is the
		// share 404).
		{method: POST, pattern: views.RouteShareCreate, handle: s.handleShareForm, bodyCap: maxShareBody},
		{method: GET, pattern: views.RouteSharePreview, handle: s.handleSharePreview},
		{method: POST, pattern: views.RouteShareRevoke, handle: s.handleShareRevokeForm},
		{method: anyMethod, pattern: views.RouteShare, handle: s.handleShare, public: true},
		// The owner's sign-in (answered only when an owner token is set).
		{method: GET, pattern: views.RouteLogin, handle: s.handleLoginPage, public: true},
		{method: POST, pattern: views.RouteLogin, handle: s.handleLogin, public: true, bodyCap: maxLoginBody},
		{method: POST, pattern: views.RouteLogout, handle: s.handleLogout, public: true},
		// The JSON API.
		{method: GET, pattern: views.RouteAPISessions, handle: s.handleAPIList},
		{method: POST, pattern: views.RouteAPISessions, handle: s.handleAPIStart},
		{method: GET, pattern: views.RouteExport, handle: s.handleAPIEvents},
		{method: POST, pattern: views.RouteAPIImport, handle: s.handleAPIImport, upload: true},
		{method: DELETE, pattern: views.RouteAPISession, handle: s.handleAPIDelete},
		{method: POST, pattern: views.RouteAPIForks, handle: s.handleAPIFork},
		{method: GET, pattern: views.RouteAPISearch, handle: s.handleAPISearch},
		{method: GET, pattern: views.RouteAPICompare, handle: s.handleAPICompare},
		{method: GET, pattern: views.RouteAPIApprovals, handle: s.handleAPIApprovals},
		{method: POST, pattern: views.RouteAPIApproval, handle: s.handleAPIDecide, bodyCap: maxDecisionBody},
		{method: POST, pattern: views.RouteAPIPolicy, handle: s.handleAPIPolicy, bodyCap: maxPolicyBody},
		{method: POST, pattern: views.RouteAPIShares, handle: s.handleAPIShareCreate, bodyCap: maxShareBody},
		{method: GET, pattern: views.RouteAPIShares, handle: s.handleAPIShareList},
		{method: POST, pattern: views.RouteAPISharePreview, handle: s.handleAPISharePreview, bodyCap: maxShareBody},
		{method: DELETE, pattern: views.RouteAPIShare, handle: s.handleAPIShareRevoke},
		// The OTLP/HTTP trace receiver: its own 16 MiB cap (maxOTLPBody) is
		// checked by the handler, compressed and decompressed, so that a
		// refusal answers in OTLP's encoding.
		{method: POST, pattern: views.RouteOTLPTraces, handle: s.handleOTLPTraces, upload: true},
		{method: GET, pattern: views.RouteAPINotes, handle: s.handleAPINotes},
		{method: POST, pattern: views.RouteAPINotes, handle: s.handleAPINoteCreate, bodyCap: maxNoteBody},
		{method: PUT, pattern: views.RouteAPINote, handle: s.handleAPINotePut, bodyCap: maxNoteBody},
		{method: DELETE, pattern: views.RouteAPINote, handle: s.handleAPINoteDelete},
		{method: POST, pattern: views.RouteAPIAnnotations, handle: s.handleAPIAnnotationCreate, bodyCap: maxNoteBody},
		{method: PUT, pattern: views.RouteAPIAnnotation, handle: s.handleAPIAnnotationPut, bodyCap: maxNoteBody},
		{method: DELETE, pattern: views.RouteAPIAnnotation, handle: s.handleAPIAnnotationDelete},
		// Static files and the liveness probe.
		{method: GET, pattern: views.RouteHealth, handle: handleHealth, public: true, raw: true},
		{method: GET, pattern: views.RouteHighlightCSS, handle: s.handleHighlightCSS, public: true},
		{method: GET, pattern: views.RouteStatic, handle: s.handleStatic, public: true},
	}
}

// register adds the table's routes to e.
func register(e *echo.Echo, table []route) {
	for _, r := range table {
		switch r.method {
		case anyMethod:
			e.Any(r.pattern, r.handle)
		case http.MethodGet:
			e.GET(r.pattern, r.handle)
			head := r.head
			if head == nil {
				head = headAsGet(r.handle)
			}
			e.HEAD(r.pattern, head)
		default:
			e.Add(r.method, r.pattern, r.handle)
		}
	}
}

// routeClasses are the table's columns the middleware reads, by pattern
// (echo.Context.Path) or by request path for the public prefixes.
type routeClasses struct {
	publicExact  map[string]bool
	publicPrefix []string
	raw          map[string]bool
	upload       map[string]bool
	bodyCap      map[string]int64
}

func classify(table []route) routeClasses {
	rc := routeClasses{publicExact: map[string]bool{}, raw: map[string]bool{}, upload: map[string]bool{}, bodyCap: map[string]int64{}}
	for _, r := range table {
		if r.public {
			if p, ok := strings.CutSuffix(r.pattern, "*"); ok {
				rc.publicPrefix = append(rc.publicPrefix, p)
			} else {
				rc.publicExact[r.pattern] = true
			}
		}
		rc.raw[r.pattern] = rc.raw[r.pattern] || r.raw
		rc.upload[r.pattern] = rc.upload[r.pattern] || r.upload
		if r.bodyCap > 0 {
			rc.bodyCap[r.pattern] = r.bodyCap
		}
	}
	return rc
}

// public reports whether a request path is served without the owner: a
// public row's pattern, or under a public row's prefix (share links,
// static files).
func (rc routeClasses) public(path string) bool {
	if rc.publicExact[path] {
		return true
	}
	for _, p := range rc.publicPrefix {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// handleHealth handles GET /healthz: liveness.
func handleHealth(c echo.Context) error { return c.String(http.StatusOK, "ok\n") }
