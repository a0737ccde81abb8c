package views

import "net/url"

// The routes and URLs of forks (kept beside urls.go's; the same rules).
const (
	// RouteForks is a session's fork form (POST: fork it and go to the
	// fork) and the tree of its forks (GET).
	RouteForks = "/sessions/:id/forks"
	// RouteAPIForks forks a session: POST {id?, atTurn | atSeq, prompt?,
	// model?, system?, tools?} → the new session.
	RouteAPIForks = "/api/sessions/:id/forks"
)

// ForksURL is where a session is forked from its page (POST) and where the
// tree of its forks is (GET).
func ForksURL(id string) string { return SessionURL(id) + "/forks" }

// APIForksURL is the JSON API's fork of a session.
func APIForksURL(id string) string { return "/api/sessions/" + url.PathEscape(id) + "/forks" }
