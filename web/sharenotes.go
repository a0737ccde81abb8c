package web

// What of a session's notes a share link shows: the why of crash repair
// and a fork's replayed calls always (they say why a turn stopped and
// where a result came from, nothing more), labels only on a link made
// asking for them, redacted as the rest of the link; attention notes and
// every other kind never.

import (
	"context"

	"prism/core"
	"prism/core/logkey"
	"prism/core/notes"
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
	return views.Reader{ReadOnly: true, Notes: s.shareNotes(ctx, sh), SharedNotes: true}
}
