package tools_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/core/tools"
)

func TestGrepHappyPath(t *testing.T) {
	e := newEnv(t, tools.Options{})
	e.write("a.txt", "foo\nbar foo\nnothing\n")
	e.write("sub/b.go", "x foo\r\n")
	e.write(".hidden/c.txt", "foo\n")      // hidden: skipped, as ripgrep does
	e.write(".dot.txt", "foo\n")           // hidden file: skipped
	e.write("bin.dat", "foo\x00\n")        // binary: skipped
	e.write("sub/latin1.txt", "foo\xe9\n") // not UTF-8: a placeholder line

	o := e.call("grep", map[string]any{"pattern": "fo+"})
	want := "Found 4 matches\n\na.txt\nLine 1: foo\nLine 2: bar foo\n\nsub/b.go\nLine 1: x foo\n\nsub/latin1.txt\nLine 1: (line is not valid UTF-8)"
	if got := o.ok(t); got != want {
		t.Errorf("text:\n got %q\nwant %q", got, want)
	}
	files := `[{"path":"a.txt","matches":[{"lineNumber":1,"line":"foo"},{"lineNumber":2,"line":"bar foo"}]},
		{"path":"sub/b.go","matches":[{"lineNumber":1,"line":"x foo"}]},
		{"path":"sub/latin1.txt","matches":[{"lineNumber":1,"line":"(line is not valid UTF-8)"}]}]`
	jsonEq(t, "meta", o.proj.Meta, `{"shape":"matches","files":`+files+`,"truncated":false,"total":4}`)
	jsonEq(t, "call view", o.call, `{"card":"generic","title":"Grep fo+","kind":"search","rawInput":"fo+"}`)
	jsonEq(t, "result view", o.view, `{"card":"search","shape":"matches","files":`+files+`,"truncated":false,"total":4}`)
	if mode := e.reg.ExecutionMode("grep", map[string]any{"pattern": "x"}); mode != core.Exclusive {
		t.Error("grep must not be concurrency-safe (as in dsh)")
	}
	if tool, _ := e.reg.Get("grep"); tool.Timeout() != 30*time.Second {
		t.Errorf("grep timeout %v, want dsh's 30 s", tool.Timeout())
	}

	o = e.call("grep", map[string]any{"pattern": "foo", "path": "sub", "include": "*.go"})
	if got := o.ok(t); got != "Found 1 match\n\nsub/b.go\nLine 1: x foo" {
		t.Errorf("include text %q", got)
	}
	jsonEq(t, "include call view", o.call, `{"card":"generic","title":"Grep foo in sub (*.go)","kind":"search","rawInput":"foo"}`)
	// A file as the path, and an anchored include glob.
	e.call("grep", map[string]any{"pattern": "bar", "path": "a.txt"}).ok(t)
	if got := e.call("grep", map[string]any{"pattern": "foo", "include": "sub/*.{go,txt}"}).ok(t); !strings.HasPrefix(got, "Found 2 matches") {
		t.Errorf("anchored include: %q", got)
	}

	o = e.call("grep", map[string]any{"pattern": "zzz"})
	if got := o.ok(t); got != "No matches found" {
		t.Errorf("no match text %q", got)
	}
	jsonEq(t, "empty meta", o.proj.Meta, `{"shape":"matches","files":[],"truncated":false,"total":0}`)
	jsonEq(t, "empty view", o.view, `{"card":"search","shape":"matches","files":[],"truncated":false,"total":0}`)
}

func TestGrepBounds(t *testing.T) {
	e := newEnv(t, tools.Options{})
	t.Run("more than 250 matches", func(t *testing.T) {
		e.write("many.txt", numbered("hit ", 300))
		o := e.call("grep", map[string]any{"pattern": "hit", "path": "many.txt"})
		text := o.ok(t)
		if !strings.HasPrefix(text, "Found 250 of 300 matches\n\nmany.txt\nLine 1: hit 1\n") ||
			!strings.HasSuffix(text, "\nLine 250: hit 250\n\n(The complete result could not be saved; narrow pattern, path, or include to see more.)") {
			t.Errorf("capped text: %q … %q", text[:60], text[len(text)-140:])
		}
		var meta tools.SearchMatchesMeta
		if err := json.Unmarshal(o.proj.Meta, &meta); err != nil {
			t.Fatal(err)
		}
		if !meta.Truncated || meta.Total != 300 || len(meta.Files) != 1 || len(meta.Files[0].Matches) != 250 {
			t.Errorf("meta truncated=%v total=%d matches=%d", meta.Truncated, meta.Total, len(meta.Files[0].Matches))
		}
		var v tools.GrepValue
		o.value(t, &v)
		if len(v.Matches) != 300 {
			t.Errorf("the canonical value keeps %d matches, want all 300", len(v.Matches))
		}
	})
	t.Run("long line preview", func(t *testing.T) {
		e.write("wide.txt", "needle "+strings.Repeat("é", 1500)+"\n")
		var meta tools.SearchMatchesMeta
		o := e.call("grep", map[string]any{"pattern": "needle", "path": "wide.txt"})
		if err := json.Unmarshal(o.proj.Meta, &meta); err != nil {
			t.Fatal(err)
		}
		line := meta.Files[0].Matches[0].Line
		// 7 bytes of "needle ", then whole 2-byte characters up to 2000 bytes.
		if want := "needle " + strings.Repeat("é", 996) + " (line truncated)"; line != want {
			t.Errorf("preview has %d bytes: %q…", len(line), line[len(line)-30:])
		}
		if !strings.Contains(o.ok(t), "Line 1: "+line) {
			t.Error("the text and the card disagree on the preview")
		}
	})
	t.Run("meta capped at 64 KiB", func(t *testing.T) {
		long := strings.Repeat("m", 1900)
		e.write("fat/one.txt", strings.Repeat(long+"\n", 250))
		for i := range 250 {
			e.write(fmt.Sprintf("fat/many/f%03d.txt", i), long+"\n")
		}
		for _, path := range []string{"fat/one.txt", "fat/many"} {
			o := e.call("grep", map[string]any{"pattern": "m+", "path": path})
			o.ok(t)
			if n := len(o.proj.Meta); n > tools.SearchMetaMaxBytes {
				t.Errorf("%s: meta is %d bytes, over %d", path, n, tools.SearchMetaMaxBytes)
			}
			var meta tools.SearchMatchesMeta
			if err := json.Unmarshal(o.proj.Meta, &meta); err != nil {
				t.Fatal(err)
			}
			kept := 0
			for _, f := range meta.Files {
				kept += len(f.Matches)
			}
			if !meta.Truncated || meta.Total != 250 || kept == 0 || kept >= 250 {
				t.Errorf("%s: truncated=%v total=%d kept=%d", path, meta.Truncated, meta.Total, kept)
			}
			if v, ok := o.view.(*core.SearchMatchesView); !ok || !v.Truncated {
				t.Errorf("%s: view %T", path, o.view)
			}
		}
	})
}

func TestGrepFailures(t *testing.T) {
	e := newEnv(t, tools.Options{})
	e.write("a.txt", "x\n")
	for _, c := range []struct {
		args    map[string]any
		message string
		info    *core.ErrorInfo
	}{
		{map[string]any{"pattern": ""}, "pattern must be a non-empty string", nil},
		{map[string]any{"pattern": "x", "path": " "}, "path must be a non-empty string when given", nil},
		{map[string]any{"pattern": "x", "include": ""}, "include must be a non-empty glob when given", nil},
		{map[string]any{"pattern": "x", "include": "!*.go"}, `include must be a positive glob filter; negated patterns ("!…") are not supported`, nil},
		{map[string]any{"pattern": "x", "include": "*.go,*.ts"}, "include must be one glob, not a comma-separated list (use {a,b} alternation instead)", nil},
		{map[string]any{"pattern": "x", "include": "[a"}, `grep pattern rejected: error parsing glob "[a"`, searchErr("SEARCH_INVALID_PATTERN")},
		{map[string]any{"pattern": "x", "path": "missing"}, `grep search failed: "missing" was not found`, searchErr("SEARCH_FAILED")},
	} {
		e.call("grep", c.args).fails(t, c.message, c.info)
	}
	o := e.call("grep", map[string]any{"pattern": "a("})
	if f, ok := o.res.(*core.Failure); !ok || f.Error.Info == nil || f.Error.Info.Code != "SEARCH_INVALID_PATTERN" ||
		!strings.HasPrefix(f.Error.Message, "grep pattern rejected: regex parse error: ") {
		t.Errorf("invalid regex: %s", o.text(t))
	}
	// The brace alternation is one glob, not a list.
	e.call("grep", map[string]any{"pattern": "x", "include": "*.{txt,go}"}).ok(t)
}

func TestGlob(t *testing.T) {
	e := newEnv(t, tools.Options{})
	base := time.Now().Add(-time.Hour)
	for i, rel := range []string{"src/b.ts", "a.ts", "src/c.js", ".hidden.ts", ".git/x.ts", "src/.git/y.ts"} {
		p := e.write(rel, "x")
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	o := e.call("glob", map[string]any{"pattern": "*.ts"})
	// Oldest first; hidden files included; VCS metadata excluded.
	if got, want := o.ok(t), "src/b.ts\na.ts\n.hidden.ts"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	jsonEq(t, "meta", o.proj.Meta, `{"shape":"paths","paths":["src/b.ts","a.ts",".hidden.ts"],"truncated":false,"total":3}`)
	jsonEq(t, "call view", o.call, `{"card":"generic","title":"Glob *.ts","kind":"search","rawInput":"*.ts"}`)
	jsonEq(t, "result view", o.view, `{"card":"search","shape":"paths","paths":["src/b.ts","a.ts",".hidden.ts"],"truncated":false,"total":3}`)
	var v tools.GlobValue
	o.value(t, &v)
	if v.Root != "." {
		t.Errorf("root %q", v.Root)
	}
	if mode := e.reg.ExecutionMode("glob", map[string]any{"pattern": "x"}); mode != core.Exclusive {
		t.Error("glob must not be concurrency-safe (as in dsh)")
	}

	if got := e.call("glob", map[string]any{"pattern": "src/*"}).ok(t); got != "src/b.ts\nsrc/c.js" {
		t.Errorf("anchored pattern: %q", got)
	}
	o = e.call("glob", map[string]any{"pattern": "*", "path": "src"})
	if got := o.ok(t); got != "src/b.ts\nsrc/c.js" {
		t.Errorf("path: %q", got)
	}
	jsonEq(t, "path call view", o.call, `{"card":"generic","title":"Glob * in src","kind":"search","rawInput":"*"}`)
	if got := e.call("glob", map[string]any{"pattern": "*", "path": ".git"}).ok(t); got != "No files found" {
		t.Errorf("inside VCS metadata: %q", got)
	}
	o = e.call("glob", map[string]any{"pattern": "*.none"})
	if got := o.ok(t); got != "No files found" {
		t.Errorf("no match: %q", got)
	}
	jsonEq(t, "empty view", o.view, `{"card":"search","shape":"paths","paths":[],"truncated":false,"total":0}`)

	e.call("glob", map[string]any{"pattern": " "}).fails(t, "pattern must be a non-empty string", nil)
	e.call("glob", map[string]any{"pattern": "*", "path": ""}).fails(t, "path must be a non-empty string when given", nil)
	e.call("glob", map[string]any{"pattern": "[x"}).fails(t, `glob pattern rejected: error parsing glob "[x"`, searchErr("SEARCH_INVALID_PATTERN"))
	e.call("glob", map[string]any{"pattern": "*", "path": "nowhere"}).fails(t, `glob search failed: "nowhere" was not found`, searchErr("SEARCH_FAILED"))
}

func TestGlobBounds(t *testing.T) {
	e := newEnv(t, tools.Options{})
	base := time.Now().Add(-time.Hour)
	for i := range 150 {
		p := e.write(fmt.Sprintf("many/f%03d.txt", i), "x")
		mt := base.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	o := e.call("glob", map[string]any{"pattern": "*.txt"})
	text := o.ok(t)
	if !strings.HasPrefix(text, "many/f000.txt\nmany/f001.txt\n") ||
		!strings.HasSuffix(text, "\nmany/f099.txt\n\n(Showing 100 of 150 paths. The complete result could not be saved; narrow pattern or path to see more.)") {
		t.Errorf("capped text: …%q", text[len(text)-160:])
	}
	var meta tools.SearchPathsMeta
	if err := json.Unmarshal(o.proj.Meta, &meta); err != nil {
		t.Fatal(err)
	}
	if !meta.Truncated || meta.Total != 150 || len(meta.Paths) != 100 || meta.Paths[99] != "many/f099.txt" {
		t.Errorf("meta truncated=%v total=%d paths=%d", meta.Truncated, meta.Total, len(meta.Paths))
	}

	// 100 paths of ~770 bytes serialize past 64 KiB: trailing paths drop.
	deep := strings.Repeat("d", 250) + "/" + strings.Repeat("e", 250) + "/" + strings.Repeat("f", 250)
	for i := range 100 {
		e.write(fmt.Sprintf("%s/g%03d.log", deep, i), "x")
	}
	o = e.call("glob", map[string]any{"pattern": "*.log"})
	if !strings.HasSuffix(o.ok(t), "g099.log") {
		t.Error("the text lists every path when they fit the count cap")
	}
	if n := len(o.proj.Meta); n > tools.SearchMetaMaxBytes {
		t.Errorf("meta is %d bytes, over %d", n, tools.SearchMetaMaxBytes)
	}
	if err := json.Unmarshal(o.proj.Meta, &meta); err != nil {
		t.Fatal(err)
	}
	if !meta.Truncated || meta.Total != 100 || len(meta.Paths) >= 100 || len(meta.Paths) < 70 {
		t.Errorf("byte-capped meta: truncated=%v total=%d paths=%d", meta.Truncated, meta.Total, len(meta.Paths))
	}
}

func TestSearchPresentersOnLoggedResults(t *testing.T) {
	e := newEnv(t, tools.Options{})
	content := core.Text("Found 1 match\n\na.ts\nLine 3: foo")
	present := func(name, meta string, isError bool) core.ResultView {
		r := core.ToolResult{Content: content, IsError: isError}
		if meta != "" {
			r.Meta = json.RawMessage(meta)
		}
		return e.reg.PresentResult(name, `{"pattern":"foo"}`, r)
	}
	matches := `{"shape":"matches","files":[{"path":"a.ts","matches":[{"lineNumber":3,"line":"foo"}]}],"truncated":true,"total":42}`
	paths := `{"shape":"paths","paths":["a.ts","b.ts"],"truncated":false,"total":2}`
	jsonEq(t, "dsh grep", present("grep", matches, false), `{"card":"search","shape":"matches",
		"files":[{"path":"a.ts","matches":[{"lineNumber":3,"line":"foo"}]}],"truncated":true,"total":42}`)
	jsonEq(t, "dsh glob", present("glob", paths, false), `{"card":"search","shape":"paths","paths":["a.ts","b.ts"],"truncated":false,"total":2}`)

	generic := `{"card":"generic","content":[{"type":"text","text":"Found 1 match\n\na.ts\nLine 3: foo"}]}`
	for name, c := range map[string]struct{ tool, meta string }{
		"grep without meta":        {"grep", ""},
		"grep paths shape":         {"grep", paths},
		"glob matches shape":       {"glob", matches},
		"older kind discriminant":  {"grep", `{"kind":"matches","files":[],"truncated":false,"total":0}`},
		"total missing":            {"grep", `{"shape":"matches","files":[],"truncated":false}`},
		"truncated not a boolean":  {"glob", `{"shape":"paths","paths":[],"truncated":"no","total":0}`},
		"negative total":           {"glob", `{"shape":"paths","paths":[],"truncated":false,"total":-1}`},
		"line number not a number": {"grep", `{"shape":"matches","files":[{"path":"a","matches":[{"lineNumber":"3","line":"x"}]}],"truncated":false,"total":1}`},
		"file without path":        {"grep", `{"shape":"matches","files":[{"matches":[]}],"truncated":false,"total":1}`},
		"empty path":               {"grep", `{"shape":"matches","files":[{"path":"","matches":[]}],"truncated":false,"total":1}`},
		"path not a string":        {"glob", `{"shape":"paths","paths":[1],"truncated":false,"total":1}`},
		"meta a string":            {"glob", `"paths"`},
	} {
		jsonEq(t, name, present(c.tool, c.meta, false), generic)
	}
	jsonEq(t, "grep error", present("grep", matches, true), generic)
}
