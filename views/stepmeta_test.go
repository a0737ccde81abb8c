package views_test

import (
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
)

// TestStepMetadataRow: a step's request/header, request/context and
// agent/inbox/spliced events fold into one expandable metadata row in the
// step's header, not between its messages; other events stay where they
// were logged, and the live patches build the same page.
func TestStepMetadataRow(t *testing.T) {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("hi")
	b.Add(core.EventRequestHeader, map[string]any{"header": map[string]any{"config": map[string]any{"provider": "p", "model": "m"}}, "reason": "initial"}, nil)
	b.Add(core.EventRequestContext, map[string]any{"provider": "p", "model": "m"}, nil)
	b.AddRaw("vendor/thing", []byte(`{"x":1}`), nil)
	b.Add(core.EventInboxSpliced, map[string]any{"count": 1}, nil)
	b.Assistant("hello")
	b.StepEnd().TurnEnd(core.TurnCompleted)
	tl := views.Fold(hdr(), b.Events, presenters(t))
	page, err := views.Render(context.Background(), views.SessionPage(views.NewSessionPage(testMeta, tl, 100, true)))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	step := doc.Find(`[data-testid="step"]`)
	meta := step.Find(`.step-head [data-testid="step-metadata"]`)
	if meta.Length() != 1 {
		t.Fatalf("%d metadata rows in the step head", meta.Length())
	}
	if _, open := meta.Attr("open"); open {
		t.Error("the metadata row starts open")
	}
	var types []string
	meta.Find(`[data-testid="raw-event"]`).Each(func(_ int, s *goquery.Selection) { types = append(types, s.AttrOr("data-type", "")) })
	if got := strings.Join(types, " "); got != "request/header request/context agent/inbox/spliced" {
		t.Errorf("metadata row holds %q", got)
	}
	if s := strings.Join(strings.Fields(meta.Find("summary").First().Text()), " "); s != "metadata · request/header, request/context, agent/inbox/spliced" {
		t.Errorf("summary %q", s)
	}
	var inline []string
	step.Find(`.items > [data-testid="raw-event"]`).Each(func(_ int, s *goquery.Selection) { inline = append(inline, s.AttrOr("data-type", "")) })
	if strings.Join(inline, " ") != "vendor/thing" {
		t.Errorf("inline raw rows %v, want only the vendor event", inline)
	}
}
