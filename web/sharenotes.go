package web

// What of a session's notes a share link shows: the why of crash repair
// and a fork's replayed calls always (they say why a turn stopped and
// where a result came from, nothing more), labels only on a link made
// asking for them, redacted as the rest of the link; links to subagents
// only on a link made with its children (which it nests, redacted and
// without their owner's URLs); attention notes and every other kind
// never.

import (
	"context"

	"prism/core"
	"prism/core/logkey"
	"prism/core/notes"
	"prism/core/redact"
	"prism/core/share"
	"prism/views"
)

// shareNotes returns the notes link sh shows, removed ones included (time
// travel shows each between its two seqs), redacted when sh redacts, and
// without their author.
func (s *Server) shareNotes(ctx context.Context, sh share.Share) []notes.Note {
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
		if sh.Redact && s.deps.Redactor != nil {
			n.Data, _ = s.deps.Redactor.JSON(n.Data)
		}
		out = append(out, n)
	}
	return out
}

// shareReader is what link sh's pages show their reader: read-only, with
// the notes the link shows.
func (s *Server) shareReader(ctx context.Context, sh share.Share) views.Reader {
	rd := views.Reader{ReadOnly: true, Notes: s.shareNotes(ctx, sh), SharedNotes: true}
	if sh.Children {
		rd.Children, rd.ScopedChildren = s.shareChildren(sh, rd.Notes), sh.Scoped()
	}
	return rd
}

// shareChildren returns the logs of the children that link sh nests (the
// link notes it shows name them), redacted when sh redacts: each child's
// log redacted once per last seq (sharedChildren), the cache of
// sessionChildren's logs beside it.
func (s *Server) shareChildren(sh share.Share, ns []notes.Note) map[string]*views.ChildLog {
	out := s.sessionChildren(sh.SessionID, ns)
	if !sh.Redact {
		return out
	}
	for id, c := range out {
		out[id] = s.redactedChild(c)
	}
	return out
}

// redactedChild is a child's log as the links' redactor shows it, kept
// beside the cached log it redacts: as that log grows, only its new events
// are redacted (redact.Log) and the redacted log grows in place.
type redactedChild struct {
	log *redact.Log
	out *views.ChildLog
	n   int // the events of the cached log redacted so far
}

// redactedChild returns child log c redacted by the links' redactor, kept
// while c is the cached log: a live child's log grows in place
// (views.ChildLog.Extend), and each of its new events is redacted once,
// for every link and viewer — the redacted log equals the whole log's
// redaction (redact.Log), and grows in place too unless a stream that was
// open at its end was redacted again (then it is made anew from the
// redacted events, its fold with it).
func (s *Server) redactedChild(c *views.ChildLog) *views.ChildLog {
	events := c.Log()
	s.redactedChildren.mu.Lock()
	defer s.redactedChildren.mu.Unlock()
	r := s.redactedChildren.m[c]
	switch {
	case r != nil && r.n == len(events):
		return r.out
	case r == nil || r.n > len(events):
		r = &redactedChild{log: s.deps.Redactor.Log(c.Header)}
		all, _ := r.log.Extend(events)
		r.out, r.n = &views.ChildLog{Header: r.log.Header(), Events: all}, len(events)
	default:
		old := r.log.Len()
		all, from := r.log.Extend(events[r.n:])
		if from == old && r.out.Extend(all[from:]) {
			break
		}
		r.out = &views.ChildLog{Header: r.log.Header(), Events: all}
	}
	r.n = len(events)
	if s.redactedChildren.m == nil || len(s.redactedChildren.m) >= maxCachedChildren {
		s.redactedChildren.m = map[*views.ChildLog]*redactedChild{}
	}
	s.redactedChildren.m[c] = r
	return r.out
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
