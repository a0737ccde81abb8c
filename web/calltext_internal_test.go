package web

import (
	"encoding/json"
	"strings"
	"testing"

	"prism/core"
)

// TestContentText: text blocks verbatim, any other block one marked JSON
// line.
func TestContentText(t *testing.T) {
	c := core.Content{
		&core.TextBlock{Text: "first\nsecond"},
		&core.ImageBlock{Attachment: core.ImageAttachmentRef{AttachmentID: "sha256:ab", MediaType: "image/png", Bytes: 5}},
		&core.TextBlock{Text: ""},
	}
	got := string(contentText(c))
	want := "first\nsecond\n[image block] " + marshal(t, c[1]) + "\n"
	if !strings.Contains(want, `"type":"image"`) {
		t.Fatalf("the image block encodes as %s", want)
	}
	if got != want {
		t.Errorf("contentText =\n%q\nwant\n%q", got, want)
	}
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
