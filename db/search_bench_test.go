package db

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"prism/core"
	"prism/core/search"
	"prism/store/storetest"
)

// corpus writes realistic session logs for the search benchmarks: turns of
// a user message, an assistant message with reasoning, and read, grep and
// bash calls with their results (text drawn from a Zipf-distributed
// vocabulary of words and code identifiers; 5% of the bash calls time out,
// 2% of their outputs say "connection refused").
type corpus struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

func newCorpus(seed int64) *corpus {
	r := rand.New(rand.NewSource(seed))
	c := &corpus{r: r}
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

func (c *corpus) words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = c.vocab[c.zipf.Uint64()]
	}
	return strings.Join(w, " ")
}

func (c *corpus) ident() string {
	switch c.r.Intn(3) {
	case 0:
		return c.vocab[c.zipf.Uint64()] + "/" + c.vocab[c.zipf.Uint64()] + "_test.go"
	case 1:
		return "fmt.Sprintf"
	}
	return strings.ToUpper(c.vocab[c.zipf.Uint64()][:1]) + c.vocab[c.zipf.Uint64()]
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// log returns a session log of about n events.
func (c *corpus) log(n int, t0 int64) []core.Event {
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
		add(core.EventUserMessage, fmt.Sprintf(`{"id":"u%d","role":"user","content":[{"type":"text","text":%s}],"source":{"kind":"user"}}`, turn, jsonString(c.words(20))))
		add(core.EventAssistantMessage, fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"a%d","role":"assistant","content":[{"type":"reasoning","text":%s},{"type":"text","text":%s}],"source":{"kind":"model"}}}`,
			turn, turn, jsonString(c.words(30)), jsonString(c.words(40)+" "+c.ident())))
		for k, tool := range []string{"read", "grep", "bash"} {
			id := fmt.Sprintf("c%d_%d", turn, k)
			var args, out, errPart string
			isError := false
			switch tool {
			case "read":
				args = fmt.Sprintf(`{"file_path":%s}`, jsonString(c.ident()))
				var b strings.Builder
				for i := 0; i < 40; i++ {
					fmt.Fprintf(&b, "%d: %s\n", i+1, c.words(5))
				}
				out = b.String()
			case "grep":
				args = fmt.Sprintf(`{"pattern":%s}`, jsonString(c.ident()))
				out = c.ident() + ":12: " + c.words(8) + "\n" + c.ident() + ":40: " + c.words(8)
			case "bash":
				args = fmt.Sprintf(`{"command":%s}`, jsonString("go test ./"+c.vocab[c.zipf.Uint64()]+"/..."))
				out = c.words(30)
				if c.r.Intn(50) == 0 {
					out += " dial tcp: connection refused"
				}
				if c.r.Intn(20) == 0 {
					isError, out = true, "the command timed out after 120s"
					errPart = `,"error":{"name":"ToolTimeoutError","code":"TOOL_TIMEOUT"}`
				}
			}
			add(core.EventToolCall, fmt.Sprintf(`{"turn":%d,"step":1,"callId":%q,"name":%q,"arguments":%s}`, turn, id, tool, jsonString(args)))
			add(core.EventToolResult, fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"r%s","role":"user","content":[{"type":"tool-result","toolCallId":%q,"content":[{"type":"text","text":%s}],"isError":%t}],"source":{"kind":"tool","callId":%q}}%s}`,
				turn, id, id, jsonString(out), isError, id, errPart))
		}
		add(core.EventStepEnd, fmt.Sprintf(`{"turn":%d,"step":1}`, turn))
		add(core.EventTurnEnd, fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, turn))
	}
	return events
}

// fillCorpus stores sessions×perSession events (each session in one
// append) and returns the file's size once checkpointed.
func fillCorpus(b *testing.B, st *Store, sessions, perSession int) int64 {
	ctx := context.Background()
	c := newCorpus(1)
	for i := 0; i < sessions; i++ {
		id := fmt.Sprintf("s%04d", i)
		h := storetest.Header(id)
		h.Cwd = "/work/" + c.vocab[c.zipf.Uint64()]
		if err := st.CreateSession(ctx, h); err != nil {
			b.Fatal(err)
		}
		if err := st.AppendEvents(ctx, id, c.log(perSession, 1764500000000+int64(i)*3_600_000)); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.catchUpIndex(ctx); err != nil { // the index lags the log
		b.Fatal(err)
	}
	if _, err := st.wdb.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(st.path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// BenchmarkSearch measures queries over 100,000 events in 300 sessions (a
// word, a phrase, tool:, error:, in rank and time order, 20 hits with
// their snippets), and reports the database's size with and without the
// index (the same events stored twice, the second time without it).
func BenchmarkSearch(b *testing.B) {
	const sessions, perSession = 300, 334
	dir := b.TempDir()
	st, err := Open(context.Background(), filepath.Join(dir, "search.db"), Options{Logger: quietLogger(), SyncNormal: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	start := time.Now()
	with := fillCorpus(b, st, sessions, perSession)
	fill := time.Since(start)
	plain, err := Open(context.Background(), filepath.Join(dir, "plain.db"), Options{Logger: quietLogger(), SyncNormal: true})
	if err != nil {
		b.Fatal(err)
	}
	plain.w.noIndex = true
	without := fillCorpus(b, plain, sessions, perSession)
	plain.Close()
	var docs, events int64
	st.rdb.QueryRow("SELECT count(*) FROM search_docs").Scan(&docs)
	st.rdb.QueryRow("SELECT count(*) FROM events").Scan(&events)
	b.Run("size", func(b *testing.B) {
		b.ReportMetric(float64(events), "events")
		b.ReportMetric(float64(docs), "docs")
		b.ReportMetric(float64(with)/1e6, "MB-indexed")
		b.ReportMetric(float64(without)/1e6, "MB-unindexed")
		b.ReportMetric(fill.Seconds(), "fill-s")
		b.ReportMetric(0, "ns/op")
	})

	ctx := context.Background()
	for _, tc := range []struct{ name, q, order string }{
		{"word", "config", OrderRank},
		{"word/time", "config", OrderTime},
		{"rare-word", newCorpus(1).vocab[2000], OrderRank},
		{"phrase", `"connection refused"`, OrderRank},
		{"identifier", "fmt.Sprintf", OrderRank},
		{"tool", "tool:grep", OrderRank},
		{"error", "error:TOOL_TIMEOUT", OrderRank},
		{"tool+word", "tool:bash refused", OrderRank},
	} {
		q, err := search.Parse(tc.q, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			hits := 0
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				page, err := st.Search(ctx, q, SearchOptions{Order: tc.order, Limit: 20})
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				hits = len(page.Hits)
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(hits), "hits")
		})
	}
}

// BenchmarkAppendSearchIndex measures durable appends (synchronous=FULL)
// of realistic events (messages, calls and results; the corpus's turns)
// with and without the search index, in the same run on the same file:
// one appender, and eight through the group commit. The index lags the
// log (searchlag.go): its transactions run beside the appends, and the
// lag left at the end is filed inside the timed run.
func BenchmarkAppendSearchIndex(b *testing.B) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(b.TempDir(), "append.db"), Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	run := 0
	for _, appenders := range []int{1, 8} {
		for _, index := range []bool{true, false} {
			b.Run(fmt.Sprintf("appenders=%d/index=%v", appenders, index), func(b *testing.B) {
				st.w.noIndex = !index
				defer func() { st.w.noIndex = false }()
				run++
				per := max(1, b.N/appenders)
				logs := make([][]core.Event, appenders)
				ids := make([]string, appenders)
				for g := range logs {
					ids[g] = fmt.Sprintf("a%d-%d", run, g)
					storetest.MustCreate(b, st, ids[g])
					logs[g] = newCorpus(int64(g)).log(per, 1764500000000)[:per]
				}
				lat := make([][]time.Duration, appenders)
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for g := 0; g < appenders; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range logs[g] {
							t0 := time.Now()
							if err := st.AppendEvents(ctx, ids[g], logs[g][i:i+1]); err != nil {
								b.Error(err)
								return
							}
							lat[g] = append(lat[g], time.Since(t0))
						}
					}()
				}
				wg.Wait()
				// The index lags the log: what it has not filed yet is
				// filed (and counted) here.
				if err := st.catchUpIndex(ctx); err != nil {
					b.Fatal(err)
				}
				elapsed := time.Since(start)
				var all []time.Duration
				for _, l := range lat {
					all = append(all, l...)
				}
				reportLatencies(b, all, per*appenders, elapsed)
			})
		}
	}
}
