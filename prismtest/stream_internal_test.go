package prismtest

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readAll(t testing.TB, input string) []Frame {
	t.Helper()
	out := make(chan Frame, len(input)+1)
	if err := readSSE(context.Background(), strings.NewReader(input), out); err != nil {
		t.Fatalf("readSSE(%q): %v", input, err)
	}
	close(out)
	var got []Frame
	for f := range out {
		got = append(got, f)
	}
	return got
}

func TestReadSSE(t *testing.T) {
	input := ": a comment\n" +
		"event: datastar-patch-elements\n" +
		"id: 12\n" +
		"data: selector #step-1\n" +
		"data: mode append\n" +
		"data: elements <article id=\"call-1\">\n" +
		"data: elements </article>\n" +
		"\n" +
		"\n" + // blank lines alone dispatch nothing
		"id: 13\n" +
		"\n" +
		"event:datastar-patch-elements\n" + // no space after the colon
		"data:elements <p>x</p>\n" +
		"unknown: field\n" +
		"\n" +
		"event: unterminated\n" // no blank line: never dispatched
	got := readAll(t, input)
	want := []Frame{
		{Event: "datastar-patch-elements", ID: "12", Data: []string{"selector #step-1", "mode append",
			`elements <article id="call-1">`, "elements </article>"}},
		{ID: "13"},
		{Event: "datastar-patch-elements", Data: []string{"elements <p>x</p>"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("frames (-want +got):\n%s", diff)
	}
	if got[0].Selector() != "#step-1" || got[0].Mode() != "append" ||
		got[0].Elements() != "<article id=\"call-1\">\n</article>" {
		t.Errorf("fields of %v: selector %q mode %q elements %q", got[0], got[0].Selector(), got[0].Mode(), got[0].Elements())
	}
	if got[2].Mode() != "" {
		t.Errorf("a frame without a mode line has mode %q; want \"\" (a morph by id)", got[2].Mode())
	}
}

// FuzzReadSSE: any byte stream parses without a panic, and every frame
// dispatched carries something (an event, an id or data) that came from a
// line of the input.
func FuzzReadSSE(f *testing.F) {
	f.Add("event: e\nid: 1\ndata: elements <p>\n\n")
	f.Add("id: 2\n\n: c\n\ndata:x\r\n\r\n")
	f.Add("data\n\nevent\n\n")
	f.Fuzz(func(t *testing.T, input string) {
		for _, fr := range readAll(t, input) {
			if fr.Event == "" && fr.ID == "" && len(fr.Data) == 0 {
				if !strings.Contains(input, "event") && !strings.Contains(input, "id") && !strings.Contains(input, "data") {
					t.Fatalf("frame %+v from input without any field", fr)
				}
			}
			for _, d := range fr.Data {
				if !strings.Contains(input, d) {
					t.Fatalf("data line %q is not in the input", d)
				}
			}
			_ = fr.String()
		}
	})
}
