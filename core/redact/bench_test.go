package redact_test

import (
	"fmt"
	"strings"
	"testing"

	"prism/core"
)

// BenchmarkFind: one string, as gitleaks was measured for the package doc
// (2 KB of ordinary code; a 30-byte sentence).
func BenchmarkFind(b *testing.B) {
	r := newRedactor(b)
	for _, tc := range []struct{ name, s string }{
		{"code-2KB", strings.Repeat("func main() { fmt.Println(\"hello world\") } // some ordinary code with a key variable\n", 25)},
		{"short", "The file greet.go has 13 lines."},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			for b.Loop() {
				r.Find(tc.s)
			}
		})
	}
}

// BenchmarkRedactEvents: a whole session of tool calls with ordinary
// arguments and outputs (a few secrets among them), per event.
func BenchmarkRedactEvents(b *testing.B) {
	r := newRedactor(b)
	l := &log{t: b}
	l.add(core.EventTurnStart, core.TurnStart{Turn: 1})
	l.add(core.EventUserMessage, core.NewUserMessage("u1", "Find why the tests fail and fix it."))
	code := strings.Repeat("func greet(name string) string { return \"Hello, \" + name }\n", 20)
	for i := range 1000 {
		id := fmt.Sprintf("call_%d", i)
		l.add(core.EventStepStart, core.StepBoundary{Turn: 1, Step: i})
		l.call(id, "read", fmt.Sprintf(`{"path":"greet/greet%d.go"}`, i))
		out := code
		if i%100 == 0 {
			out += "token=" + deepseekKey
		}
		l.result(id, out, map[string]any{"lines": 20, "path": fmt.Sprintf("greet/greet%d.go", i)})
		l.add(core.EventStepEnd, core.StepBoundary{Turn: 1, Step: i})
	}
	var bytes int64
	for _, e := range l.events {
		bytes += int64(len(e.Data))
	}
	b.SetBytes(bytes)
	b.ResetTimer()
	for b.Loop() {
		r.Session(core.SessionHeader{ID: "s"}, l.events)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(l.events))/1000, "µs/event")
}

// BenchmarkRedactSplitKey: one read of a 300-line file, its meta a string
// per line — with a 26-line private key in it (the joined pass over the
// sibling lines runs), and without (it does not).
func BenchmarkRedactSplitKey(b *testing.B) {
	r := newRedactor(b)
	for _, withKey := range []bool{false, true} {
		var lines []map[string]any
		var text strings.Builder
		for i := range 300 {
			l := fmt.Sprintf("\tfmt.Println(\"line %d of ordinary code\") // more words here", i)
			switch {
			case withKey && i == 100:
				l = "-----BEGIN RSA " + "PRIVATE KEY-----"
			case withKey && i > 100 && i < 125:
				l = strings.Repeat(fmt.Sprintf("Ab%02d", i), 16)
			case withKey && i == 125:
				l = "-----END RSA " + "PRIVATE KEY-----"
			}
			lines = append(lines, map[string]any{"number": i + 1, "text": l})
			fmt.Fprintf(&text, "%6d\t%s\n", i+1, l)
		}
		l := &log{t: b}
		l.call("c1", "read", `{"file_path":"main.go"}`)
		l.result("c1", text.String(), map[string]any{"path": "main.go", "offset": 1, "lines": lines, "totalLines": 300})
		name := "plain"
		if withKey {
			name = "key"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(l.events[1].Data)))
			for b.Loop() {
				r.Session(core.SessionHeader{ID: "s"}, l.events)
			}
		})
	}
}
