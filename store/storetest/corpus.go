package storetest

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"

	"prism/core"
)

// Corpus writes realistic session logs for the search benchmarks: turns of
// a user message, an assistant message with reasoning, and read, grep and
// bash calls with their results (text drawn from a Zipf-distributed
// vocabulary of words and code identifiers; 5% of the bash calls time out,
// 2% of their outputs say "connection refused").
type Corpus struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

// NewCorpus returns the corpus of seed (the same seed, the same logs).
func NewCorpus(seed int64) *Corpus {
	r := rand.New(rand.NewSource(seed))
	c := &Corpus{r: r}
	base := []string{"the", "build", "test", "fails", "config", "server", "error", "file", "function", "return", "value", "package",
		"import", "module", "handler", "request", "response", "session", "token", "cache", "index", "query", "latency", "commit"}
	c.vocab = append(c.vocab, base...)
	syll := []string{"ka", "lo", "mi", "ren", "tos", "vex", "dra", "pol", "qui", "zen", "bar", "nim", "orf", "ul", "sto", "gri"}
	for len(c.vocab) < 5000 {
		n := 2 + r.Intn(3)
		var w strings.Builder
		for i := 0; i < n; i++ {
			w.WriteString(syll[r.Intn(len(syll))])
		}
		c.vocab = append(c.vocab, w.String())
	}
	c.zipf = rand.NewZipf(r, 1.1, 2, uint64(len(c.vocab)-1))
	return c
}

func (c *Corpus) words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = c.vocab[c.zipf.Uint64()]
	}
	return strings.Join(w, " ")
}

func (c *Corpus) ident() string {
	switch c.r.Intn(3) {
	case 0:
		return c.vocab[c.zipf.Uint64()] + "/" + c.vocab[c.zipf.Uint64()] + "_test.go"
	case 1:
		return "fmt.Sprintf"
	}
	return strings.ToUpper(c.vocab[c.zipf.Uint64()][:1]) + c.vocab[c.zipf.Uint64()]
}

func corpusJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Log returns a session log of about n events, the first at t0 (epoch
// ms), one a second.
func (c *Corpus) Log(n int, t0 int64) []core.Event {
	var events []core.Event
	add := func(typ, data string) {
		e := core.Event{Type: typ, Seq: int64(len(events)), Time: t0 + int64(len(events))*1000, Data: json.RawMessage(data)}
		if core.IsSurfaceType(typ) {
			e.SurfaceOp = core.AppendOp()
		}
		events = append(events, e)
	}
	for turn := 1; len(events) < n; turn++ {
		add(core.EventTurnStart, fmt.Sprintf(`{"turn":%d}`, turn))
		add(core.EventStepStart, fmt.Sprintf(`{"turn":%d,"step":1}`, turn))
		add(core.EventUserMessage, fmt.Sprintf(`{"id":"u%d","role":"user","content":[{"type":"text","text":%s}],"source":{"kind":"user"}}`, turn, corpusJSON(c.words(20))))
		add(core.EventAssistantMessage, fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"a%d","role":"assistant","content":[{"type":"reasoning","text":%s},{"type":"text","text":%s}],"source":{"kind":"model","provider":"p","model":"m"}}}`,
			turn, turn, corpusJSON(c.words(30)), corpusJSON(c.words(40)+" "+c.ident())))
		for k, tool := range []string{"read", "grep", "bash"} {
			id := fmt.Sprintf("c%d_%d", turn, k)
			var args, out, errPart string
			isError := false
			switch tool {
			case "read":
				args = fmt.Sprintf(`{"file_path":%s}`, corpusJSON(c.ident()))
				var b strings.Builder
				for i := 0; i < 40; i++ {
					fmt.Fprintf(&b, "%d: %s\n", i+1, c.words(5))
				}
				out = b.String()
			case "grep":
				args = fmt.Sprintf(`{"pattern":%s}`, corpusJSON(c.ident()))
				out = c.ident() + ":12: " + c.words(8) + "\n" + c.ident() + ":40: " + c.words(8)
			case "bash":
				args = fmt.Sprintf(`{"command":%s}`, corpusJSON("go test ./"+c.vocab[c.zipf.Uint64()]+"/..."))
				out = c.words(30)
				if c.r.Intn(50) == 0 {
					out += " dial tcp: connection refused"
				}
				if c.r.Intn(20) == 0 {
					isError, out = true, "the command timed out after 120s"
					errPart = `,"error":{"name":"ToolTimeoutError","code":"TOOL_TIMEOUT"}`
				}
			}
			add(core.EventToolCall, fmt.Sprintf(`{"turn":%d,"step":1,"callId":%q,"name":%q,"arguments":%s}`, turn, id, tool, corpusJSON(args)))
			add(core.EventToolResult, fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"r%s","role":"user","content":[{"type":"tool-result","toolCallId":%q,"content":[{"type":"text","text":%s}],"isError":%t}],"source":{"kind":"tool","callId":%q}}%s}`,
				turn, id, id, corpusJSON(out), isError, id, errPart))
		}
		add(core.EventStepEnd, fmt.Sprintf(`{"turn":%d,"step":1}`, turn))
		add(core.EventTurnEnd, fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, turn))
	}
	return events
}

// Word returns a word of the vocabulary drawn by its frequency.
func (c *Corpus) Word() string { return c.vocab[c.zipf.Uint64()] }

// Vocab returns the vocabulary word of rank i (0 is the most frequent;
// the first 24 are common English and code words, "config" among them).
func (c *Corpus) Vocab(i int) string { return c.vocab[i] }
