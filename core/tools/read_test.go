package tools_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"prism/core"
	"prism/core/tools"
)

func TestReadHappyPath(t *testing.T) {
	e := newEnv(t, tools.Options{})
	e.write("main.go", "package main\n\nfunc main() {}\n")
	p := e.path("main.go")

	o := e.call("read", map[string]any{"file_path": "main.go"})
	body := "1: package main\n2: \n3: func main() {}\n\n(End of file - total 3 lines)"
	if got, want := o.ok(t), "<path>"+p+"</path>\n<type>file</type>\n<content>\n"+body+"\n</content>"; got != want {
		t.Errorf("text:\n got %q\nwant %q", got, want)
	}
	lines := `[{"number":1,"text":"package main"},{"number":2,"text":""},{"number":3,"text":"func main() {}"}]`
	var v tools.ReadValue
	o.value(t, &v)
	jsonEq(t, "value", v, `{"path":`+jsonString(p)+`,"offset":1,"lines":`+lines+`,"totalLines":3}`)
	jsonEq(t, "meta", o.proj.Meta, `{"path":`+jsonString(p)+`,"offset":1,"lines":`+lines+`,"totalLines":3,"lang":"go"}`)
	jsonEq(t, "call view", o.call,
		`{"card":"generic","title":"Read main.go","kind":"read","locations":[{"path":"main.go","line":1}]}`)
	jsonEq(t, "result view", o.view, `{"card":"read","path":`+jsonString(p)+`,"offset":1,"lines":`+lines+
		`,"totalLines":3,"lang":"go","content":[{"type":"text","text":`+jsonString(body)+`}]}`)
	if mode := e.reg.ExecutionMode("read", map[string]any{"file_path": "main.go"}); mode != core.Parallel {
		t.Errorf("read is not concurrency-safe (mode %v)", mode)
	}
}

func TestReadWindowAndTitles(t *testing.T) {
	e := newEnv(t, tools.Options{})
	e.write("ten.txt", numbered("l", 10))
	p := e.path("ten.txt")

	o := e.call("read", map[string]any{"file_path": "ten.txt", "offset": 3, "limit": 2})
	want := "<path>" + p + "</path>\n<type>file</type>\n<content>\n3: l3\n4: l4\n\n" +
		"(Showing lines 3-4 of 10. Use offset=5 to continue.)\n</content>"
	if got := o.ok(t); got != want {
		t.Errorf("text:\n got %q\nwant %q", got, want)
	}
	jsonEq(t, "call view", o.call,
		`{"card":"generic","title":"Read ten.txt (3 - 4)","kind":"read","locations":[{"path":"ten.txt","line":3}]}`)

	o = e.call("read", map[string]any{"file_path": "ten.txt", "offset": 9})
	if got := o.ok(t); !strings.HasSuffix(got, "9: l9\n10: l10\n\n(End of file - total 10 lines)\n</content>") {
		t.Errorf("text from offset 9: %q", got)
	}
	jsonEq(t, "call view", o.call,
		`{"card":"generic","title":"Read ten.txt (from line 9)","kind":"read","locations":[{"path":"ten.txt","line":9}]}`)
}

func TestReadBounds(t *testing.T) {
	e := newEnv(t, tools.Options{})

	t.Run("more than 2000 lines", func(t *testing.T) {
		e.write("long.txt", numbered("", 2500))
		o := e.call("read", map[string]any{"file_path": "long.txt"})
		text := o.ok(t)
		if !strings.HasSuffix(text, "\n2000: 2000\n\n(Showing lines 1-2000 of 2500. Use offset=2001 to continue.)\n</content>") {
			t.Errorf("footer: %q", text[len(text)-120:])
		}
		var v tools.ReadValue
		o.value(t, &v)
		if len(v.Lines) != 2000 || v.TotalLines != 2500 {
			t.Errorf("lines %d totalLines %d, want 2000 of 2500", len(v.Lines), v.TotalLines)
		}
		e.call("read", map[string]any{"file_path": "long.txt", "limit": 2001}).
			fails(t, "limit must be less than or equal to 2000", nil)
	})

	t.Run("long line", func(t *testing.T) {
		e.write("wide.txt", strings.Repeat("x", 2500)+"\n"+strings.Repeat("é", 2001)+"\nshort\n")
		var v tools.ReadValue
		e.call("read", map[string]any{"file_path": "wide.txt"}).value(t, &v)
		if want := strings.Repeat("x", 2000) + "... (line truncated to 2000 chars)"; v.Lines[0].Text != want {
			t.Errorf("line 1 has %d bytes, want the 2000-char cut", len(v.Lines[0].Text))
		}
		if want := strings.Repeat("é", 2000) + "... (line truncated to 2000 chars)"; v.Lines[1].Text != want {
			t.Errorf("line 2 is not cut at 2000 characters: %d bytes", len(v.Lines[1].Text))
		}
		if v.Lines[2].Text != "short" || v.TotalLines != 3 {
			t.Errorf("line 3 %q, totalLines %d", v.Lines[2].Text, v.TotalLines)
		}
	})

	t.Run("more than 50 KiB", func(t *testing.T) {
		line := strings.Repeat("y", 99)
		e.write("big.txt", strings.Repeat(line+"\n", 1000))
		o := e.call("read", map[string]any{"file_path": "big.txt"})
		text := o.ok(t)
		// 99 bytes for the first line, 100 (with its separator) for each
		// later one: 512 lines fit in 51,200 bytes.
		if !strings.HasSuffix(text, "\n\n(Output capped. Showing lines 1-512. Use offset=513 to continue.)\n</content>") {
			t.Errorf("footer: %q", text[len(text)-100:])
		}
		var v tools.ReadValue
		o.value(t, &v)
		if len(v.Lines) != 512 || v.TotalLines != 1000 {
			t.Errorf("lines %d totalLines %d, want 512 of 1000", len(v.Lines), v.TotalLines)
		}
		// The cap counts the selected lines and their separators, not the
		// "N: " prefixes.
		size := len(v.Lines) - 1
		for _, l := range v.Lines {
			size += len(l.Text)
		}
		if size > tools.ReadMaxBytes {
			t.Errorf("selected lines are %d bytes, over %d", size, tools.ReadMaxBytes)
		}
	})
}

func TestReadEdgeCases(t *testing.T) {
	e := newEnv(t, tools.Options{})

	e.write("empty.txt", "")
	o := e.call("read", map[string]any{"file_path": "empty.txt"})
	if want := "<path>" + e.path("empty.txt") + "</path>\n<type>file</type>\n<content>\n(End of file - total 0 lines)\n</content>"; o.ok(t) != want {
		t.Errorf("empty file: %q", o.text(t))
	}
	jsonEq(t, "empty meta", o.proj.Meta, `{"path":`+jsonString(e.path("empty.txt"))+`,"offset":1,"lines":[],"totalLines":0}`)
	jsonEq(t, "empty result view", o.view, `{"card":"read","path":`+jsonString(e.path("empty.txt"))+
		`,"offset":1,"lines":[],"totalLines":0,"content":[{"type":"text","text":"(End of file - total 0 lines)"}]}`)

	e.write("crlf.txt", "a\r\nb\r\n")
	var v tools.ReadValue
	e.call("read", map[string]any{"file_path": "crlf.txt"}).value(t, &v)
	jsonEq(t, "crlf lines", v.Lines, `[{"number":1,"text":"a"},{"number":2,"text":"b"}]`)

	e.write("two.txt", "1\n2")
	e.call("read", map[string]any{"file_path": "two.txt", "offset": 5}).
		fails(t, `offset 5 is out of range for "`+e.path("two.txt")+`" (2 lines)`, fsErr("FS_NOT_FOUND"))
	e.call("read", map[string]any{"file_path": "two.txt", "offset": 0}).fails(t, "offset must be a positive integer", nil)
	e.call("read", map[string]any{"file_path": "two.txt", "limit": 1.5}).fails(t, "limit must be a positive integer", nil)
	e.call("read", map[string]any{"file_path": " "}).fails(t, "file_path must be a non-empty string", nil)
	e.call("read", map[string]any{"file_path": "nope.txt"}).
		fails(t, `cannot read "`+e.path("nope.txt")+`": not found`, fsErr("FS_NOT_FOUND"))
	if err := os.Mkdir(e.path("dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.call("read", map[string]any{"file_path": "dir"}).
		fails(t, `cannot read "`+e.path("dir")+`": not a regular file`, fsErr("FS_NOT_REGULAR_FILE"))
	e.write("bin.dat", "abc\x00def")
	e.call("read", map[string]any{"file_path": "bin.dat"}).
		fails(t, `cannot read "`+e.path("bin.dat")+`": binary file`, fsErr("FS_NOT_TEXT"))
	e.write("latin1.txt", "caf\xe9\n")
	e.call("read", map[string]any{"file_path": "latin1.txt"}).
		fails(t, `cannot read "`+e.path("latin1.txt")+`": invalid UTF-8 text`, fsErr("FS_NOT_TEXT"))
	// A multi-byte character split across the reader's chunks stays valid.
	e.write("split.txt", strings.Repeat("a", 64*1024-1)+"é\n")
	e.call("read", map[string]any{"file_path": "split.txt"}).ok(t)
	// An invalid argument is refused by the schema before the body runs.
	e.call("read", map[string]any{"file_path": 7}).fails(t, `invalid arguments: "file_path" must be a string`,
		&core.ErrorInfo{Name: "ToolArgsError", Code: "INVALID_ARGS"})
}

func TestReadResultPresenter(t *testing.T) {
	e := newEnv(t, tools.Options{})
	envelope := "<path>/w/app.ts</path>\n<type>file</type>\n<content>\n42: hello\n\n(Showing lines 42-42 of 80. Use offset=43 to continue.)\n</content>"
	meta := `{"path":"/w/app.ts","offset":42,"lines":[{"number":42,"text":"hello"}],"totalLines":80,"lang":"ts"}`
	args := `{"file_path":"app.ts","offset":42,"limit":1}`
	present := func(meta string, isError bool, content core.Content) core.ResultView {
		r := core.ToolResult{Content: content, IsError: isError}
		if meta != "" {
			r.Meta = json.RawMessage(meta)
		}
		return e.reg.PresentResult("read", args, r)
	}
	// A read result as an imported dsh log has it.
	jsonEq(t, "dsh read", present(meta, false, core.Text(envelope)), `{"card":"read","path":"/w/app.ts","offset":42,
		"lines":[{"number":42,"text":"hello"}],"totalLines":80,"lang":"ts",
		"content":[{"type":"text","text":"42: hello\n\n(Showing lines 42-42 of 80. Use offset=43 to continue.)"}]}`)

	generic := `{"card":"generic","content":[{"type":"text","text":` + jsonString(envelope) + `}]}`
	for name, m := range map[string]string{
		"no meta":                 "",
		"not an object":           `[1]`,
		"no offset (older dsh)":   `{"path":"/w/app.ts","lines":[{"number":42,"text":"hello"}],"totalLines":80}`,
		"line before offset":      `{"path":"/w/app.ts","offset":43,"lines":[{"number":42,"text":"hello"}],"totalLines":80}`,
		"line past totalLines":    `{"path":"/w/app.ts","offset":42,"lines":[{"number":42,"text":"hello"}],"totalLines":41}`,
		"fractional line number":  `{"path":"/w/app.ts","offset":1,"lines":[{"number":1.5,"text":"hello"}],"totalLines":80}`,
		"lines not increasing":    `{"path":"/w/app.ts","offset":1,"lines":[{"number":2,"text":"a"},{"number":2,"text":"b"}],"totalLines":80}`,
		"text not a string":       `{"path":"/w/app.ts","offset":42,"lines":[{"number":42,"text":7}],"totalLines":80}`,
		"lang not a string":       `{"path":"/w/app.ts","offset":42,"lines":[],"totalLines":80,"lang":1}`,
		"negative totalLines":     `{"path":"/w/app.ts","offset":1,"lines":[],"totalLines":-1}`,
		"path missing":            `{"offset":1,"lines":[],"totalLines":0}`,
		"huge number":             `{"path":"/w/app.ts","offset":1e300,"lines":[],"totalLines":1e300}`,
		"null lines":              `{"path":"/w/app.ts","offset":1,"lines":null,"totalLines":0}`,
		"deeply wrong line shape": `{"path":"/w/app.ts","offset":1,"lines":[[1,"a"]],"totalLines":1}`,
	} {
		jsonEq(t, name, present(m, false, core.Text(envelope)), generic)
	}
	// Not the envelope, several blocks, or an error: the generic card.
	jsonEq(t, "plain text", present(meta, false, core.Text("hello")), `{"card":"generic","content":[{"type":"text","text":"hello"}]}`)
	twoBlocks := core.Content{&core.TextBlock{Text: envelope}, &core.TextBlock{Text: "x"}}
	if _, ok := present(meta, false, twoBlocks).(*core.GenericResultView); !ok {
		t.Error("two blocks: want the generic card")
	}
	if _, ok := present(meta, true, core.Text(envelope)).(*core.GenericResultView); !ok {
		t.Error("error result: want the generic card")
	}
	// Obsolete arguments (file_path not a string) present generically too.
	if v, ok := e.reg.PresentResult("read", `{"file_path":3}`, core.ToolResult{Content: core.Text(envelope), Meta: json.RawMessage(meta)}).(*core.GenericResultView); !ok {
		t.Errorf("invalid args: got %T", v)
	}
}
