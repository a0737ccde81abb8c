package views

import (
	"net/url"
	"strconv"
)

// The URLs of prism's pages and endpoints. Every template and handler
// builds its links, form actions, stream URLs and redirects with these
// functions; package web registers its routes with the matching patterns
// (Route* below), and its tests check that each builder's URL reaches the
// route it names. Path segments are escaped with url.PathEscape.

// Route patterns, in Echo's syntax, one per builder.
const (
	RouteHome          = "/"
	RouteListStream    = "/stream"
	RouteSession       = "/sessions/:id"
	RouteSessionStream = "/sessions/:id/stream"
	RouteEarlier       = "/sessions/:id/earlier"
	RouteCall          = "/sessions/:id/calls/:callId"
	RouteStart         = "/sessions"
	RouteMessages      = "/sessions/:id/messages"
	RouteCancel        = "/sessions/:id/cancel"
	RouteDelete        = "/sessions/:id/delete"
	RouteAPISession    = "/api/sessions/:id"
	RouteExport        = "/api/sessions/:id/events"
	RouteStatic        = "/static/*"
	// Approvals: a card's decision form, and the JSON API.
	RouteApproval     = "/sessions/:id/approvals/:approvalId"
	RouteAPIApprovals = "/api/approvals"
	RouteAPIApproval  = "/api/sessions/:id/approvals/:approvalId"
	RouteAPIPolicy    = "/api/sessions/:id/approval-policy"
)

// HomeURL is the session list, filtered by query when it is not empty.
func HomeURL(query string) string { return withQuery(RouteHome, "q", query) }

// ListStreamURL is the session list's SSE stream for a query.
func ListStreamURL(query string) string { return withQuery(RouteListStream, "q", query) }

// SessionURL is a session's inspector page.
func SessionURL(id string) string { return "/sessions/" + url.PathEscape(id) }

// SessionStreamURL is the inspector's SSE stream, resuming after seq.
func SessionStreamURL(id string, after int64) string {
	return SessionURL(id) + "/stream?after=" + strconv.FormatInt(after, 10)
}

// EarlierURL loads the transcript segments before seq before.
func EarlierURL(id string, before int64) string {
	return SessionURL(id) + "/earlier?before=" + strconv.FormatInt(before, 10)
}

// CallURL is the projections page of one call; card picks one card when a
// call id has several ("" for the first).
func CallURL(sessionID, callID, card string) string {
	return withQuery(SessionURL(sessionID)+"/calls/"+url.PathEscape(callID), "card", card)
}

// DeleteURL is where a session page's delete form posts.
func DeleteURL(id string) string { return SessionURL(id) + "/delete" }

// APISessionURL is a session in the JSON API (DELETE deletes it).
func APISessionURL(id string) string { return "/api/sessions/" + url.PathEscape(id) }

// CardURL is a card's place on its session page.
func CardURL(sessionID, elemID string) string { return SessionURL(sessionID) + "#" + elemID }

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
