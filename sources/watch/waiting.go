package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"prism/core"
	"prism/core/logkey"
	"prism/sources/dsh"
	"prism/store"
)

// Children read before their parents. The files of a folder appear in any
// order, and a parent's line that spawns a child may land after the
// child's first lines (or after its last): a child's decoder links it
// only to what is on disk when the child's file is read — its parent's
// transcript (else the child is top-level and names its missing parent)
// and, in it, the spawning call (else the child has no call to nest
// under). Since a file is read again only when it changes, such a child
// waits here, by the id of the parent session it names, and its file is
// read again (recheck) on the poll its parent session is stored or grows:
// the decoder then links it to what the parent's file holds by then. Its
// stored log is reconciled whole when its header changed (SyncWatched),
// its source info written again, and the link note follows (linkPending).
// A recheck costs what finishing the child's kept decoder state costs
// (its file is not read again; an archive is) plus the decoder's search
// of the parent's file, once per poll in which the parent changed; a
// child linked to its call waits no more, and nothing is rechecked on a
// poll in which no parent of a waiting child changed.
//
// A child linked only by its prompt (its spawning call inferred: the
// parent's result naming it not written yet) waits too, for its link to
// be named exactly: its file is read again only on a poll in which the
// stored events of the call it was matched to changed (its result
// landed) — one read of that call's events by its id per growth of the
// parent that wrote events of that call (a write of other events — Claude
// Code's progress lines while the subagent runs, other calls — reads
// nothing, whatever their number) — and the link note is then upgraded
// (LinkChild). The reads are bounded like a pending link's: the wait is
// given up after maxLinkTries writes of the call's events that left the
// child unnamed; the inferred link stays, the giving up is reported in the
// kind's health row and the log, and the wait is not taken up again for
// that call when the child's file is read again. (A result of the call is
// not the end of the wait: Claude Code's decoder closes a call left open
// by the next message with a placeholder result, and the real one,
// naming the child, may land later.)

// waitingParent returns the id of the parent session l, a session of a
// foreign file, waits for — the parent its source names as missing, or a
// child's parent when the call that spawned it was not found — or "".
func waitingParent(l *dsh.Log) string {
	if l.Source == nil {
		return ""
	}
	if l.Source.MissingParent != "" {
		return l.Source.MissingParent
	}
	if p := l.Header.ChildOf(); p != "" && l.Source.SpawnedBy == nil {
		return p
	}
	return ""
}

// wait records that the foreign file at path, of kind k, now waits for
// the parent sessions in parents (none: it waits for nothing); inferred
// are those of them a child waits for only to be linked exactly, by the
// call it was matched to by prompt.
func (w *Watcher) wait(path string, k *fileKind, parents map[string]bool, inferred map[string]inferredWait) {
	k.inferred = inferred
	for p := range k.waits {
		if !parents[p] {
			w.unwait(p, path)
		}
	}
	for p := range parents {
		if w.waiting[p] == nil {
			w.waiting[p] = map[string]bool{}
		}
		w.waiting[p][path] = true
	}
	k.waits = parents
}

// unwait forgets that the file at path waits for parent.
func (w *Watcher) unwait(parent, path string) {
	if files := w.waiting[parent]; files != nil {
		delete(files, path)
		if len(files) == 0 {
			delete(w.waiting, parent)
		}
	}
}

// parentSynced marks the files waiting for session id for a recheck: id
// was just stored, or grew, by written (the events written: appended or
// rewritten). A file whose child waits only to have its
// link, matched by prompt, named exactly is marked only when the events
// stored of the call it was matched to changed (its result landed, or was
// rewritten): one read of that call's events by its id, not a read of
// the child's file and a search of the parent's on every growth.
func (w *Watcher) parentSynced(ctx context.Context, id string, written []core.Event) {
	w.written[id] = true
	for p := range w.waiting[id] {
		if k := w.kinds[p]; k != nil {
			if iw, ok := k.inferred[id]; ok {
				if !touches(written, iw.call) {
					continue // the call's stored events did not change
				}
				iw.tries++
				if iw.tries > maxLinkTries {
					w.giveUpInferred(p, k, id, iw)
					continue
				}
				k.inferred[id] = iw
				if w.inferredSig(ctx, id, iw.call) == iw.sig {
					continue
				}
			}
		}
		w.recheck[p] = true
	}
}

// inferredWait is a child's wait for its link to be named exactly: the
// child, the call it was matched to by prompt, the sum of that call's
// events stored when the child was read (callSig), and how many writes
// of the parent it has waited through (given up after maxLinkTries).
type inferredWait struct {
	child, call, sig string
	tries            int
}

// touches reports whether one of events belongs to call callID (as the
// store files it: core.FactsOf's call id), i.e. writing them changed the
// call's stored events. Only the events whose data holds the id are
// decoded.
func touches(events []core.Event, callID string) bool {
	if callID == "" {
		return false
	}
	id := []byte(callID)
	for i := range events {
		if bytes.Contains(events[i].Data, id) {
			if f := core.FactsOf(&events[i]); f.CallID() == callID {
				return true
			}
		}
	}
	return false
}

// giveUpInferred ends the wait of the foreign file at path (kind k) for
// parent to name its child linked by prompt (iw), after maxLinkTries
// writes of the call's events: the inferred link stays, reported in the
// kind's health row and the log; the file is not read again for it, nor
// waits again for that call.
func (w *Watcher) giveUpInferred(path string, k *fileKind, parent string, iw inferredWait) {
	delete(k.inferred, parent)
	delete(k.waits, parent)
	w.unwait(parent, path)
	if k.gaveUp == nil {
		k.gaveUp = map[string]string{}
	}
	k.gaveUp[parent] = iw.call
	why := fmt.Sprintf("subagent %s stays linked to call %s of %s by its prompt only (inferred): the parent did not name it in %d writes of that call's events", iw.child, iw.call, parent, iw.tries-1)
	w.mu.Lock()
	h := w.row(k.fg.Name)
	h.row.LastError, h.row.LastErrorAt = why, w.opts.Now()
	w.mu.Unlock()
	w.log.Warn("watch: giving up waiting for a parent to name its subagent", logkey.SessionID, iw.child, logkey.Reason, why)
}

// inferredSig returns callSig of call callID of session parent as stored
// ("" when it cannot be read: logged).
func (w *Watcher) inferredSig(ctx context.Context, parent, callID string) string {
	events, err := callEvents(ctx, w.st, parent, callID)
	if err != nil {
		w.log.Warn("watch: cannot read a subagent's spawning call", logkey.SessionID, parent, logkey.Err, err)
		return ""
	}
	return callSig(events)
}

// recheckWaiting reads again the files marked for a recheck during the
// poll, each at most once per poll (a child linked so may itself be a
// parent others wait for).
func (w *Watcher) recheckWaiting(ctx context.Context) error {
	done := map[string]bool{}
	for len(w.recheck) > 0 {
		var paths []string
		for p := range w.recheck {
			if !done[p] {
				paths = append(paths, p)
			}
		}
		clear(w.recheck)
		sort.Strings(paths)
		for _, p := range paths {
			done[p] = true
			k := w.kinds[p]
			if k == nil || k.kind != dsh.KindForeign {
				continue
			}
			k.recheck = true
			err := w.syncFile(ctx, p)
			k.recheck = false
			if err != nil && (errors.Is(err, store.ErrClosed) || ctx.Err() != nil) {
				return err
			}
		}
	}
	return nil
}
