package web

// What of a session's notes a share link shows: the why of crash repair
// and a fork's replayed calls always (they say why a turn stopped and
// that a result was replayed, never from which session), labels only on a link made
// asking for them, redacted as the rest of the link; links to subagents
// only on a link made with its children (which it nests, redacted and
// without their owner's URLs); attention notes and every other kind
// never.

import (
	"context"
	"maps"
	"slices"
	"strings"

	"prism/core"
	"prism/core/logkey"
	"prism/core/notes"
	"prism/core/redact"
	"prism/core/share"
	"prism/views"
)

// shareNotes returns the notes link sh shows, removed ones included (time
// travel shows each between its two seqs), the descendants it nests named
// by aliases (Server.childAliases) and then redacted when sh redacts, and
// without their author.
func (s *Server) shareNotes(ctx context.Context, sh share.Share, aliases map[string]string) []notes.Note {
	if s.deps.Notes == nil {
		return nil
	}
	all, err := s.deps.Notes.Notes(ctx, sh.SessionID, notes.Query{Removed: true})
	if err != nil {
		if core.ErrorCode(err) != core.CodeNotFound {
			s.log.Warn("notes of a share not read", logkey.SessionID, sh.SessionID, logkey.ShareID, sh.ID, logkey.Err, err)
		}
		return nil
	}
	var out []notes.Note
	for _, n := range all {
		switch {
		case n.Kind == notes.KindRepair, n.Kind == notes.KindReplayed:
		case n.Kind == notes.KindLabel && sh.Labels:
		case n.Kind == notes.KindLink && sh.Children:
		default:
			continue
		}
		// Who made a note names a tab or API client (its address too):
		// the owner's business, never a link's.
		n.Author = ""
		if n.Kind == notes.KindReplayed {
			// Which call of which session answered it names the fork's
			// source, which a link never shows: it says only that the
			// call was replayed (views.ReplayedView).
			n.Data = []byte("{}")
		}
		if n.Kind == notes.KindLink {
			n.Data, _ = aliasNoteData(n.Data, aliases)
		} else {
			n.Data, _ = aliasText(n.Data, aliases)
		}
		if sh.Redact && s.deps.Redactor != nil {
			n.Data, _ = s.deps.Redactor.JSON(n.Data)
		}
		out = append(out, n)
	}
	return out
}

// shareReader is what link sh's pages show their reader: read-only, with
// the notes the link shows; a link made with its children nests them
// under their share-local names (sharealias.go), in the link notes too —
// the names of Server.childAliases, as every path of the link has them
// (its family as last read, Server.linkFamily).
func (s *Server) shareReader(ctx context.Context, sh share.Share) views.Reader {
	f, err := s.linkFamily(ctx, sh)
	if err != nil {
		// Without the names no child is nested, and no note that would
		// name one is shown.
		s.log.Warn("share: names of the children not read", logkey.SessionID, sh.SessionID, logkey.ShareID, sh.ID, logkey.Err, err)
		return views.Reader{ReadOnly: true, SharedNotes: true, Highlights: s.highlights}
	}
	rd := views.Reader{ReadOnly: true, Notes: s.shareNotes(ctx, sh, f.aliases), SharedNotes: true, Highlights: s.highlights}
	if sh.Children {
		rd.Children, rd.ScopedChildren = s.shareChildren(sh, f), sh.Scoped()
	}
	return rd
}

// shareChildren returns the logs of the children that link sh nests (the
// session's stored link notes, f.links, name them), by their names on the
// link (f.aliases), each as the link shows it (linkChild): every
// descendant named by its alias, then redacted when sh redacts.
func (s *Server) shareChildren(sh share.Share, f *linkFamily) map[string]*views.ChildLog {
	out := s.sessionChildren(sh.SessionID, f.links)
	named := make(map[string]*views.ChildLog, len(out))
	for id, c := range out {
		name := f.aliases[id]
		if name == "" {
			continue // not named by a link note: not nested
		}
		named[name] = s.linkChild(c, sh.Redact, f.aliases, f.key)
	}
	return named
}

// linkChild is a child's log as links show it, kept beside the cached log
// it comes from: every descendant of the link named by its alias, then
// redacted by the links' redactor when they redact. As that log grows,
// only its new events are named and redacted (redact.Log), and the link's
// copy grows in place.
type linkChild struct {
	log   *redact.Log // nil: not redacted
	out   *views.ChildLog
	n     int      // the events of the cached log taken so far
	names aliasRun // names its streamed text across extensions
}

// linkChildKey is what a child's log as a link shows it depends on.
type linkChildKey struct {
	c       *views.ChildLog
	redact  bool
	aliases string // the link's names of children, in a canonical form
}

// linkChild returns child log c as a link shows it (aliasesKey is
// aliasKey(aliases), which the link's family keeps), kept while c is the
// cached log: a live child's log grows in place (views.ChildLog.Extend),
// and each of its new events is named and redacted once, for every link
// and viewer alike — the redacted log equals the whole log's redaction
// (redact.Log) — and the link's copy grows in place too, unless a stream
// that was open at its end was redacted again (then it is made anew, its
// fold with it). Names come first: a redaction rule that matches an id
// must not keep the name from replacing it (sharealias.go).
func (s *Server) linkChild(c *views.ChildLog, redacted bool, aliases map[string]string, aliasesKey string) *views.ChildLog {
	if redacted && s.deps.Redactor == nil {
		redacted = false
	}
	events := c.Log()
	key := linkChildKey{c: c, redact: redacted, aliases: aliasesKey}
	s.linkChildren.mu.Lock()
	defer s.linkChildren.mu.Unlock()
	r := s.linkChildren.m[key]
	if r != nil && r.n == len(events) {
		return r.out
	}
	if r == nil || r.n > len(events) {
		r = &linkChild{}
		h, all := c.Header, r.names.events(events, aliases)
		if name := aliases[h.ID]; name != "" {
			h.ID = name
		}
		if redacted {
			r.log = s.deps.Redactor.Log(h)
			h = r.log.Header()
			all, _ = r.log.Extend(all)
		}
		r.out = &views.ChildLog{Header: h, Events: all}
	} else {
		more, rewritten := r.names.events(events[r.n:], aliases), false
		if redacted {
			old := r.log.Len()
			all, from := r.log.Extend(more)
			more, rewritten = all[from:], from != old
			if rewritten {
				more = all
			}
		}
		if rewritten || !r.out.Extend(more) {
			all := more
			if !rewritten {
				all = r.allEvents(events, aliases)
			}
			r.out = &views.ChildLog{Header: r.out.Header, Events: all}
		}
	}
	r.n = len(events)
	if s.linkChildren.m == nil || len(s.linkChildren.m) >= maxCachedChildren {
		s.linkChildren.m = map[linkChildKey]*linkChild{}
	}
	s.linkChildren.m[key] = r
	return r.out
}

// allEvents is the whole of the child's log as the link shows it: the
// redacted log (named as it was extended), or events named by aliases.
func (r *linkChild) allEvents(events []core.Event, aliases map[string]string) []core.Event {
	if r.log == nil {
		return aliasEvents(events, aliases)
	}
	all, _ := r.log.Extend(nil)
	return all
}

// aliasKey is a canonical form of aliases: its ids and pieces with their
// names, in the order of the ids.
func aliasKey(aliases map[string]string) string {
	if len(aliases) == 0 {
		return ""
	}
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(aliases)) {
		b.WriteString(id)
		b.WriteByte(0)
		b.WriteString(aliases[id])
		b.WriteByte(0)
	}
	return b.String()
}

// shareHeader is header h as a share link shows it: without the session
// it came from. A child's link never reveals its parent (its origin still
// says it is a subagent); a fork's never names its source, nor how much of
// the source it inherited — its inherited events are its own on the link.
func shareHeader(h core.SessionHeader) core.SessionHeader {
	if h.ParentSession != "" {
		h.ParentSession, h.SeedLength = "", nil
	}
	return h
}
