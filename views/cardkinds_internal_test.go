package views

import (
	"fmt"
	"testing"

	"prism/core"
)

// fixedViews presents the same views for every call.
type fixedViews struct {
	call   core.CallView
	result core.ResultView
}

func (f fixedViews) PresentCall(string, string) core.CallView { return f.call }
func (f fixedViews) PresentResult(string, string, core.ToolResult) core.ResultView {
	return f.result
}

// TestCardKindRows: each view type with a card of its own finds exactly
// one row of callKinds or resultKinds, whose body it gets, under its
// Card() name; a generic view gets the generic card.
func TestCardKindRows(t *testing.T) {
	old, out := "a", "done"
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg=="
	calls := []struct {
		view core.CallView
		body CardBody
	}{
		{&core.GenericCallView{Title: "t"}, &GenericBody{}},
		{&core.TerminalCallView{Title: "ls"}, &TerminalBody{}},
		{&core.DiffCallView{Title: "t", Diffs: []core.FileDiff{{Path: "a", OldText: &old, NewText: "b"}}}, &DiffBody{}},
	}
	results := []struct {
		view core.ResultView
		body CardBody
	}{
		{&core.GenericResultView{Content: core.Text("x")}, &GenericBody{}},
		{&core.TerminalResultView{Output: &out}, &TerminalBody{}},
		{&core.DiffResultView{Diffs: []core.FileDiff{{Path: "a", NewText: "b"}}}, &DiffBody{}},
		{&core.ReadResultView{Path: "a", Lines: []core.ReadFileLine{{Number: 1, Text: "x"}}, TotalLines: 1}, &ReadBody{}},
		{&core.SearchMatchesView{Files: []core.SearchFileMatches{{Path: "a"}}}, &MatchesBody{}},
		{&core.SearchPathsView{Paths: []string{"a"}}, &PathsBody{}},
		{&core.WebSearchView{Sources: []core.WebSource{{URL: "https://go.dev"}}}, &WebSearchBody{}},
		{&core.WebFetchView{URL: "https://go.dev", StatusCode: 200}, &WebFetchBody{}},
		{&core.ImageResultView{Images: []core.InlineImage{{MediaType: "image/png", Data: png, Width: 1, Height: 1}}}, &ImageBody{}},
	}
	card := func(views fixedViews, done bool) *Card {
		c := &Card{ID: "k", CallID: "c1", Name: "tool", Args: "{}", HasCall: true, presenter: views}
		if done {
			c.Result = &core.ToolResultData{Message: core.NewToolResultMessage("r1", "c1", core.Text("x"), false)}
		}
		return c
	}
	for _, tc := range calls {
		if err := tc.view.Validate(); err != nil {
			t.Fatalf("%T: %v", tc.view, err)
		}
		rows := 0
		for _, k := range callKinds {
			if _, ok := k.body(tc.view, bodyInput{card: card(fixedViews{}, false)}); ok {
				rows++
			}
		}
		if _, generic := tc.body.(*GenericBody); rows != 1 && !(generic && rows == 0) {
			t.Errorf("%T matches %d rows of callKinds", tc.view, rows)
		}
		v := NewCardView(card(fixedViews{call: tc.view}, false), "s1", "/work")
		if fmt.Sprintf("%T", v.Body) != fmt.Sprintf("%T", tc.body) || v.Kind != tc.view.Card() {
			t.Errorf("%T gives a %s card with body %T, want %s with %T", tc.view, v.Kind, v.Body, tc.view.Card(), tc.body)
		}
	}
	for _, tc := range results {
		if err := tc.view.Validate(); err != nil {
			t.Fatalf("%T: %v", tc.view, err)
		}
		rows := 0
		for _, k := range resultKinds {
			if _, ok := k.body(tc.view, bodyInput{card: card(fixedViews{}, true), view: &CardView{}}); ok {
				rows++
			}
		}
		if _, generic := tc.body.(*GenericBody); rows != 1 && !(generic && rows == 0) {
			t.Errorf("%T matches %d rows of resultKinds", tc.view, rows)
		}
		v := NewCardView(card(fixedViews{result: tc.view}, true), "s1", "/work")
		if fmt.Sprintf("%T", v.Body) != fmt.Sprintf("%T", tc.body) || v.Kind != tc.view.Card() {
			t.Errorf("%T gives a %s card with body %T, want %s with %T", tc.view, v.Kind, v.Body, tc.view.Card(), tc.body)
		}
	}
}

// TestCardKindRowsCoverCore: every view type core registers has exactly
// one row of callKinds or resultKinds, but the generic ones, which have
// none: a kind registered in core without its card here fails.
func TestCardKindRowsCoverCore(t *testing.T) {
	calls, results := core.RegisteredViews()
	if len(calls) == 0 || len(results) == 0 {
		t.Fatalf("core registers %d call and %d result views", len(calls), len(results))
	}
	want := func(v interface{ Card() string }) int {
		if v.Card() == core.CardGeneric {
			return 0
		}
		return 1
	}
	for _, v := range calls {
		in := bodyInput{card: &Card{ID: "k", CallID: "c1", Name: "tool", Args: "{}", HasCall: true}, view: &CardView{}}
		rows := 0
		for _, k := range callKinds {
			if _, ok := k.body(v, in); ok {
				rows++
			}
		}
		if rows != want(v) {
			t.Errorf("%T (card %q) matches %d rows of callKinds, want %d", v, v.Card(), rows, want(v))
		}
	}
	for _, v := range results {
		c := &Card{ID: "k", CallID: "c1", Name: "tool", Args: "{}", HasCall: true,
			Result: &core.ToolResultData{Message: core.NewToolResultMessage("r1", "c1", core.Text("x"), false)}}
		rows := 0
		for _, k := range resultKinds {
			if _, ok := k.body(v, bodyInput{card: c, view: &CardView{}}); ok {
				rows++
			}
		}
		if rows != want(v) {
			t.Errorf("%T (card %q) matches %d rows of resultKinds, want %d", v, v.Card(), rows, want(v))
		}
	}
}
