package web_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/web"
)

// injection is what a hostile model name or session id carries: a CR ends
// an SSE line for the Datastar client, so without cleaning the rest would
// be a data line of its own.
const injection = "\rdata: mode remove"

// rawEvents reads a stream's raw bytes and splits them into events the way
// the Datastar client does (a line ends at CR, LF or CRLF), until an event
// satisfies ok. It fails on a CR anywhere in the stream.
func rawEvents(t *testing.T, e *env, path string, ok func(lines []string) bool) [][]string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.ts.URL+path, nil)
	res, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	type result struct {
		events [][]string
		err    string
	}
	done := make(chan result, 1)
	go func() {
		r := bufio.NewReader(res.Body)
		var events [][]string
		var cur []string
		var line []byte
		for {
			c, err := r.ReadByte()
			if err != nil {
				done <- result{events, "stream ended: " + err.Error()}
				return
			}
			if c == '\r' {
				done <- result{events, "a CR in the stream after " + strings.Join(cur, " | ") + " " + string(line)}
				return
			}
			if c != '\n' {
				line = append(line, c)
				continue
			}
			if len(line) > 0 {
				cur = append(cur, string(line))
				line = line[:0]
				continue
			}
			if len(cur) > 0 {
				events = append(events, cur)
				if ok(cur) {
					done <- result{events, ""}
					return
				}
			}
			cur = nil
		}
	}()
	select {
	case r := <-done:
		if r.err != "" {
			t.Fatal(r.err)
		}
		return r.events
	case <-time.After(5 * time.Second):
		t.Fatal("no matching SSE event within 5s")
	}
	return nil
}

// checkFields fails on a line that is not one of the fields prism sends.
func checkFields(t *testing.T, events [][]string) {
	t.Helper()
	for _, ev := range events {
		for _, l := range ev {
			switch {
			case strings.HasPrefix(l, "event: "), strings.HasPrefix(l, "id: "), strings.HasPrefix(l, ": "),
				strings.HasPrefix(l, "data: elements "), strings.HasPrefix(l, "data: selector "),
				l == "data: mode append", l == "data: mode prepend":
			default:
				t.Errorf("unexpected SSE line %q", l)
			}
		}
	}
}

// TestStream_CRInModelNameOrSessionIDCannotInjectSSEFields: a CR in a
// model name (session stream) or a session id (list stream) reaches no SSE
// frame, so no field can be injected into a patch.
func TestStream_CRInModelNameOrSessionIDCannotInjectSSEFields(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) { d.Tuning.ListThrottle = 1 })
	b := openStep()
	e.session(t, "s1", b.Events)
	evil := "evil" + injection
	e.session(t, evil, nil)

	// The list stream's first event carries every row, the hostile id's
	// too.
	evs := rawEvents(t, e, "/stream", func(lines []string) bool { return strings.Contains(strings.Join(lines, "\n"), "evil") })
	checkFields(t, evs)

	// The session stream patches an assistant message whose model name is
	// hostile.
	m := core.Message{ID: "a1", Role: core.RoleAssistant, Content: core.Text("hi"),
		Source: core.Source{Kind: core.SourceModel, Provider: "x", Model: "m1" + injection}}
	b.Add(core.EventAssistantMessage, core.AssistantMessage{Turn: 1, Step: 1, Message: m}, core.AppendOp())
	e.append(t, "s1", b.Events[3:]...)
	evs = rawEvents(t, e, "/sessions/s1/stream?after=2", func(lines []string) bool {
		return strings.Contains(strings.Join(lines, "\n"), `class="model"`)
	})
	checkFields(t, evs)
}
