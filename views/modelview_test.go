package views_test

import (
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/core/coretest"
	"prism/views"
)

// TestModelView: a completed card's model view holds exactly the content
// blocks of the logged tool result — what the model received — and flags
// the truncation the tool applied; a pending card has none.
func TestModelView(t *testing.T) {
	ctx := context.Background()
	ws := cardWorkspace(t)
	reg := toolRegistry(t, ws)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart()
	b.Exec(ctx, reg, ws, "grep", "grep", `{"pattern":"TODO","path":"many"}`)
	b.Exec(ctx, reg, ws, "read", "read", `{"file_path":"main.go","offset":10,"limit":3}`)
	b.Exec(ctx, reg, ws, "miss", "read", `{"file_path":"nope.go"}`)
	b.Call("wait", "bash", `{"command":"sleep 1","description":"wait"}`)
	tl := views.Fold(hdr(), b.Events, presenters(t))

	cases := []struct {
		id, trunc string
		isError   bool
	}{
		{"grep", "the tool sent 250 matches of 300", false},
		{"read", "the tool sent lines 10–12 of 200 lines", false},
		{"miss", "", true},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			card := tl.CardsByCallID(c.id)[0]
			want := card.Result.Projection().Content
			html := renderCard(t, tl, ws, c.id)
			doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
			if err != nil {
				t.Fatal(err)
			}
			mv := doc.Find(`[data-testid="model-view"]`)
			if mv.Length() != 1 {
				t.Fatalf("%d model views", mv.Length())
			}
			if _, open := mv.Attr("open"); open {
				t.Error("the model view starts open")
			}
			blocks := mv.Find(`[data-testid="model-block"]`)
			if blocks.Length() != len(want) || len(want) != 1 {
				t.Fatalf("%d blocks shown, the result has %d", blocks.Length(), len(want))
			}
			// The shown text, head, middle and tail together, is the
			// content's text.
			var lines []string
			blocks.Find("pre.lines").Each(func(_ int, s *goquery.Selection) { lines = append(lines, s.Text()) })
			got := strings.Join(lines, "\n")
			if text := strings.TrimSuffix(strings.ReplaceAll(want.PlainText(), ws, "/work"), "\n"); got != text {
				t.Errorf("model view text:\n%s\nwant the content:\n%s", got, text)
			}
			note := mv.Find(`[data-testid="model-truncation"]`).Text()
			if c.trunc == "" && note != "" || !strings.Contains(note, c.trunc) {
				t.Errorf("truncation note %q, want %q", note, c.trunc)
			}
			if hasErr := mv.Find(`[data-testid="model-is-error"]`).Length() == 1; hasErr != c.isError {
				t.Errorf("isError noted = %v, want %v", hasErr, c.isError)
			}
		})
	}
	if html := renderCard(t, tl, ws, "wait"); strings.Contains(html, "model-view") {
		t.Error("a pending card has a model view: the model has received nothing yet")
	}
}
