package prismtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"prism/views"
)

// Frame is one server-sent event of a session page's stream: a
// datastar-patch-elements event carrying rendered elements (the pending
// card appended to its step, the completed card morphed onto it, the
// session header…), or an id-only event that moves the page's cursor.
type Frame struct {
	// Event is the event type ("datastar-patch-elements"); "" for an
	// id-only event.
	Event string
	// ID is the event id: the seq of the last log event the frame renders
	// ("" when the frame has none).
	ID string
	// Data are the event's data lines, in order.
	Data []string
}

// field returns the values of the data lines that start with name and a
// space, joined by newlines.
func (f Frame) field(name string) string {
	var parts []string
	for _, d := range f.Data {
		if v, ok := strings.CutPrefix(d, name+" "); ok {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, "\n")
}

// Elements returns the HTML the frame patches into the page.
func (f Frame) Elements() string { return f.field("elements") }

// Selector returns the element the frame appends into ("" for a morph by
// id).
func (f Frame) Selector() string { return f.field("selector") }

// Mode returns the patch mode: "append", or "" for datastar's default (an
// outer morph of each element onto the element with its id).
func (f Frame) Mode() string { return f.field("mode") }

// Doc parses the frame's elements.
func (f Frame) Doc() *goquery.Document {
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(f.Elements()))
	if err != nil { // the HTML parser accepts any input
		panic("prismtest: parse a frame's elements: " + err.Error())
	}
	return doc
}

// Card returns the tool card of callID among the frame's elements (an
// empty selection when the frame does not carry it).
func (f Frame) Card(callID string) *goquery.Selection { return f.Doc().Find(CardSelector(callID)) }

// String describes the frame for failure messages.
func (f Frame) String() string {
	if f.Event == "" {
		return "id-only frame " + f.ID
	}
	var cards []string
	f.Doc().Find(`[data-testid="tool-card"]`).Each(func(_ int, c *goquery.Selection) {
		cards = append(cards, c.AttrOr("data-call-id", "?")+"="+c.AttrOr("data-state", "?"))
	})
	return fmt.Sprintf("%s id %s (%d bytes, cards %v)", f.Event, f.ID, len(f.Elements()), cards)
}

// Stream is a session page's live SSE stream, read as the browser reads it.
type Stream struct {
	t       testing.TB
	id      string
	frames  chan Frame
	err     error // why the reader stopped (nil at EOF); set before frames closes
	cancel  context.CancelFunc
	timeout time.Duration
	seen    []Frame
}

// Stream opens session id's page stream from the start of its log (as a
// page loaded before the session's first event would) and returns it; the
// frames arrive as the server sends them: first what the log holds, then
// each change as it is committed. It is closed when the test ends.
func (s *Server) Stream(id string) *Stream {
	s.t.Helper()
	return s.StreamAfter(id, -1)
}

// StreamAfter opens session id's page stream after seq (a reloaded page's
// cursor): the server sends only what came after it.
func (s *Server) StreamAfter(id string, seq int64) *Stream {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+views.SessionStreamURL(id, seq), nil)
	if err != nil {
		cancel()
		s.t.Fatalf("prismtest: stream of session %s: %v", id, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	res, err := s.Client().Do(req)
	if err != nil {
		cancel()
		s.t.Fatalf("prismtest: stream of session %s: %v", id, err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		res.Body.Close()
		cancel()
		s.t.Fatalf("prismtest: stream of session %s: %s (%s): %s", id, res.Status, res.Header.Get("Content-Type"), clip(string(body)))
	}
	st := &Stream{t: s.t, id: id, frames: make(chan Frame, 1024), cancel: cancel, timeout: s.timeout}
	go func() {
		defer res.Body.Close()
		st.err = readSSE(ctx, res.Body, st.frames)
		close(st.frames)
	}()
	s.t.Cleanup(st.Close)
	return st
}

// Close ends the stream.
func (st *Stream) Close() { st.cancel() }

// Next returns the next frame, failing the test when none arrives within
// the server's timeout or the stream ends.
func (st *Stream) Next() Frame {
	st.t.Helper()
	timer := time.NewTimer(st.timeout)
	defer timer.Stop()
	select {
	case f, ok := <-st.frames:
		if !ok {
			st.t.Fatalf("prismtest: the stream of session %s ended (%s) after %d frames", st.id, st.end(), len(st.seen))
		}
		st.seen = append(st.seen, f)
		return f
	case <-timer.C:
		st.t.Fatalf("prismtest: no frame on the stream of session %s within %v (after %d frames)", st.id, st.timeout, len(st.seen))
	}
	return Frame{}
}

// Until reads frames until one satisfies ok and returns every frame read,
// that one last. It fails the test as Next does.
func (st *Stream) Until(ok func(Frame) bool) []Frame {
	st.t.Helper()
	var got []Frame
	for {
		f := st.Next()
		got = append(got, f)
		if ok(f) {
			return got
		}
	}
}

// Card reads frames until one carries the tool card of callID in state
// (pending, running, awaiting, ok, error, stopped) and returns that card.
// It fails the test as Next does, listing the frames it read.
func (st *Stream) Card(callID, state string) *goquery.Selection {
	st.t.Helper()
	from := len(st.seen)
	timer := time.NewTimer(st.timeout)
	defer timer.Stop()
	for {
		select {
		case f, ok := <-st.frames:
			if !ok {
				st.t.Fatalf("prismtest: the stream of session %s ended (%s) before card %s was %s; frames read: %s",
					st.id, st.end(), callID, state, frameList(st.seen[from:]))
			}
			st.seen = append(st.seen, f)
			if c := f.Card(callID); c.Length() > 0 && c.AttrOr("data-state", "") == state {
				return c
			}
		case <-timer.C:
			st.t.Fatalf("prismtest: card %s was not %s on the stream of session %s within %v; frames read: %s",
				callID, state, st.id, st.timeout, frameList(st.seen[from:]))
			return nil
		}
	}
}

// end says why the stream ended; call it once frames is closed.
func (st *Stream) end() string {
	if st.err != nil {
		return st.err.Error()
	}
	return "the server closed it"
}

// Frames returns every frame Next, Until and Card have read so far.
func (st *Stream) Frames() []Frame { return st.seen }

func frameList(fs []Frame) string {
	if len(fs) == 0 {
		return "none"
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// readSSE reads server-sent events from r into out until r ends (nil) or
// fails, following the event-stream format: fields "event", "id" and
// "data" (one optional space after the colon is dropped), comment lines
// ignored, an event dispatched at a blank line; an event with only an id
// is dispatched too (it moves the page's cursor).
func readSSE(ctx context.Context, r io.Reader, out chan<- Frame) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var f Frame
	has := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if has {
				select {
				case out <- f:
				case <-ctx.Done():
					return nil
				}
			}
			f, has = Frame{}, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			f.Event, has = value, true
		case "id":
			f.ID, has = value, true
		case "data":
			f.Data, has = append(f.Data, value), true
		}
	}
	if ctx.Err() != nil {
		return nil // closed by the test
	}
	return sc.Err()
}
