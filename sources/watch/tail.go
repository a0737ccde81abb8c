package watch

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"slices"

	"prism/core"
	"prism/sources/dsh"
	"prism/store"
)

// Appender is a Store that writes what the watcher read on of a session
// it stored before without reading its log back (db and pgstore have
// it): the store checks the session's event count, source and header,
// and refuses with core.CodeConflict what it cannot do so (then the
// watcher reconciles the whole log with SyncWatched).
type Appender interface {
	AppendWatched(ctx context.Context, h core.SessionHeader, w store.WatchedWrite) (outcome string, added int, err error)
}

// foreignTail is the incremental read of a plain foreign transcript: its
// decoder's state after the last complete line read (dsh.LineTail), and
// what was stored of each of its sessions.
type foreignTail struct {
	lt dsh.LineTail
	// prefixSum is what the decoder consumed: the file is read on from
	// its end only while its first end bytes still sum to it (trusted).
	prefixSum
	// sessions are what the watcher stored of each session the file
	// holds, by id.
	sessions map[string]*sessionTail
	used     uint64 // the Watcher's tick of its latest read
}

// sessionTail is what the watcher stored of one session of a file.
type sessionTail struct {
	header  string // the header written (store.HeaderJSON)
	wrote   int    // events stored
	settled int    // of them, those no later line of the file changes
	// mark is where the store keeps the session's summary
	// (store.WatchedWrite.Mark; -1: nowhere): the watcher can rewrite
	// the events after it.
	mark int
	// tail is events[settled:wrote] as stored: a later read of the file
	// may end differently (a step it closed for now has grown).
	tail []core.Event
	// mem is about the bytes header and tail hold (the decoder state
	// does not hold tail's events: its end closed for now is a copy's).
	mem int64
}

// eventOverhead is what one event costs beyond its data, as the decoders
// count it against Limits.MaxMemoryBytes.
const eventOverhead = 160

// mem is about the bytes t keeps: its decoder's state and
// what it recorded of each session stored.
func (t *foreignTail) mem() int64 {
	m := t.lt.Mem()
	for id, s := range t.sessions {
		m += int64(len(id)) + s.mem
	}
	return m
}

// sumBufBytes is the size of the buffer the prefix of a transcript is
// read through to be summed (Watcher.sumBuf).
const sumBufBytes = 256 << 10

// castagnoli is the CRC-32C table (the CPU's CRC32 instruction where it
// has one: the cheapest sum of the standard library, about twice
// maphash's speed on large buffers); read only.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// prefixSum is the running CRC-32C of the bytes [0, end) of a file a
// decoder consumed, in one pass from its start (a transcript's
// foreignTail, a dsh log's watchedFile). It is small: a fileKind keeps
// it when its tail's decoder state is dropped (keepTails), so that a
// rewrite in place is still told apart from a partial line added.
type prefixSum struct {
	end int64 // the offset read up to: just past a line (or a dsh log's frame)
	sum uint32
}

// trusted reports whether the file f, whose complete lines now end at
// end, is the one p was summed of, grown or unchanged: not shorter, and
// its first p.end bytes sum to p.sum. Every byte is read and summed
// (through buf; CRC-32C: a change confined to 32 consecutive bits is
// always found, any other missed with a chance of 2^-32), so a rewrite
// anywhere in what was read — a changed middle line, a file truncated
// and written again — is told apart from growth; the inode and size are
// checked by the caller.
func (p prefixSum) trusted(f io.ReaderAt, end int64, buf []byte) bool {
	if end < p.end {
		return false
	}
	var sum uint32
	for off := int64(0); off < p.end; {
		n := int(min(int64(len(buf)), p.end-off))
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return false
		}
		sum = crc32.Update(sum, castagnoli, buf[:n])
		off += int64(n)
	}
	return sum == p.sum
}

// sumBuffer is the Watcher's buffer of trusted, made on first use.
func (w *Watcher) sumBuffer() []byte {
	if w.sumBuf == nil {
		w.sumBuf = make([]byte, sumBufBytes)
	}
	return w.sumBuf
}

// summingReaderAt sums (CRC-32C) what is read through it, in order from
// next: the bytes a decoder consumes (foreignTail.sum). A read out of
// that order sets gap (the sum is then not of the bytes read).
type summingReaderAt struct {
	r    io.ReaderAt
	sum  uint32
	next int64
	gap  bool
}

func (r *summingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.r.ReadAt(p, off)
	if off != r.next {
		r.gap = true
	} else {
		r.sum = crc32.Update(r.sum, castagnoli, p[:n])
		r.next += int64(n)
	}
	return n, err
}

// readTail decodes what the plain transcript f at path grew by since k's
// last read, from the decoder state kept after it — or the whole file,
// up to end, when there is none or it cannot be trusted (the file
// shrank, or the bytes read before changed: rewritten, foreignTail.trusted)
// — and returns its logs as a whole read returns them, with the number of
// each log's settled events.
func (w *Watcher) readTail(path string, f io.ReaderAt, k *fileKind, end int64, lim dsh.Limits) (*foreignTail, []*dsh.Log, []int, error) {
	t := k.tail
	k.tail = nil // put back once read
	if t != nil && !t.trusted(f, end, w.sumBuffer()) {
		t = nil
	}
	if t == nil {
		t = &foreignTail{lt: k.fg.Tail(path, lim), sessions: map[string]*sessionTail{}}
	}
	whole := true // the decoder consumed [0, end), summed
	if end > t.end {
		sr := &summingReaderAt{r: f, sum: t.sum, next: t.end}
		if err := dsh.FeedFileAt(t.lt, path, sr, t.end, end); err != nil {
			return nil, nil, nil, err
		}
		whole = !sr.gap && sr.next == end
		t.sum, t.end = sr.sum, end
	}
	logs, settled, err := dsh.TailLogs(t.lt, path)
	if err != nil {
		return nil, nil, nil, err
	}
	w.tick++
	t.used = w.tick
	if whole {
		k.tail, k.read = t, t.prefixSum
		w.keepTails(k, lim)
	}
	return t, logs, settled, nil
}

// keepTails drops the decoder states of the transcripts that grew least
// recently until those kept, k's among them, hold at most one import's
// memory budget (Limits.MaxMemoryBytes) together: a file whose state was
// dropped is read whole when it grows again (its prefixSum, fileKind.read,
// is kept: a rewrite in place is still told apart from a partial line
// added).
func (w *Watcher) keepTails(k *fileKind, lim dsh.Limits) {
	budget := lim.OrDefault().MaxMemoryBytes
	for {
		var total int64
		var oldest *fileKind
		for _, o := range w.kinds {
			if o.tail == nil {
				continue
			}
			total += o.tail.mem()
			if o != k && (oldest == nil || o.tail.used < oldest.tail.used) {
				oldest = o
			}
		}
		if total <= budget || oldest == nil {
			return
		}
		oldest.tail = nil
	}
}

// storeTail stores log l of a transcript read by t, settled its events no
// later line changes, through the store's Appender when what the watcher
// stored of the session is known: when l's events begin with it, the
// new events are appended; when they end differently (a step the file's
// end closed for now has grown), the events after the store's mark (or
// after those settled) are rewritten. Neither reads the stored log back. Otherwise — the first
// read, a changed header, a store without Appender or one that refuses
// (the stored log moved under the watcher: an import, a delete) —
// SyncWatched reconciles the whole log.
func (w *Watcher) storeTail(ctx context.Context, t *foreignTail, l *dsh.Log, settled int) (outcome string, added int, err error) {
	id, events := l.Header.ID, l.Events
	settled = min(settled, len(events))
	hj, herr := store.HeaderJSON(l.Header)
	rec := t.sessions[id]
	delete(t.sessions, id) // put back once stored
	app, ok := w.st.(Appender)
	if ok && herr == nil && rec != nil && rec.header == hj {
		var ww store.WatchedWrite
		mark := rec.mark
		switch {
		case rec.prefixOf(events) && len(events) == rec.wrote:
			t.sessions[id] = rec.next(hj, events, settled, mark)
			return store.ImportUnchanged, 0, nil
		case rec.prefixOf(events):
			ww = store.WatchedWrite{Stored: rec.wrote, From: rec.wrote, Events: events[rec.wrote:], Mark: -1}
			if settled >= rec.wrote {
				ww.Mark, mark = settled, settled
			}
		default:
			// The end differs: rewrite it from the store's mark, or
			// from the events settled before (the store then reads
			// their summary once).
			from := rec.settled
			if rec.mark >= 0 {
				from = rec.mark
			}
			ww = store.WatchedWrite{Stored: rec.wrote, From: from, Events: events[from:], Mark: settled}
			mark = settled
		}
		if ok {
			outcome, added, err = app.AppendWatched(ctx, l.Header, ww)
			if err == nil {
				if outcome != store.ImportSkipped {
					t.sessions[id] = rec.next(hj, events, settled, mark)
				}
				return outcome, added, nil
			}
			if core.ErrorCode(err) != core.CodeConflict {
				return "", 0, err
			}
			// The stored log moved under the watcher, or the store
			// cannot rewrite its end: reconcile it whole.
		}
	}
	outcome, added, err = w.st.SyncWatched(ctx, l.Header, events)
	if err == nil && herr == nil && outcome != store.ImportSkipped {
		t.sessions[id] = (*sessionTail)(nil).next(hj, events, settled, -1)
	}
	return outcome, added, err
}

// next is what the watcher stored of a session once events (settled of
// them) are, with the store's mark at mark.
func (*sessionTail) next(header string, events []core.Event, settled, mark int) *sessionTail {
	st := &sessionTail{header: header, wrote: len(events), settled: settled, mark: mark, tail: slices.Clone(events[settled:])}
	st.mem = int64(len(header))
	for _, e := range st.tail {
		st.mem += int64(len(e.Data)) + eventOverhead
	}
	return st
}

// prefixOf reports whether events begin with what was stored: their
// settled events are so by the decoder's word, the rest are compared.
func (s *sessionTail) prefixOf(events []core.Event) bool {
	if len(events) < s.wrote {
		return false
	}
	for i, e := range s.tail {
		if !sameEvent(e, events[s.settled+i]) {
			return false
		}
	}
	return true
}

// sameEvent reports whether a and b are the same event (their JSON).
func sameEvent(a, b core.Event) bool {
	if a.Seq != b.Seq || a.Type != b.Type || a.Time != b.Time || a.Ignorable != b.Ignorable || !bytes.Equal(a.Data, b.Data) {
		return false
	}
	x, err1 := a.MarshalJSON()
	y, err2 := b.MarshalJSON()
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// consumedSum sums (CRC-32C) the bytes of a dsh log that its Tail
// consumes, read through it from p.end (the Tail's offset) on: what was
// read is held until the Tail's offset passes it (one frame or line, and
// what the Tail's reader read ahead), then summed — so the sum is of the
// bytes decoded, whatever the file holds by the time the read is over.
type consumedSum struct {
	r    io.Reader
	tail *dsh.Tail
	p    prefixSum
	// held is what was read from p.end on, not consumed yet (in the
	// Watcher's sumBuf while it fits: trusted does not run meanwhile).
	held []byte
}

func (c *consumedSum) Read(b []byte) (int, error) {
	c.fold()
	n, err := c.r.Read(b)
	c.held = append(c.held, b[:n]...)
	return n, err
}

// fold sums what the Tail consumed of the bytes held.
func (c *consumedSum) fold() {
	k := min(c.tail.Offset()-c.p.end, int64(len(c.held)))
	if k <= 0 {
		return
	}
	c.p.sum = crc32.Update(c.p.sum, castagnoli, c.held[:k])
	c.p.end += k
	c.held = c.held[:copy(c.held, c.held[k:])]
}

// done returns the sum of the bytes [0, Offset()) the Tail consumed
// (unknown, end -1, should it have consumed more than was read through c).
func (c *consumedSum) done() prefixSum {
	c.fold()
	if c.p.end != c.tail.Offset() {
		return prefixSum{end: -1}
	}
	return c.p
}
