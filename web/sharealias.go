package web

// A link made with its children nests them without revealing their
// session ids: each child is named on the link by a share-local name,
// child-1, child-2, … by order of first appearance among the session's
// link notes (removed ones too, so a name never moves), everywhere the
// link shows it — the link notes, the nested child's header, and every
// event of the session and of its nested children that names it (the
// subagent tool's meta and background text, a foreign agent's records).

import (
	"bytes"
	"context"
	"strconv"

	"prism/core"
	"prism/core/notes"
	"prism/core/share"
)

// childAliases maps the ids of the children link sh nests to the names the
// link shows instead (aliasesOf its link notes); nil for a link made
// without its children.
func (s *Server) childAliases(ctx context.Context, sh share.Share) (map[string]string, error) {
	if !sh.Children || s.deps.Notes == nil {
		return nil, nil
	}
	ns, err := s.deps.Notes.Notes(ctx, sh.SessionID, notes.Query{Kind: notes.KindLink, Removed: true})
	if err != nil && core.ErrorCode(err) != core.CodeNotFound {
		return nil, err
	}
	return aliasesOf(ns), nil
}

// aliasesOf names the children of the link notes among ns: child-1,
// child-2, … in the order ns has them (the order they were made).
func aliasesOf(ns []notes.Note) map[string]string {
	out := map[string]string{}
	for _, n := range ns {
		if n.Kind != notes.KindLink {
			continue
		}
		d, err := notes.ParseLink(n.Data)
		if err != nil || d.Child == "" || out[d.Child] != "" {
			continue
		}
		out[d.Child] = "child-" + strconv.Itoa(len(out)+1)
	}
	return out
}

// aliasEvents returns events with every child id of aliases replaced by
// its name (aliasText); an event that names none is kept as it is, and
// events itself is never written.
func aliasEvents(events []core.Event, aliases map[string]string) []core.Event {
	if len(aliases) == 0 {
		return events
	}
	var out []core.Event
	for i := range events {
		data, changed := aliasText(events[i].Data, aliases)
		if !changed {
			continue
		}
		if out == nil {
			out = append(make([]core.Event, 0, len(events)), events...)
		}
		out[i].Data = data
	}
	if out == nil {
		return events
	}
	return out
}

// aliasText replaces in b each whole occurrence of a child id of aliases
// (not inside a longer run of id characters: letters, digits, '-', '_')
// by its name, in a copy; changed is false, and b returned, when b
// names no child. The names are plain ASCII, so JSON stays JSON.
func aliasText(b []byte, aliases map[string]string) (out []byte, changed bool) {
	out = b
	for id, name := range aliases {
		if !bytes.Contains(out, []byte(id)) {
			continue
		}
		var nb []byte
		rest, from := out, 0
		for {
			i := bytes.Index(rest[from:], []byte(id))
			if i < 0 {
				break
			}
			at := from + i
			end := at + len(id)
			if (at > 0 && idChar(rest[at-1])) || (end < len(rest) && idChar(rest[end])) {
				from = at + 1
				continue
			}
			nb = append(nb, rest[:at]...)
			nb = append(nb, name...)
			rest, from = rest[end:], 0
		}
		if nb != nil {
			out, changed = append(nb, rest...), true
		}
	}
	return out, changed
}

// idChar reports a byte that may continue a session id.
func idChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
