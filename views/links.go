package views

import (
	"net/url"
	"strconv"
)

// Links are the URLs of one session's pages as a reader reaches them: the
// owner's inspector (/sessions/{id}/…) or a share link (/s/{token}/…),
// whose pages have the same shape under another base. Components that link
// within a session (cards, the earlier loader, the stream, the projections
// page, exports) take them from their render context, so one template
// serves both readers.
type Links struct {
	base    string
	token   string // set for a share link
	export  string
	offline bool // a file read away from any server: no links at all
	scoped  bool // a share link scoped up to an event: a snapshot
}

// Per-call downloads: the file names under a call's URL.
const (
	CallContentFile   = "content.txt"
	CallArgumentsFile = "arguments.txt"
	CallMetaFile      = "meta.json"
)

// SessionLinks are the owner's URLs of session id.
func SessionLinks(id string) Links {
	return Links{base: SessionURL(id), export: ExportURL(id)}
}

// ShareURL is a share link's replay page.
func ShareURL(token string) string { return ShareLinks(token).Page() }

// ShareLinks are the URLs of a share link's pages.
func ShareLinks(token string) Links {
	base := ShareRoutePrefix + url.PathEscape(token)
	return Links{base: base, token: token, export: base + "/events"}
}

// OfflineLinks are the links of a page saved as a file (export.html):
// none, so that the file makes no request to any server.
func OfflineLinks() Links { return Links{base: "#", offline: true} }

// Offline reports whether these are a saved file's (empty) links.
func (l Links) Offline() bool { return l.offline }

// ScopedShare returns l for a share link scoped up to an event: its pages
// say they show a snapshot (SessionHeadView.Snapshot).
func (l Links) ScopedShare() Links {
	l.scoped = true
	return l
}

// Shared reports whether these are a share link's URLs.
func (l Links) Shared() bool { return l.token != "" }

// Page is the session page (the replay page of a share link).
func (l Links) Page() string { return l.base }

// Stream is the page's SSE stream, resuming after seq.
func (l Links) Stream(after int64) string {
	return l.base + "/stream?after=" + strconv.FormatInt(after, 10)
}

// Earlier loads the transcript segments before seq before.
func (l Links) Earlier(before int64) string {
	return l.base + "/earlier?before=" + strconv.FormatInt(before, 10)
}

// Call is the projections page of one call ("" card: its first card).
func (l Links) Call(callID, card string) string {
	if l.offline {
		return ""
	}
	return withQuery(l.base+"/calls/"+url.PathEscape(callID), "card", card)
}

// Content is one call's model-facing content as text.
func (l Links) Content(callID, card string) string { return l.callFile(callID, card, CallContentFile) }

// Arguments is one call's raw argument bytes, as the model sent them.
func (l Links) Arguments(callID, card string) string {
	return l.callFile(callID, card, CallArgumentsFile)
}

// Meta is one call's presentation meta as JSON.
func (l Links) Meta(callID, card string) string { return l.callFile(callID, card, CallMetaFile) }

// Downloads are the per-call downloads of a card ("" card: the call's first
// card); nil for a saved file, which links nowhere.
func (l Links) Downloads(callID, card string) *Downloads {
	if l.offline {
		return nil
	}
	return &Downloads{Content: l.Content(callID, card), Arguments: l.Arguments(callID, card), Meta: l.Meta(callID, card)}
}

func (l Links) callFile(callID, card, file string) string {
	return withQuery(l.base+"/calls/"+url.PathEscape(callID)+"/"+file, "card", card)
}

// Downloads are the URLs of one call's full parts: its model-facing
// content, its raw arguments and its presentation meta. A card links them
// where it shows only part of the output.
type Downloads struct {
	Content, Arguments, Meta string
}

// Card is a card's place on the session page.
func (l Links) Card(elemID string) string { return l.base + "#" + elemID }

// Events is the session's log as JSONL.
func (l Links) Events() string {
	if l.offline {
		return ""
	}
	return l.export
}

// ExportHTML is the session as one self-contained HTML file.
func (l Links) ExportHTML() string {
	if l.offline {
		return ""
	}
	return l.base + "/export.html"
}

// links returns r's links, the owner's when none were set.
func (r R) links() Links {
	if r.Links.base == "" {
		return SessionLinks(r.SessionID)
	}
	return r.Links
}

// At is the session page at place p: a replay at an event, a jump to a
// call or an event (Place).
func (l Links) At(p Place) string { return l.base + p.Query() }

// CardPlace is card c's place on the session page: the window around it,
// with the card marked and its fragment to scroll to.
func (l Links) CardPlace(t *Timeline, c *Card) string {
	card := ""
	if cs := t.CardsByCallID(c.CallID); len(cs) > 0 && cs[0] != c {
		card = c.ID
	}
	return l.At(Place{At: -1, Call: c.CallID, Card: card, Event: -1}) + "#" + c.ID
}

// Later loads the transcript segments after seq after that were opened up
// to seq until (the rest is the page's stream's).
func (l Links) Later(after, until int64) string {
	return l.base + "/later?after=" + strconv.FormatInt(after, 10) + "&until=" + strconv.FormatInt(until, 10)
}

// SeekBase is where a replay's moves are requested (with a Place's query,
// or ?step=).
func (l Links) SeekBase() string { return l.base + "/seek" }

// StreamBase is the page's stream without its query (a playback adds
// after and speed).
func (l Links) StreamBase() string { return l.base + "/stream" }
