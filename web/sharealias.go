package web

// A link made with its children nests them without revealing their
// session ids: each descendant the link includes — its children, their
// own children, and so on — is named on the link by a share-local name,
// child-1, child-2, … (familyNames: the session's children by order of
// first appearance among its link notes, removed ones too, then their
// children breadth first, each session's by its own link notes' order),
// everywhere the link shows it — the link notes, the nested child's
// header, and every event of the session and of its nested children that
// names it (the subagent tool's meta and background text, a foreign
// agent's records) — inside JSON string values, and a key only when the
// whole key is a child's id (Codex's collab statuses map is keyed by
// thread id), never a number or a literal (aliasText). Text streamed in
// assistant/chunk events is named over its run, an id split across
// chunks too (aliasRun). A child whose id is its parent's id and a piece
// of its own — only Claude Code's <session>-agent-<agentId> (idPieces) —
// has the agentId named too (the parent's result and meta show it):
// otherwise the parent's id, which the link shows, and the piece would
// rebuild the child's id. A spawn field or prism's "Started subagent
// <id>" that names a child with no name yet (its link note not stored)
// shows child-? until the note comes (spawnKey). Every path of a link —
// its page and reader, its stream's hub, its downloads — names them by
// one function over the stored (never redacted) link notes
// (Server.childAliases), and names before it redacts, so a redaction rule
// that matches an id cannot make two paths name a child differently.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"prism/core"
	"prism/core/notes"
	"prism/core/share"
)

// childAliases maps the ids of the descendants that link sh nests — and
// the pieces of those ids their parents show (idPieces) — to the names
// the link shows instead (familyNames over the stored link notes, never
// redacted ones); ids are those descendants, sorted; links are the
// session's own link notes it read (the children the link nests). All are
// nil for a link made without its children.
func (s *Server) childAliases(ctx context.Context, sh share.Share) (aliases map[string]string, ids []string, links []notes.Note, err error) {
	if !sh.Children || s.deps.Notes == nil {
		return nil, nil, nil, nil
	}
	linksOf := func(id string) ([]notes.Note, error) {
		ns, err := s.deps.Notes.Notes(ctx, id, notes.Query{Kind: notes.KindLink, Removed: true})
		if err != nil && core.ErrorCode(err) != core.CodeNotFound {
			return nil, fmt.Errorf("link notes of %s: %w", id, err)
		}
		if id == sh.SessionID {
			links = ns
		}
		return ns, nil
	}
	aliases, ids, err = familyNames(sh.SessionID, linksOf)
	if err != nil {
		return nil, nil, nil, err
	}
	return aliases, ids, links, nil
}

// maxFamily bounds the descendants a link names (familyNames): a family
// beyond it is not read further (its later members keep their ids on the
// link only where their parents' logs name them).
const maxFamily = 4096

// familyNames names the descendants of session root: child-1, child-2, …
// for root's children in the order of its link notes (linksOf), then
// breadth first each named child's own children in the order of its link
// notes — one numbering, whatever path of the link asks. Each name also
// stands for the pieces of its id its parent's log shows (idPieces). A
// session met again (a cycle, a child linked twice) keeps its first name.
// members are the descendants' ids, sorted.
func familyNames(root string, linksOf func(id string) ([]notes.Note, error)) (names map[string]string, members []string, err error) {
	out := map[string]string{}
	ids := 0
	type member struct{ id, parent string }
	queue := []member{{id: root}}
	seen := map[string]bool{root: true}
	var pieces []member
	for len(queue) > 0 && ids < maxFamily {
		m := queue[0]
		queue = queue[1:]
		ns, err := linksOf(m.id)
		if err != nil {
			return nil, nil, err
		}
		for _, n := range ns {
			if n.Kind != notes.KindLink {
				continue
			}
			d, err := notes.ParseLink(n.Data)
			if err != nil || d.Child == "" || seen[d.Child] || ids >= maxFamily {
				continue
			}
			seen[d.Child] = true
			members = append(members, d.Child)
			ids++
			out[d.Child] = "child-" + strconv.Itoa(ids)
			queue = append(queue, member{id: d.Child, parent: m.id})
			pieces = append(pieces, member{id: d.Child, parent: m.id})
		}
	}
	// Pieces after every id: an id is always named by its own name.
	for _, m := range pieces {
		for _, p := range idPieces(m.parent, m.id) {
			if _, taken := out[p]; !taken && !seen[p] {
				out[p] = out[m.id]
			}
		}
	}
	slices.Sort(members)
	return out, members, nil
}

// agentInfix joins a Claude Code child's id to its parent's:
// <parent>-agent-<agentId>.
const agentInfix = "-agent-"

// idPieces returns what a parent's log may show of child id beyond the
// parent's own id when id has Claude Code's shape <parent>-agent-<agentId>
// (the agentId may hold '-'): "agent-<agentId>" and "<agentId>" — the
// agentId of the parent's Task/Agent result and meta. None for any other
// id (a prism or Codex child: its whole id is what a parent shows; an id
// that merely extends its parent's, <parent>-step-000001, whose last part
// is an ordinary word or number).
func idPieces(parent, id string) []string {
	if parent == "" || len(id) <= len(parent)+len(agentInfix) || !strings.HasPrefix(id, parent+agentInfix) {
		return nil
	}
	agentID := id[len(parent)+len(agentInfix):]
	return []string{agentInfix[1:] + agentID, agentID}
}

// agentPiece reports whether id of aliases is a Claude Code agentId
// (idPieces): "agent-<id>" is named as it is.
func agentPiece(id string, aliases map[string]string) bool {
	name, ok := aliases[id]
	if !ok {
		return false
	}
	var buf [64]byte
	k := append(append(buf[:0], agentInfix[1:]...), id...)
	return aliases[string(k)] == name
}

// inText reports whether id of aliases is named wherever a string shows it
// whole: a distinctive id, or an agentId (agentPiece) of 6 bytes or more
// that is not all digits — letters alone too, as it is known to be an
// agentId. An all-digit or shorter agentId is named only as a child
// field's value and on the line of Claude Code's hint that says it is one
// (agentIDHint): anywhere else it is more likely a number or a word.
func inText(id string, aliases map[string]string) bool {
	if agentPiece(id, aliases) {
		return len(id) >= 6 && strings.Trim(id, "0123456789") != ""
	}
	return distinctive(id)
}

// aliasEvents returns events with every child id of aliases replaced by
// its name (aliasText), the text streamed in each run of assistant/chunk
// events named over the run (aliasRun); an event that names none is kept
// as it is, and events itself is never written. A run at the end of
// events is taken as still open.
func aliasEvents(events []core.Event, aliases map[string]string) []core.Event {
	var r aliasRun
	return r.events(events, aliases)
}

// aliasRun names a log's events batch by batch (a link's live hub, a
// nested child's growing log), keeping the streamed text of the run of
// assistant/chunk events open at the end of the last batch: a child's id
// split across chunks — the model repeating an id it saw — is named. Each
// stream of a run (text, reasoning or a tool call's arguments of one
// block index) is named as one
// text and cut back into its chunks: a chunk gives out its text up to
// where an id may be starting that the text so far does not finish (held
// back: the start of a child's id at a word's start), a name where its id
// starts; the held text goes out with the next chunk of the stream, or
// with the run's last chunk when the run ends in the same batch (a run
// whose message comes in a later batch keeps it: the message has the
// text). So the chunks of a run named in one batch give the run's named
// text, and no chunk ever shows an id or a piece of one that the text may
// finish as one. The zero value is ready; not safe for concurrent use.
type aliasRun struct {
	open map[chunkKey]*chunkStream // the open run's streams
}

// chunkKey is one stream of a run of chunks: its type and block index.
type chunkKey struct {
	typ string
	idx int
}

// chunkStream is one stream of an open run: its text so far, and how
// much of it the chunks gave out.
type chunkStream struct {
	buf  []byte // the text so far, but for what lies well before done
	done int    // the bytes of buf given out
}

// keptBack is how much of a stream's text given out a chunkStream keeps:
// the window namedSpan looks back on (512 bytes), and more.
const keptBack = 1024

// chunkData is what aliasRun reads of an assistant/chunk.
type chunkData struct {
	Chunk struct {
		Type           string  `json:"type"`
		Index          *int    `json:"index"`
		Text           *string `json:"text"`
		ArgumentsDelta *string `json:"argumentsDelta"`
	} `json:"chunk"`
}

// streamed returns the member of chunk c that streams text — a text or
// reasoning delta's text, a tool call's arguments delta — and its key.
func (c *chunkData) streamed() (text *string, key string) {
	switch c.Chunk.Type {
	case core.ChunkTextDelta, core.ChunkReasoningDelta:
		return c.Chunk.Text, "text"
	case core.ChunkToolCallDelta:
		return c.Chunk.ArgumentsDelta, "argumentsDelta"
	}
	return nil, ""
}

// events returns events, which continue the batches r has named, named
// by aliases (aliasEvents); nil aliases (a link without its children)
// leaves them as they are.
func (r *aliasRun) events(events []core.Event, aliases map[string]string) []core.Event {
	if aliases == nil {
		return events
	}
	var out []core.Event
	set := func(i int, data []byte, changed bool) {
		if !changed {
			return
		}
		if out == nil {
			out = append(make([]core.Event, 0, len(events)), events...)
		}
		out[i].Data = data
	}
	for i := 0; i < len(events); i++ {
		if events[i].Type != core.EventAssistantChunk {
			r.open = nil
			data, changed := aliasText(events[i].Data, aliases)
			set(i, data, changed)
			continue
		}
		j := i
		for j < len(events) && events[j].Type == core.EventAssistantChunk {
			j++
		}
		// Each stream's last chunk in a run that ends in this batch gives
		// out all its text.
		cs := make([]chunkData, j-i)
		streamed := make([]bool, j-i)
		last := map[chunkKey]int{}
		for n := range cs {
			c := &cs[n]
			if len(aliases) > 0 && containsString(events[i+n].Data, `-delta"`) && // a block's start, usage, a finish stream no text
				json.Unmarshal(events[i+n].Data, c) == nil {
				if text, _ := c.streamed(); text != nil {
					streamed[n] = true
					last[c.key()] = n
				}
			}
		}
		for n := range cs {
			var data []byte
			changed := false
			if streamed[n] {
				data, changed = r.chunk(events[i+n].Data, &cs[n], aliases, j < len(events) && last[cs[n].key()] == n)
			} else {
				data, changed = aliasText(events[i+n].Data, aliases)
			}
			set(i+n, data, changed)
		}
		i = j - 1
	}
	if out == nil {
		return events
	}
	return out
}

// key is the stream of the run chunk c belongs to.
func (c *chunkData) key() chunkKey {
	k := chunkKey{typ: c.Chunk.Type}
	if c.Chunk.Index != nil {
		k.idx = *c.Chunk.Index
	}
	return k
}

// chunk names data b of one assistant/chunk of the open run, c as read of
// it; final: its stream's last chunk in the run, the run's end known.
func (r *aliasRun) chunk(b []byte, c *chunkData, aliases map[string]string, final bool) ([]byte, bool) {
	k := c.key()
	if r.open == nil {
		r.open = map[chunkKey]*chunkStream{}
	}
	st := r.open[k]
	if st == nil {
		st = &chunkStream{}
		r.open[k] = st
	}
	given, member := c.streamed()
	st.buf = append(st.buf, *given...)
	upTo := len(st.buf)
	if !final {
		upTo = heldFrom(st.buf, st.done, aliases)
	}
	lo := max(bytes.LastIndexByte(st.buf[:st.done], '\n')+1, st.done-512)
	text := namedSpan(string(st.buf[lo:upTo]), st.done-lo, upTo-lo, aliases)
	st.done = upTo
	if st.done > 4*keptBack { // a long stream keeps only the text it may still look at
		cut := st.done - keptBack
		st.buf = append(st.buf[:0], st.buf[cut:]...)
		st.done -= cut
	}
	if text == *given {
		// The chunk's other strings may still name a child; its text,
		// named over the run, names none on its own.
		if _, changed := aliasText(b, aliases); !changed {
			return b, false
		}
	}
	return aliasDoc(b, aliases, false, &streamedText{key: member, text: text}, 0)
}

// streamedText is the named text a chunk streams (aliasRun), for the
// member named key.
type streamedText struct{ key, text string }

// heldFrom returns where the text s stops that a chunk may give out, from
// done on: the first place at a word's start from which the rest of s is
// the start of an id of aliases (or an id whole, which more text may
// extend), else len(s).
func heldFrom(s []byte, done int, aliases map[string]string) int {
	held := len(s)
	for id := range aliases {
		for q := max(done, len(s)-len(id)); q < held; q++ {
			if (q == 0 || !idChar(s[q-1])) && string(s[q:]) == id[:len(s)-q] &&
				(inText(id, aliases) || agentPiece(id, aliases)) {
				held = q
				break
			}
		}
	}
	return held
}

// namedSpan returns s[from:to] with the ids of aliases that lie whole in
// it named (idHits over s around it: a line's start, or 512 bytes before,
// for Claude Code's hint).
func namedSpan(s string, from, to int, aliases map[string]string) string {
	if from >= to {
		return ""
	}
	lo := max(strings.LastIndexByte(s[:from], '\n')+1, from-512, 0)
	var sb strings.Builder
	pos := from
	for _, h := range idHits(s[lo:to], aliases) {
		if h.start += lo; h.start < from {
			continue
		}
		sb.WriteString(s[pos:h.start])
		sb.WriteString(h.name)
		pos = h.end + lo
	}
	sb.WriteString(s[pos:to])
	return sb.String()
}

// aliasText replaces in JSON document b each whole occurrence of a
// distinctive child id of aliases (distinctive) inside a string value —
// and an object's key that is such an id whole, never part of a key, a
// number or a literal — by its name, in a copy; changed is false, and b
// returned, when b names no child. Whole: in the decoded text, not inside
// a longer run of id characters (letters, digits, '-', '_'), so an id
// after an escape ("\n", "\u003c") is found and "text" or a number are
// never touched. A changed string is encoded again; the rest of b keeps
// its bytes. b that is not JSON is treated as one string. Two keys of an
// object that name one child (its id and a piece of it, or a key that
// already was its name) become one key twice: still JSON, which decoders
// read as the last of them (encoding/json, JavaScript's JSON.parse).
func aliasText(b []byte, aliases map[string]string) (out []byte, changed bool) {
	return aliasJSON(b, aliases, false)
}

// aliasNoteData is aliasText for a note's data, where a string value that
// is exactly a child id (the link note's "child") is replaced whatever the
// id looks like.
func aliasNoteData(b []byte, aliases map[string]string) (out []byte, changed bool) {
	return aliasJSON(b, aliases, true)
}

// aliasJSON is aliasText (and, exact, aliasNoteData).
func aliasJSON(b []byte, aliases map[string]string, exact bool) ([]byte, bool) {
	return aliasDoc(b, aliases, exact, nil, 0)
}

// childMask is what a link that nests children shows for a child that has
// no name yet (maskSpawn).
const childMask = "child-?"

// spawnKey reports a field whose string value (or, an array, its string
// elements) names a child as it is spawned: the subagent tool's meta
// ("child"), Claude Code's agentId, Codex's agent_id, new_thread_id and
// receiver_thread_ids. On a link that nests children such a value that is
// no named child is shown as childMask: its link note is not stored yet
// (a watcher may store the spawning call's result first), and the hub
// reloads the log with its name once it is (namesFresh).
func spawnKey(k string) bool {
	switch k {
	case "child", "agentId", "agent_id", "new_thread_id", "receiver_thread_ids":
		return true
	}
	return false
}

// startedSubagent is the start of the text prism's subagent tool answers
// a background call with: "Started subagent <id> in the background."
const startedSubagent = "Started subagent "

// maySpawn reports whether b may hold a spawn field or text (spawnKey,
// startedSubagent), in a JSON document a string holds too.
func maySpawn(b []byte) bool {
	return containsString(b, "child") || containsString(b, "thread_id") ||
		containsString(b, "gent") && (containsString(b, "agentId") || containsString(b, "agent_id") || containsString(b, startedSubagent))
}

// containsString is bytes.Contains(b, []byte(s)) without the copy of s.
func containsString(b []byte, s string) bool {
	if s == "" {
		return true
	}
	for len(b) >= len(s) {
		i := bytes.IndexByte(b[:len(b)-len(s)+1], s[0])
		if i < 0 {
			return false
		}
		if string(b[i:i+len(s)]) == s {
			return true
		}
		b = b[i+1:]
	}
	return false
}

// maxDocDepth bounds how deep aliasDoc reads JSON documents held in
// string values (a tool's output that is JSON, as Codex's spawn_agent's).
const maxDocDepth = 2

// aliasDoc is aliasJSON for a document at depth depth: one held in a
// string value of another is read as JSON too, for its spawn fields.
// A non-nil text is the value of its member instead (a chunk's named
// text: aliasRun).
func aliasDoc(b []byte, aliases map[string]string, exact bool, text *streamedText, depth int) ([]byte, bool) {
	if aliases == nil || text == nil && !mayName(b, aliases, true) && !maySpawn(b) { // a child's field may name any id
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
	var arrays []string // for each array or object the scan is in, an array's key ("" for an object)
	for i := 0; i < len(b); {
		switch b[i] {
		case '"':
		case '[':
			k := ""
			if valueOf(b, keyEnd, i) {
				k = key
			}
			arrays = append(arrays, "["+k)
			i++
			continue
		case '{':
			arrays = append(arrays, "")
			i++
			continue
		case ']', '}':
			if len(arrays) > 0 {
				arrays = arrays[:len(arrays)-1]
			}
			i++
			continue
		default:
			i++
			continue
		}
		start, end := i, stringEnd(b, i)
		i = end
		if isKey(b, end) {
			key, keyEnd = "", end
			if end-start <= 32 || mayName(b[start:end], aliases, false) {
				_ = json.Unmarshal(b[start:end], &key)
			}
			// A key that is a child's id, whole (Codex's collab statuses
			// map, keyed by thread id), is named too; never a part of one.
			if name, ok := aliases[key]; ok && inText(key, aliases) {
				out = append(out, b[last:start]...)
				out = appendJSONString(out, name)
				last = end
			}
			continue
		}
		if text != nil && key == text.key && valueOf(b, keyEnd, start) {
			out = append(out, b[last:start]...)
			out = appendJSONString(out, text.text)
			last = end
			continue
		}
		// A value that names its child by a field of that name ("child":
		// the subagent tool's meta) is replaced whatever the id looks like;
		// a spawn field's value that names no child is masked.
		field := ""
		if valueOf(b, keyEnd, start) {
			field = key
		} else if n := len(arrays); n > 0 && strings.HasPrefix(arrays[n-1], "[") {
			field = arrays[n-1][1:]
		}
		whole := exact || childKey(field)
		spawn := spawnKey(field)
		nested := depth < maxDocDepth && end-start > 2 && (b[start+1] == '{' || b[start+1] == '[') &&
			(mayName(b[start:end], aliases, true) || maySpawn(b[start:end]))
		if !spawn && !nested && !mayName(b[start:end], aliases, whole) && !maySpawnText(b[start:end]) {
			continue
		}
		var v string
		if err := json.Unmarshal(b[start:end], &v); err != nil {
			continue
		}
		nv, ok := v, false
		if nested && json.Valid([]byte(v)) {
			if d, named := aliasDoc([]byte(v), aliases, exact, nil, depth+1); named {
				nv, ok = string(d), true
			}
		}
		if s, named := aliasString(nv, aliases, whole); named {
			nv, ok = s, true
		}
		if spawn && !ok && !isName(v) {
			if _, named := aliases[v]; !named {
				nv, ok = childMask, true
			}
		}
		if !ok || nv == v {
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

// namesFresh reports whether the data of an event a link showed (named by
// earlier names) names a child by aliases, the names read again: it names
// one of their ids, or it masked a child that had no name (childMask).
func namesFresh(data []byte, aliases map[string]string) bool {
	if bytes.Contains(data, []byte(childMask)) {
		return true
	}
	_, named := aliasText(data, aliases)
	return named
}

// mayName reports whether b may hold a child id of aliases: an id whose
// JSON form is itself (no byte JSON escapes) must appear in b's bytes.
func mayName(b []byte, aliases map[string]string, exact bool) bool {
	for id := range aliases {
		if plainInJSON(id) && !containsString(b, id) {
			continue
		}
		if exact || distinctive(id) || agentPiece(id, aliases) {
			return true
		}
	}
	return false
}

// aliasString replaces in s each whole occurrence of an id of aliases
// (idHits) by its name, and (exact) s itself when it is an id.
func aliasString(s string, aliases map[string]string, exact bool) (string, bool) {
	if name, ok := aliases[s]; ok && (exact || inText(s, aliases)) {
		return name, true
	}
	hits := maskStarted(s, idHits(s, aliases), aliases)
	if len(hits) == 0 {
		return s, false
	}
	var sb strings.Builder
	pos := 0
	for _, h := range hits {
		sb.WriteString(s[pos:h.start])
		sb.WriteString(h.name)
		pos = h.end
	}
	sb.WriteString(s[pos:])
	return sb.String(), true
}

// idHit is a whole occurrence of a child's id in a text: bytes
// [start, end), named name.
type idHit struct {
	start, end int
	name       string
}

// idHits returns the whole occurrences in s of the ids of aliases that
// are named in text (inText), and of the other agentIds on the line of
// Claude Code's hint that names them (agentIDHint), in order and never
// overlapping (the longer of two at one place). Whole: not inside a
// longer run of id characters (letters, digits, '-', '_').
func idHits(s string, aliases map[string]string) []idHit {
	var hits []idHit
	for id, name := range aliases {
		if id == "" || !strings.Contains(s, id) {
			continue
		}
		text := inText(id, aliases)
		if !text && !agentPiece(id, aliases) {
			continue
		}
		for from := 0; from < len(s); {
			i := strings.Index(s[from:], id)
			if i < 0 {
				break
			}
			at, end := from+i, from+i+len(id)
			from = at + 1
			if !wholeAt(s, at, end) || !text && !agentIDHint(s, at, id) {
				continue
			}
			hits = append(hits, idHit{start: at, end: end, name: name})
			from = end
		}
	}
	if len(hits) < 2 {
		return hits
	}
	slices.SortFunc(hits, func(a, b idHit) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
	out := hits[:1]
	for _, h := range hits[1:] {
		if h.start >= out[len(out)-1].end {
			out = append(out, h)
		}
	}
	return out
}

// agentIDText is the start of Claude Code's hint naming the agent it
// spawned: "agentId: <id> (use SendMessage with to: '<id>' …)".
const agentIDText = "agentId: "

// maySpawnText reports whether b may hold a text that names a child as it
// is spawned: prism's subagent tool's answer (startedSubagent) or Claude
// Code's hint (agentIDText).
func maySpawnText(b []byte) bool {
	return containsString(b, startedSubagent) || containsString(b, agentIDText)
}

// maskStarted returns hits with, on a link that nests children (aliases
// not nil), the id in each spawn text of s ("Started subagent <id>",
// "agentId: <id>" and that id again on the hint's line) that no
// hit names masked (childMask, spawnKey), in order.
func maskStarted(s string, hits []idHit, aliases map[string]string) []idHit {
	if aliases == nil || !strings.Contains(s, startedSubagent) && !strings.Contains(s, agentIDText) {
		return hits
	}
	named := func(at, end int) bool {
		k, ok := slices.BinarySearchFunc(hits, at, func(h idHit, at int) int { return h.start - at })
		return ok && hits[k].end >= end
	}
	var masks []idHit
	for _, text := range [...]string{startedSubagent, agentIDText} {
		for from := 0; ; {
			i := strings.Index(s[from:], text)
			if i < 0 {
				break
			}
			at := from + i + len(text)
			end := at
			for end < len(s) && idChar(s[end]) {
				end++
			}
			from = at
			if end == at || isName(s[at:min(end+1, len(s))]) || isName(s[at:end]) || named(at, end) {
				continue // masked, named already, or no id
			}
			masks = append(masks, idHit{start: at, end: end, name: childMask})
			if text != agentIDText {
				continue
			}
			// The hint names the id again on its line ("to: '<id>'").
			id := s[at:end]
			lineEnd := len(s)
			if j := strings.IndexByte(s[end:], '\n'); j >= 0 {
				lineEnd = end + j
			}
			for k := strings.LastIndexByte(s[:at], '\n') + 1; ; {
				j := strings.Index(s[k:lineEnd], id)
				if j < 0 {
					break
				}
				st := k + j
				k = st + len(id)
				if st != at && wholeAt(s, st, k) && !named(st, k) {
					masks = append(masks, idHit{start: st, end: k, name: childMask})
				}
			}
		}
	}
	if len(masks) == 0 {
		return hits
	}
	all := append(slices.Clone(hits), masks...)
	slices.SortFunc(all, func(a, b idHit) int { return a.start - b.start })
	out := all[:1]
	for _, h := range all[1:] {
		if h.start >= out[len(out)-1].end {
			out = append(out, h)
		}
	}
	return out
}

// isName reports whether s is a name a link gives a child (child-1, …)
// or childMask, or empty.
func isName(s string) bool {
	n, ok := strings.CutPrefix(s, "child-")
	return s == "" || s == childMask || ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// wholeAt reports whether s[at:end] is not inside a longer run of id
// characters.
func wholeAt(s string, at, end int) bool {
	return (at == 0 || !idChar(s[at-1])) && (end >= len(s) || !idChar(s[end]))
}

// agentIDHint reports whether the line of s holding s[at] is Claude Code's
// hint that agentId id is one: it says "agentId: <id>" ("agentId: 4096000
// (use SendMessage with to: '4096000' to continue this agent)").
func agentIDHint(s string, at int, id string) bool {
	from := strings.LastIndexByte(s[:at], '\n') + 1
	to := len(s)
	if i := strings.IndexByte(s[at:], '\n'); i >= 0 {
		to = at + i
	}
	line, hint := s[from:to], "agentId: "+id
	for k := 0; k < len(line); {
		i := strings.Index(line[k:], hint)
		if i < 0 {
			return false
		}
		if wholeAt(line, k+i+len("agentId: "), k+i+len(hint)) {
			return true
		}
		k += i + 1
	}
	return false
}

// distinctive reports an id that cannot be an ordinary word of a tool's
// output or a JSON field's value (prism's, Codex's and Claude Code's ids
// all are): 8 bytes or more, not letters alone. An id that is a plain
// word ("text", "summary") is left alone in text: replacing it would
// corrupt what the link shows, and such an id tells nothing. Claude
// Code's agentIds, shorter, are named by their own rule (inText).
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
	case "childSession", "sessionId", "session_id":
		return true
	}
	return spawnKey(k)
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
