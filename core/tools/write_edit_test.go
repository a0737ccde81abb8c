package tools_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"prism/core"
	"prism/core/tools"
)

func envelope(path, verb string) string {
	return "<path>" + path + "</path>\n<type>file</type>\n<content>\n" + verb + " file\n</content>"
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestWriteCreate(t *testing.T) {
	e := newEnv(t, tools.Options{})
	o := e.call("write", map[string]any{"file_path": "sub/new.txt", "content": "hello\nworld\n"})
	if got, want := o.ok(t), envelope(e.path("sub/new.txt"), "Created"); got != want {
		t.Errorf("text:\n got %q\nwant %q", got, want)
	}
	if got := e.read("sub/new.txt"); got != "hello\nworld\n" {
		t.Errorf("file content %q", got)
	}
	if m := mode(t, e.path("sub/new.txt")); m != 0o644 {
		t.Errorf("new file mode %v, want 0644", m)
	}
	var v tools.WriteValue
	o.value(t, &v)
	jsonEq(t, "value", v, `{"path":`+jsonString(e.path("sub/new.txt"))+`,"operation":"create","before":null,"after":"hello\nworld\n"}`)
	jsonEq(t, "meta", o.proj.Meta, `{"diffs":[]}`)
	jsonEq(t, "call view", o.call, `{"card":"diff","title":"Write sub/new.txt",
		"diffs":[{"path":"sub/new.txt","oldText":null,"newText":"hello\nworld\n"}],"locations":[{"path":"sub/new.txt"}]}`)
	// A create has no hunks: the card shows the whole text from the arguments.
	jsonEq(t, "result view", o.view, `{"card":"diff","title":"Write sub/new.txt",
		"diffs":[{"path":"sub/new.txt","oldText":null,"newText":"hello\nworld\n"}]}`)
	entries, err := os.ReadDir(e.path("sub"))
	if err != nil || len(entries) != 1 {
		t.Errorf("sub/ holds %d entries (%v), want only new.txt: no temporary file left", len(entries), err)
	}
}

func TestWriteOverwriteKeepsModeAndDiffs(t *testing.T) {
	e := newEnv(t, tools.Options{})
	p := e.write("f.txt", numbered("l", 10))
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	after := strings.Replace(numbered("l", 10), "l5\n", "L5\n", 1)
	o := e.call("write", map[string]any{"file_path": "f.txt", "content": after})
	if got, want := o.ok(t), envelope(p, "Updated"); got != want {
		t.Errorf("text %q", got)
	}
	if e.read("f.txt") != after {
		t.Error("file not replaced")
	}
	if m := mode(t, p); m != 0o600 {
		t.Errorf("mode %v, want the kept 0600", m)
	}
	hunk := `{"path":"f.txt","oldText":"l2\nl3\nl4\nl5\nl6\nl7\nl8","newText":"l2\nl3\nl4\nL5\nl6\nl7\nl8","oldStart":2,"newStart":2}`
	jsonEq(t, "meta", o.proj.Meta, `{"diffs":[`+hunk+`]}`)
	jsonEq(t, "result view", o.view, `{"card":"diff","title":"Write f.txt","diffs":[`+hunk+`]}`)

	// An identical overwrite has no hunks: the card falls back to the text.
	o = e.call("write", map[string]any{"file_path": "f.txt", "content": after})
	jsonEq(t, "identical meta", o.proj.Meta, `{"diffs":[]}`)
	jsonEq(t, "identical view", o.view, `{"card":"diff","title":"Write f.txt","diffs":[{"path":"f.txt","oldText":null,"newText":`+jsonString(after)+`}]}`)
}

func TestWritePureInsertion(t *testing.T) {
	e := newEnv(t, tools.Options{})
	e.write("empty.txt", "")
	o := e.call("write", map[string]any{"file_path": "empty.txt", "content": "a\nb\n"})
	o.ok(t)
	// No old lines at all: oldText is null, and so is its start line.
	jsonEq(t, "meta", o.proj.Meta, `{"diffs":[{"path":"empty.txt","oldText":null,"newText":"a\nb","newStart":1}]}`)
	jsonEq(t, "view", o.view, `{"card":"diff","title":"Write empty.txt","diffs":[{"path":"empty.txt","oldText":null,"newText":"a\nb","newStart":1}]}`)
}

func TestWriteFailures(t *testing.T) {
	e := newEnv(t, tools.Options{})
	if err := os.Mkdir(e.path("dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.call("write", map[string]any{"file_path": "dir", "content": "x"}).
		fails(t, `cannot write "`+e.path("dir")+`": not a regular file`, fsErr("FS_NOT_REGULAR_FILE"))
	e.call("write", map[string]any{"file_path": "", "content": "x"}).fails(t, "file_path must be a non-empty string", nil)
	e.call("write", map[string]any{"file_path": "a.txt"}).fails(t, `invalid arguments: missing required property "content"`,
		&core.ErrorInfo{Name: "ToolArgsError", Code: "INVALID_ARGS"})
	// An empty content is legitimate: it writes an empty file.
	e.call("write", map[string]any{"file_path": "blank.txt", "content": ""}).ok(t)
	if e.read("blank.txt") != "" {
		t.Error("blank.txt not empty")
	}
}

func TestEditSingleHunk(t *testing.T) {
	e := newEnv(t, tools.Options{})
	p := e.write("f.txt", numbered("l", 20))
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	o := e.call("edit", map[string]any{"file_path": "f.txt", "old_string": "l3\n", "new_string": "L3\n"})
	if got, want := o.ok(t), "The file "+p+" has been updated successfully."; got != want {
		t.Errorf("text %q", got)
	}
	if got, want := e.read("f.txt"), strings.Replace(numbered("l", 20), "l3\n", "L3\n", 1); got != want {
		t.Errorf("file:\n%s", got)
	}
	if m := mode(t, p); m != 0o640 {
		t.Errorf("mode %v, want the kept 0640", m)
	}
	// Only two lines exist above the change: the hunk has 2 + 3 context lines.
	hunk := `{"path":"f.txt","oldText":"l1\nl2\nl3\nl4\nl5\nl6","newText":"l1\nl2\nL3\nl4\nl5\nl6","oldStart":1,"newStart":1}`
	jsonEq(t, "meta", o.proj.Meta, `{"diffs":[`+hunk+`]}`)
	jsonEq(t, "call view", o.call, `{"card":"diff","title":"Edit f.txt",
		"diffs":[{"path":"f.txt","oldText":"l3\n","newText":"L3\n"}],"locations":[{"path":"f.txt"}]}`)
	jsonEq(t, "result view", o.view, `{"card":"diff","title":"Edit f.txt","diffs":[`+hunk+`]}`)
	var v tools.EditValue
	o.value(t, &v)
	if v.Before != numbered("l", 20) || v.After != e.read("f.txt") {
		t.Error("value does not carry the whole before and after text")
	}
}

func TestEditReplaceAllTwoHunks(t *testing.T) {
	e := newEnv(t, tools.Options{})
	p := e.write("f.txt", strings.NewReplacer("l2\n", "x\n", "l15\n", "x\n").Replace(numbered("l", 20)))
	e.call("edit", map[string]any{"file_path": "f.txt", "old_string": "x\n", "new_string": "y\n"}).
		fails(t, `old_string matched 2 times in "`+p+`"; provide a more specific old_string or set replace_all to true`,
			fsErr("FS_AMBIGUOUS_EDIT"))
	if strings.Contains(e.read("f.txt"), "y") {
		t.Fatal("a refused edit changed the file")
	}
	o := e.call("edit", map[string]any{"file_path": "f.txt", "old_string": "x\n", "new_string": "y\n", "replace_all": true})
	if got, want := o.ok(t), "The file "+p+" has been updated. All occurrences were successfully replaced."; got != want {
		t.Errorf("text %q", got)
	}
	jsonEq(t, "meta", o.proj.Meta, `{"diffs":[
		{"path":"f.txt","oldText":"l1\nx\nl3\nl4\nl5","newText":"l1\ny\nl3\nl4\nl5","oldStart":1,"newStart":1},
		{"path":"f.txt","oldText":"l12\nl13\nl14\nx\nl16\nl17\nl18","newText":"l12\nl13\nl14\ny\nl16\nl17\nl18","oldStart":12,"newStart":12}]}`)
	if v, ok := o.view.(*core.DiffResultView); !ok || len(v.Diffs) != 2 {
		t.Errorf("result view %T with two hunks expected", o.view)
	}
}

func TestEditKeepsCRLFAndInsertsWithContext(t *testing.T) {
	e := newEnv(t, tools.Options{})
	e.write("win.txt", "a\r\nb\r\nc\r\n")
	o := e.call("edit", map[string]any{"file_path": "win.txt", "old_string": "b\n", "new_string": "b\nnew\n"})
	o.ok(t)
	if got := e.read("win.txt"); got != "a\r\nb\r\nnew\r\nc\r\n" {
		t.Errorf("line endings not restored: %q", got)
	}
	// An insertion inside a file carries its context as oldText.
	jsonEq(t, "meta", o.proj.Meta, `{"diffs":[{"path":"win.txt","oldText":"a\nb\nc","newText":"a\nb\nnew\nc","oldStart":1,"newStart":1}]}`)
}

// TestWriteHunksCarryFileLines: each hunk says where its old and new text
// start in the file, so a card numbers lines as the file does; lines added
// above a later hunk shift its new start but not its old one.
func TestWriteHunksCarryFileLines(t *testing.T) {
	e := newEnv(t, tools.Options{})
	e.write("f.txt", numbered("l", 30))
	after := strings.NewReplacer("l2\n", "l2\nA\nB\n", "l25\n", "L25\n").Replace(numbered("l", 30))
	o := e.call("write", map[string]any{"file_path": "f.txt", "content": after})
	o.ok(t)
	jsonEq(t, "meta", o.proj.Meta, `{"diffs":[
		{"path":"f.txt","oldText":"l1\nl2\nl3\nl4\nl5","newText":"l1\nl2\nA\nB\nl3\nl4\nl5","oldStart":1,"newStart":1},
		{"path":"f.txt","oldText":"l22\nl23\nl24\nl25\nl26\nl27\nl28","newText":"l22\nl23\nl24\nL25\nl26\nl27\nl28","oldStart":22,"newStart":24}]}`)
}

func TestEditFailures(t *testing.T) {
	e := newEnv(t, tools.Options{})
	p := e.write("f.txt", "alpha\n")
	for _, c := range []struct {
		args    map[string]any
		message string
		info    *core.ErrorInfo
	}{
		{map[string]any{"file_path": "f.txt", "old_string": "beta", "new_string": "x"},
			`old_string was not found in "` + p + `"`, fsErr("FS_EDIT_NOT_FOUND")},
		{map[string]any{"file_path": "f.txt", "old_string": "", "new_string": "x"}, "old_string must be a non-empty string", nil},
		{map[string]any{"file_path": "f.txt", "old_string": "alpha", "new_string": "alpha"}, "old_string and new_string must differ", nil},
		{map[string]any{"file_path": "missing.txt", "old_string": "a", "new_string": "b"},
			`cannot edit "` + e.path("missing.txt") + `": not found`, fsErr("FS_NOT_FOUND")},
	} {
		e.call("edit", c.args).fails(t, c.message, c.info)
	}
	if e.read("f.txt") != "alpha\n" {
		t.Error("a failed edit changed the file")
	}
	if _, err := os.Stat(e.path("missing.txt")); !os.IsNotExist(err) {
		t.Error("a failed edit created a file")
	}
	e.write("bin.dat", "a\x00b")
	e.call("edit", map[string]any{"file_path": "bin.dat", "old_string": "a", "new_string": "c"}).
		fails(t, `cannot edit "`+e.path("bin.dat")+`": binary file`, fsErr("FS_NOT_TEXT"))
}

func TestDiffPresentersOnLoggedResults(t *testing.T) {
	e := newEnv(t, tools.Options{})
	editArgs := `{"file_path":"a.go","old_string":"x","new_string":"y"}`
	writeArgs := `{"file_path":"a.go","content":"new\n"}`
	ok := core.Text("The file /w/a.go has been updated successfully.")
	present := func(name, args, meta string, isError bool) core.ResultView {
		r := core.ToolResult{Content: ok, IsError: isError}
		if meta != "" {
			r.Meta = json.RawMessage(meta)
		}
		return e.reg.PresentResult(name, args, r)
	}
	dsh := `{"diffs":[{"path":"a.go","oldText":null,"newText":"y"},{"path":"a.go","oldText":"x\nz","newText":"y\nz"}]}`
	jsonEq(t, "dsh edit", present("edit", editArgs, dsh, false), `{"card":"diff","title":"Edit a.go","diffs":`+dsh[9:len(dsh)-1]+`}`)
	jsonEq(t, "dsh write", present("write", writeArgs, dsh, false), `{"card":"diff","title":"Write a.go","diffs":`+dsh[9:len(dsh)-1]+`}`)

	generic := `{"card":"generic","content":[{"type":"text","text":"The file /w/a.go has been updated successfully."}]}`
	writeFallback := `{"card":"diff","title":"Write a.go","diffs":[{"path":"a.go","oldText":null,"newText":"new\n"}]}`
	for name, m := range map[string]string{
		"absent":          "",
		"empty diffs":     `{"diffs":[]}`,
		"oldText missing": `{"diffs":[{"path":"a.go","newText":"y"}]}`,
		"oldText number":  `{"diffs":[{"path":"a.go","oldText":1,"newText":"y"}]}`,
		"path missing":    `{"diffs":[{"oldText":null,"newText":"y"}]}`,
		"diffs object":    `{"diffs":{"path":"a.go"}}`,
		"meta array":      `[{"path":"a.go","oldText":null,"newText":"y"}]`,
	} {
		jsonEq(t, "edit "+name, present("edit", editArgs, m, false), generic)
		jsonEq(t, "write "+name, present("write", writeArgs, m, false), writeFallback)
	}
	jsonEq(t, "edit error", present("edit", editArgs, dsh, true), generic)
	if _, isGeneric := present("write", writeArgs, dsh, true).(*core.GenericResultView); !isGeneric {
		t.Error("write error: want the generic card")
	}
	// An edit call with an empty old_string presents oldText null.
	jsonEq(t, "edit call", e.reg.PresentCall("edit", `{"file_path":"a.go","old_string":"","new_string":"y"}`),
		`{"card":"diff","title":"Edit a.go","diffs":[{"path":"a.go","oldText":null,"newText":"y"}],"locations":[{"path":"a.go"}]}`)
}
