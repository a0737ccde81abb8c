package watch

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"prism/core/logkey"
)

// One owner per session. Two files may yield one session id — a copied
// transcript, a Codex rollout and its .jsonl.zst archive —, and storing
// both would flip the session between them (or leave a mix of their
// events). The first file seen to yield an id owns it (within one poll,
// files are read in path order, so the first by path); the session is
// stored from its owner only, and every other file yielding that id is
// left out and reported in its kind's health row as a duplicate of the
// owner, naming both paths. When the owner goes (deleted, replaced, or no
// longer yielding the id), the duplicates are read again on the next
// poll: the first of them (by path) takes the session over.

// kindName is the name of k's kind of source (its health row): "dsh" or
// the foreign format's.
func kindName(k *fileKind) string {
	if k.fg == nil {
		return "dsh"
	}
	return k.fg.Name
}

// claim reports whether the session file at path, of kind k, may store
// session id: it owns it, or no present file does (it then takes it).
// Otherwise the file is recorded as a duplicate of the owner.
func (w *Watcher) claim(path string, k *fileKind, id string) bool {
	if owner, ok := w.owners[id]; ok && owner != path {
		if ok := w.kinds[owner] != nil; ok {
			w.duplicate(path, k, id, owner)
			return false
		}
	}
	w.owners[id] = path
	if k.owned == nil {
		k.owned = map[string]bool{}
	}
	k.owned[id] = true
	w.undup(path, k, id)
	return true
}

// duplicate records that the session file at path, of kind k, yields session id,
// which the file at owner owns.
func (w *Watcher) duplicate(path string, k *fileKind, id, owner string) {
	if w.dups[id] == nil {
		w.dups[id] = map[string]bool{}
	}
	first := !w.dups[id][path]
	w.dups[id][path] = true
	if k.dupOf == nil {
		k.dupOf = map[string]string{}
	}
	k.dupOf[id] = owner
	why := fmt.Sprintf("%s holds session %s, a duplicate of %s: left out (the session follows the file first seen)", path, id, owner)
	w.mu.Lock()
	h := w.row(kindName(k))
	if h.dups == nil {
		h.dups = map[string]string{}
	}
	h.dups[path+"\x00"+id] = why
	w.mu.Unlock()
	if first {
		w.log.Warn("watch: leaving out a duplicate of another file's session", logkey.Path, path, logkey.SessionID, id, logkey.Reason, why)
	}
}

// undup forgets that the file at path, of kind k, is a duplicate for
// session id.
func (w *Watcher) undup(path string, k *fileKind, id string) {
	if _, ok := k.dupOf[id]; !ok {
		return
	}
	delete(k.dupOf, id)
	if files := w.dups[id]; files != nil {
		delete(files, path)
		if len(files) == 0 {
			delete(w.dups, id)
		}
	}
	w.mu.Lock()
	if h := w.health[kindName(k)]; h != nil {
		delete(h.dups, path+"\x00"+id)
	}
	w.mu.Unlock()
}

// settleOwnership, after the foreign file at path (kind k) was read,
// releases the sessions it owned and no longer yields, and forgets that
// it duplicated those it no longer yields.
func (w *Watcher) settleOwnership(path string, k *fileKind) {
	for id := range k.owned {
		if !slices.Contains(k.sessions, id) {
			w.release(path, k, id)
		}
	}
	for id := range k.dupOf {
		if !slices.Contains(k.sessions, id) {
			w.undup(path, k, id)
		}
	}
}

// disown forgets the session file at path (kind k), deleted or replaced:
// the sessions it owned are released, its duplicates forgotten.
func (w *Watcher) disown(path string, k *fileKind) {
	for id := range k.owned {
		w.release(path, k, id)
	}
	for id := range k.dupOf {
		w.undup(path, k, id)
	}
}

// release gives up the file at path's (kind k) ownership of session id:
// the files that duplicate it are read again on the next poll, whole
// (a dsh log from scratch), where the first of them takes it.
func (w *Watcher) release(path string, k *fileKind, id string) {
	delete(k.owned, id)
	if w.owners[id] == path {
		delete(w.owners, id)
	}
	for p := range w.dups[id] {
		if d := w.kinds[p]; d != nil {
			d.seen, d.failed, d.end, d.tail, d.read = [3]int64{}, [3]int64{}, 0, nil, prefixSum{}
			delete(w.files, p) // a dsh log
			w.undup(p, d, id)
		}
	}
	delete(w.dups, id)
}

// dupReport is the health row's account of the duplicates of h's kind:
// how many, and each one's reason (sorted by path).
func dupReport(h *kindHealth) (int, string) {
	if len(h.dups) == 0 {
		return 0, ""
	}
	keys := make([]string, 0, len(h.dups))
	for key := range h.dups {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	whys := make([]string, len(keys))
	for i, key := range keys {
		whys[i] = h.dups[key]
	}
	return len(keys), strings.Join(whys, "; ")
}
