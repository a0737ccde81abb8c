package web

// A link made with its children nests them without revealing their
// session ids: each child is named on the link by a share-local name,
// child-1, child-2, … by order of first appearance among the session's
// link notes (removed ones too, so a name never moves), everywhere the
// link shows it — the link notes, the nested child's header, and every
// event of the session and of its nested children that names it (the
// subagent tool's meta and background text, a foreign agent's records) —
// inside JSON string values only, never a key, a number or a literal
// (aliasText).

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"

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

// aliasText replaces in JSON document b each whole occurrence of a
// distinctive child id of aliases (distinctive) inside a string value —
// never in an object's key, a number or a literal — by its name, in a
// copy; changed is false, and b returned, when b names no child. Whole:
// in the decoded text, not inside a longer run of id characters (letters,
// digits, '-', '_'), so an id after an escape ("\n", "\u003c") is found
// and "text", a key or a number are never touched. A changed string is
// encoded again; the rest of b keeps its bytes. b that is not JSON is
// treated as one string.
func aliasText(b []byte, aliases map[string]string) (out []byte, changed bool) {
	return aliasJSON(b, aliases, false)
}

// aliasNoteData is aliasText for a note's data, where a string value that
// is exactly a child id (the link note's "child") is replaced whatever the
// id looks like.
func aliasNoteData(b []byte, aliases map[string]string) (out []byte, changed bool) {
	return aliasJSON(b, aliases, true)
}

func aliasJSON(b []byte, aliases map[string]string, exact bool) ([]byte, bool) {
	if len(aliases) == 0 || !mayName(b, aliases, true) { // a child's field may name any id
		return b, false
	}
	if !json.Valid(b) {
		s, ok := aliasString(string(b), aliases, exact)
		if !ok {
			return b, false
		}
		return []byte(s), true
	}
	var out []byte
	last, key, keyEnd := 0, "", -1
	for i := 0; i < len(b); {
		if b[i] != '"' {
			i++
			continue
		}
		start, end := i, stringEnd(b, i)
		i = end
		if isKey(b, end) {
			key, keyEnd = "", end
			if end-start <= 32 {
				_ = json.Unmarshal(b[start:end], &key)
			}
			continue
		}
		// A value that names its child by a field of that name ("child":
		// the subagent tool's meta) is replaced whatever the id looks like.
		whole := exact || (valueOf(b, keyEnd, start) && childKey(key))
		if !mayName(b[start:end], aliases, whole) {
			continue
		}
		var v string
		if err := json.Unmarshal(b[start:end], &v); err != nil {
			continue
		}
		nv, ok := aliasString(v, aliases, whole)
		if !ok {
			continue
		}
		out = append(out, b[last:start]...)
		out = appendJSONString(out, nv)
		last = end
	}
	if out == nil {
		return b, false
	}
	return append(out, b[last:]...), true
}

// mayName reports whether b may hold a child id of aliases: an id whose
// JSON form is itself (no byte JSON escapes) must appear in b's bytes.
func mayName(b []byte, aliases map[string]string, exact bool) bool {
	for id := range aliases {
		if !exact && !distinctive(id) {
			continue
		}
		if !plainInJSON(id) || bytes.Contains(b, []byte(id)) {
			return true
		}
	}
	return false
}

// aliasString replaces in s each whole occurrence of a distinctive id of
// aliases by its name, and (exact) s itself when it is an id.
func aliasString(s string, aliases map[string]string, exact bool) (string, bool) {
	if name, ok := aliases[s]; ok && (exact || distinctive(s)) {
		return name, true
	}
	changed := false
	for id, name := range aliases {
		if !distinctive(id) || !strings.Contains(s, id) {
			continue
		}
		var sb strings.Builder
		rest, from := s, 0
		named := false
		for {
			i := strings.Index(rest[from:], id)
			if i < 0 {
				break
			}
			at := from + i
			end := at + len(id)
			if (at > 0 && idChar(rest[at-1])) || (end < len(rest) && idChar(rest[end])) {
				from = at + 1
				continue
			}
			sb.WriteString(rest[:at])
			sb.WriteString(name)
			rest, from, named = rest[end:], 0, true
		}
		if named {
			sb.WriteString(rest)
			s, changed = sb.String(), true
		}
	}
	return s, changed
}

// distinctive reports an id that cannot be an ordinary word of a tool's
// output or a JSON field's value (prism's, Codex's and Claude Code's ids
// all are): 8 bytes or more, not letters alone. An id that is a plain
// word ("text", "summary") is left alone in text: replacing it would
// corrupt what the link shows, and such an id tells nothing.
func distinctive(id string) bool {
	if len(id) < 8 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return true
		}
	}
	return false
}

// plainInJSON reports an id that JSON (as encoding/json writes it) keeps
// byte for byte inside a string.
func plainInJSON(id string) bool {
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// childKey reports a field whose string value, when it is a child's id
// exactly, is replaced even if the id is not distinctive.
func childKey(k string) bool {
	switch k {
	case "child", "childSession", "sessionId", "session_id":
		return true
	}
	return false
}

// valueOf reports whether the string at b[start] is the value of the key
// that ended at b[keyEnd]: only white space and one ':' lie between.
func valueOf(b []byte, keyEnd, start int) bool {
	if keyEnd < 0 || keyEnd > start {
		return false
	}
	colon := false
	for _, c := range b[keyEnd:start] {
		switch c {
		case ' ', '\t', '\n', '\r':
		case ':':
			if colon {
				return false
			}
			colon = true
		default:
			return false
		}
	}
	return colon
}

// stringEnd returns the index just past the JSON string starting at
// b[i] (a '"'), or len(b) when it does not end.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// isKey reports whether the string ending at b[end] is an object's key:
// the next byte that is not white space is ':'.
func isKey(b []byte, end int) bool {
	for ; end < len(b); end++ {
		switch b[end] {
		case ' ', '\t', '\n', '\r':
			continue
		case ':':
			return true
		}
		return false
	}
	return false
}

// appendJSONString appends s as a JSON string, as encoding/json writes it
// but without escaping '<', '>' and '&' (the pages escape what they show).
func appendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// idChar reports a byte that may continue a session id.
func idChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
