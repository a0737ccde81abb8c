package views_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"prism/core/agent/agenttest"
	"prism/core/compare"
	"prism/views"
)

// TestCompareSide: the calls a comparison reads are the fold's cards, in
// log order, with their results and errors; the totals are the header's
// summary plus the files the completed changes wrote; the demo compared
// with itself has no differences.
func TestCompareSide(t *testing.T) {
	h, events := agenttest.DemoLog(t, 1767225600000)
	tl := views.Fold(h, events, presenters(t))
	s := views.CompareSide("demo", tl, nil)
	sum := tl.Summary()
	if int64(len(s.Calls)) != sum.Calls || s.Summary.Calls != sum.Calls || s.Summary.Errors != sum.Errors || s.Summary.Errors == 0 {
		t.Fatalf("%d calls listed; summary %+v; the header says %d calls, %d errors", len(s.Calls), s.Summary, sum.Calls, sum.Errors)
	}
	if s.Summary.DurationMS != sum.LastTime-sum.FirstTime || s.Summary.InputTokens != sum.InputTokens {
		t.Errorf("duration %d ms, tokens %d; want %d, %d", s.Summary.DurationMS, s.Summary.InputTokens, sum.LastTime-sum.FirstTime, sum.InputTokens)
	}
	if want := []string{"CHANGELOG.md", "greet/greet.go", "greet/greet_test.go"}; !slices.Equal(s.Summary.FilesWritten, want) {
		t.Errorf("files written %q, want %q", s.Summary.FilesWritten, want)
	}
	errs, codes := 0, 0
	for i, c := range s.Calls {
		if c.Tool == "" || c.CallSeq < 0 || !c.HasResult || c.ResultSeq <= c.CallSeq || c.Turn < 1 || c.Step < 1 {
			t.Errorf("call %d: %+v", i, c)
		}
		if i > 0 && c.CallSeq < s.Calls[i-1].CallSeq {
			t.Errorf("call %d out of log order", i)
		}
		if c.IsError {
			errs++
		}
		if c.ErrorCode != "" {
			codes++
		}
	}
	if int64(errs) != sum.Errors || codes == 0 {
		t.Errorf("%d calls failed (%d with a code); the header says %d errors", errs, codes, sum.Errors)
	}
	c := compare.Compare(s, views.CompareSide("demo", views.Fold(h, events, presenters(t)), nil), compare.Options{})
	if c.Differences != 0 || len(c.Pairs) != len(s.Calls) {
		t.Fatalf("the demo against itself: %d differences in %d pairs", c.Differences, len(c.Pairs))
	}
}

// TestComparePage_boundNote: past the alignment's bound the page says so
// above the rows.
func TestComparePage_boundNote(t *testing.T) {
	h, events := agenttest.DemoLog(t, 1767225600000)
	s := views.CompareSide("demo", views.Fold(h, events, presenters(t)), nil)
	other := s
	other.Calls = slices.Clone(s.Calls)
	other.Calls[0].Args = `{"title":"another"}` // nothing is set aside as an equal head
	other.Calls[len(other.Calls)-1].Args = `{"file_path":"other.md"}`
	c := compare.Compare(s, other, compare.Options{MaxCells: 1})
	html, err := views.Render(context.Background(), views.ComparePage(views.NewComparePage(views.PageMeta{}, c, "idle", "idle")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html, `data-testid="compare-note"`) || !strings.Contains(html, "past the alignment&#39;s bound of 1 cells") {
		t.Fatalf("no note of the bound:\n%s", html)
	}
}
