package dsh_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/sources/dsh"
)

// multiText is a prism JSONL text of sessions a, b, c: two events each
// (b's header with an escaped key), with extra lines after session b's
// events.
func multiText(afterB string) string {
	var b strings.Builder
	for _, id := range []string{"a", "b", "c"} {
		header := fmt.Sprintf(`{"type":"session","version":0,"id":%q,"createdAt":1764500000000,"delegationDepth":0}`, id)
		if id == "b" {
			header = strings.Replace(header, `"type"`, `"\u0074ype"`, 1)
		}
		b.WriteString(header + "\n")
		b.WriteString(`{"type":"turn/start","seq":0,"time":1764500000001,"data":{"turn":1}}` + "\n")
		b.WriteString(`{"type":"x-vendor/note","seq":1,"time":1764500000002,"data":{"s":"session \u0041"},"ignorable":true}` + "\n")
		if id == "b" {
			b.WriteString(afterB)
		}
	}
	return b.String()
}

// TestDecode_manySessions: in a prism JSONL file each session header
// starts the next session (one with an escaped key too), a torn tail ends only its
// own session, and the logs keep the file's line numbers.
func TestDecode_manySessions(t *testing.T) {
	text := multiText(`{"type":"turn/end","seq":2,"ti` + "\n") // b's torn tail
	logs, format, err := dsh.Decode(strings.NewReader(text), -1, dsh.Limits{})
	if err != nil || format != dsh.FormatJSONL {
		t.Fatalf("Decode = %v, %v", format, err)
	}
	var got []string
	for _, l := range logs {
		got = append(got, fmt.Sprintf("%s:%d events:header line %d:torn %q", l.Header.ID, len(l.Events), l.HeaderLine, l.Torn))
	}
	want := []string{
		`a:2 events:header line 1:torn ""`,
		`b:2 events:header line 4:torn "line 7: not valid JSON; the tail from there is ignored (no later turn/end)"`,
		`c:2 events:header line 8:torn ""`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("logs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDecode_manySessionsRefused: what a file of several sessions may not
// hold — the same id twice, a repeated seq, a bad later header — fails it
// with the line and the reason; a zip entry or DecodeJSONL holds one
// session, so a second header there is an error too.
func TestDecode_manySessionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"same id twice", strings.Replace(multiText(""), `"id":"c"`, `"id":"a"`, 1),
			`line 7: session a appears a second time (its first header is on line 1)`},
		{"duplicate seq", multiText(`{"type":"turn/start","seq":1,"time":1764500000003,"data":{"turn":2}}` + "\n" +
			`{"type":"turn/end","seq":2,"time":1764500000004,"data":{"turn":2,"reason":{"kind":"completed"}}}` + "\n"),
			`line 7: duplicate seq: seq 1 appears again (expected seq 2)`},
		{"bad later header", strings.Replace(multiText(""), `"version":0,"id":"c"`, `"version":3,"id":"c"`, 1),
			`line 7: unsupported session format version 3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := dsh.Decode(strings.NewReader(tc.text), -1, dsh.Limits{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := dsh.DecodeJSONL(strings.NewReader(multiText("")), dsh.Limits{}); err == nil ||
		!strings.Contains(err.Error(), "line 4: a second session header") {
		t.Errorf("DecodeJSONL of two sessions = %v, want a second-header error", err)
	}
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	w, _ := zw.Create("session.jsonl")
	w.Write([]byte(multiText("")))
	zw.Close()
	if _, _, err := dsh.Decode(bytes.NewReader(zbuf.Bytes()), int64(zbuf.Len()), dsh.Limits{}); err == nil ||
		!strings.Contains(err.Error(), "session.jsonl: line 4: a second session header") {
		t.Errorf("a zip entry of two sessions = %v, want a second-header error naming the entry", err)
	}
}

// TestDecode_manySessionsBudget: each session of a file counts against the
// one memory budget of the file, so a file of very many sessions is
// refused with a reason, not held.
func TestDecode_manySessionsBudget(t *testing.T) {
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, `{"type":"session","version":0,"id":"s%d","createdAt":1}`+"\n", i)
	}
	_, _, err := dsh.Decode(strings.NewReader(b.String()), -1, dsh.Limits{MaxMemoryBytes: 100 << 10})
	if err == nil || !strings.Contains(err.Error(), "the file is too large to import: its 51 sessions so far and their decoded events need more than the import memory budget of 100 KiB") {
		t.Errorf("Decode of 200 sessions on a 100 KiB budget = %v", err)
	}
}

// TestTail_duplicateSeq: a tailed log whose seq repeats says so.
func TestTail_duplicateSeq(t *testing.T) {
	text := `{"type":"session","version":0,"id":"a","createdAt":1}` + "\n" +
		`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}` + "\n" +
		`{"type":"turn/start","seq":0,"time":2,"data":{"turn":1}}` + "\n"
	tail := dsh.NewTail(dsh.FormatJSONL, dsh.Limits{})
	if _, err := tail.Feed([]byte(text)); err == nil || !strings.Contains(err.Error(), "line 3: duplicate seq: seq 0 appears again (expected seq 1)") {
		t.Errorf("Feed = %v, want a duplicate seq at line 3", err)
	}
}

// TestDecode_zipFileReadInPlace: a zip handed over as a file of known size
// (a spooled upload) is read where it is, not copied to another temporary
// file first — with no usable temporary directory it still decodes.
func TestDecode_zipFileReadInPlace(t *testing.T) {
	f, err := os.Open("../../testdata/dsh/export/session-export.zip")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	logs, format, err := dsh.Decode(f, st.Size(), dsh.Limits{})
	if err != nil || format != dsh.FormatZip || len(logs) != 2 {
		t.Fatalf("Decode of a zip file = %d logs, %v, %v; want its 2 sessions", len(logs), format, err)
	}
}
