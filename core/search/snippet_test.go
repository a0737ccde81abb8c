package search_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/search"
)

func marked(s search.Snippet) string {
	var b strings.Builder
	for _, p := range s.Parts() {
		if p.Mark {
			b.WriteString("[" + p.Text + "]")
		} else {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func mustParse(t *testing.T, q string) *search.Query {
	t.Helper()
	p, err := search.Parse(q, now)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSnippet(t *testing.T) {
	long := strings.Repeat("lorem ipsum ", 40)
	for _, tc := range []struct {
		name, q string
		secs    []search.Section
		want    string
		label   string
	}{
		{"word", "config", []search.Section{{Label: "arguments", Text: "path: config.yaml"}}, "path: [config].yaml", "arguments"},
		{"identifier as typed", "config.yaml", []search.Section{{Label: "arguments", Text: "path: ./config.yaml\nlimit: 20"}}, "path: ./[config.yaml] limit: 20", "arguments"},
		{"phrase", `"rm -rf"`, []search.Section{{Label: "arguments", Text: "command: rm  -rf /tmp/x; rm x"}}, "command: [rm -rf] /tmp/x; rm x", "arguments"},
		{"prefix", "conf*", []search.Section{{Label: "text", Text: "Configure the CONFIG"}}, "[Configure] the [CONFIG]", "text"},
		{"best section", "timeout", []search.Section{{Label: "tool", Text: "bash"}, {Label: "result", Text: "timeout after 5s: timeout"}}, "[timeout] after 5s: [timeout]", "result"},
		{"no match: the arguments", "tool:bash", []search.Section{{Col: search.ColName, Label: "tool", Text: "bash"}, {Col: search.ColBody, Label: "arguments", Text: "command: ls"}, {Col: search.ColMore, Label: "result", Text: "a.go"}}, "command: ls", "arguments"},
		{"no match: a failure's result", "error:", []search.Section{{Col: search.ColName, Label: "tool", Text: "bash"}, {Col: search.ColBody, Label: "arguments", Text: "command: ls"}, {Col: search.ColMore, Label: "result", Text: "timed out"}, {Col: search.ColErr, Label: "error", Text: "TOOL_TIMEOUT"}}, "timed out", "result"},
		{"window", "needle", []search.Section{{Label: "text", Text: long + "the needle here " + long}},
			"…ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum the [needle] here lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum…", "text"},
		{"hostile text stays text", "mark", []search.Section{{Label: "result", Text: "<mark>x</mark> \u202Eevil\x1b[31m mark"}}, "<[mark]>x</[mark]> \uFFFDevil\uFFFD[31m [mark]", "result"},
		{"non-Latin", "数据库", []search.Section{{Label: "text", Text: "连接数据库失败"}}, "连接[数据库]失败", "text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := search.MakeSnippet(tc.secs, mustParse(t, tc.q).Highlights())
			if got := marked(s); got != tc.want {
				t.Errorf("snippet %q, want %q", got, tc.want)
			}
			if s.Label != tc.label {
				t.Errorf("label %q, want %q", s.Label, tc.label)
			}
		})
	}
}

func FuzzSnippet(f *testing.F) {
	f.Add("path: config.yaml\n\n\tand more", "config")
	f.Add("<mark>\x00\u202e数据</mark>", "mark 数")
	f.Add(strings.Repeat("ab ", 200)+"needle", `"ab needle"`)
	f.Fuzz(func(t *testing.T, text, q string) {
		p, err := search.Parse(q, now)
		if err != nil {
			return
		}
		s := search.MakeSnippet([]search.Section{{Label: "text", Text: text}}, p.Highlights())
		if !utf8.ValidString(s.Text) {
			t.Fatalf("snippet %q is not valid UTF-8", s.Text)
		}
		n := utf8.RuneCountInString(s.Text)
		at := 0
		for _, h := range s.Highlights {
			if h[0] < at || h[1] <= h[0] || h[1] > n {
				t.Fatalf("highlights %v out of order or range in %q", s.Highlights, s.Text)
			}
			at = h[1]
		}
		var joined strings.Builder
		for _, part := range s.Parts() {
			joined.WriteString(part.Text)
		}
		if joined.String() != s.Text {
			t.Fatalf("parts %q do not rebuild %q", joined.String(), s.Text)
		}
		for _, r := range s.Text {
			if r < 0x20 || r == 0x7f || r == '\u202e' {
				t.Fatalf("snippet %q holds control %U", s.Text, r)
			}
		}
	})
}

func TestExtract(t *testing.T) {
	ev := func(typ, data string) *core.Event {
		e := &core.Event{Type: typ, Data: []byte(data)}
		if core.IsSurfaceType(typ) {
			e.SurfaceOp = core.AppendOp()
		}
		return e
	}
	for _, tc := range []struct {
		name string
		e    *core.Event
		want search.Part
	}{
		{"user", ev(core.EventUserMessage, `{"id":"m","role":"user","content":[{"type":"text","text":"fix greet_test.go"}],"source":{"kind":"user"}}`),
			search.Part{Role: search.RoleDoc, Kind: search.KindUser, Sections: []search.Section{{Col: search.ColBody, Label: "text", Text: "fix greet_test.go"}}}},
		{"context", ev(core.EventUserMessage, `{"id":"m","role":"user","content":[{"type":"text","text":"note"}],"source":{"kind":"plugin","plugin":"p"}}`),
			search.Part{Role: search.RoleDoc, Kind: search.KindContext, Sections: []search.Section{{Col: search.ColBody, Label: "text", Text: "note"}}}},
		{"assistant", ev(core.EventAssistantMessage, `{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[{"type":"reasoning","text":"think"},{"type":"text","text":"done"},{"type":"tool-call","id":"c","name":"read","arguments":"{}"}],"source":{"kind":"model"}}}`),
			search.Part{Role: search.RoleDoc, Kind: search.KindAssistant, Sections: []search.Section{{Col: search.ColBody, Label: "text", Text: "done"}, {Col: search.ColMore, Label: "reasoning", Text: "think"}}}},
		{"call", ev(core.EventToolCall, `{"turn":1,"step":1,"callId":"c1","name":"edit","arguments":"{\"path\":\"a.go\",\"edits\":[{\"old\":\"x\\ny\",\"new\":\"z\"}],\"n\":1.50}"}`),
			search.Part{Role: search.RoleCall, Kind: search.KindCall, CallID: "c1", Tool: "edit", Sections: []search.Section{{Col: search.ColName, Label: "tool", Text: "edit"}, {Col: search.ColBody, Label: "arguments", Text: "path: a.go\nold: x\ny\nnew: z\nn: 1.50"}}}},
		{"call with raw arguments", ev(core.EventToolCall, `{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{not json"}`),
			search.Part{Role: search.RoleCall, Kind: search.KindCall, CallID: "c1", Tool: "bash", Sections: []search.Section{{Col: search.ColName, Label: "tool", Text: "bash"}, {Col: search.ColBody, Label: "arguments", Text: "{not json"}}}},
		{"result", ev(core.EventToolResult, `{"turn":1,"step":1,"message":{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"took too long"}],"isError":true}],"source":{"kind":"tool","callId":"c1"}},"error":{"name":"ToolTimeoutError","code":"TOOL_TIMEOUT"}}`),
			search.Part{Role: search.RoleResult, Kind: search.KindCall, CallID: "c1", IsError: true, Code: "TOOL_TIMEOUT", Sections: []search.Section{{Col: search.ColMore, Label: "result", Text: "took too long"}, {Col: search.ColErr, Label: "error", Text: "ToolTimeoutError TOOL_TIMEOUT"}}}},
		{"title", ev(core.EventSessionTitle, `{"title":"Fix the tests"}`),
			search.Part{Role: search.RoleDoc, Kind: search.KindTitle, Sections: []search.Section{{Col: search.ColName, Label: "title", Text: "Fix the tests"}}}},
		{"failed turn", ev(core.EventTurnEnd, `{"turn":1,"reason":{"kind":"error","error":{"message":"rate limited","code":"RATE_LIMIT"}}}`),
			search.Part{Role: search.RoleDoc, Kind: search.KindEvent, IsError: true, Code: "RATE_LIMIT", Sections: []search.Section{{Col: search.ColBody, Label: "failure", Text: "rate limited"}, {Col: search.ColErr, Label: "error", Text: "RATE_LIMIT"}}}},
		{"chunk", ev(core.EventAssistantChunk, `{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}`), search.Part{}},
		{"malformed", ev(core.EventUserMessage, `[1]`), search.Part{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, search.Extract(tc.e)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
