package core_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"prism/core"
)

// shapeViews are views of every registered kind, empty and full; their
// JSON is locked in testdata/viewjson*.txt (written before the kinds were
// registered in one table, by each type's own MarshalJSON).
func shapeViews() []any {
	old, s, n := "a", "<&>\u2028", 3
	img := core.InlineImage{MediaType: "image/png", Data: "iVBORw0KGgo=", Width: 1, Height: 1, Name: s}
	return []any{
		&core.GenericCallView{}, &core.GenericCallView{Title: s, Kind: core.KindRead, RawInput: map[string]any{"x": 1.5, "y": []any{s}}, Content: core.Text(s), Locations: []core.FileLocation{{Path: s, Line: 2}}},
		&core.TerminalCallView{}, &core.TerminalCallView{Title: s, Description: s, Cwd: s},
		&core.DiffCallView{}, &core.DiffCallView{Title: s, Diffs: []core.FileDiff{{Path: "a", OldText: &old, NewText: s, OldStart: 2, NewStart: 3}}, Locations: []core.FileLocation{{Path: "a"}}},
		&core.GenericResultView{}, &core.GenericResultView{Title: s, Content: core.Text(s)},
		&core.TerminalResultView{}, &core.TerminalResultView{Title: s, Output: &s, ExitCode: &n},
		&core.DiffResultView{}, &core.DiffResultView{Title: s, Diffs: []core.FileDiff{{Path: "a", NewText: s}}},
		&core.SearchMatchesView{}, &core.SearchMatchesView{Title: s, Files: []core.SearchFileMatches{{Path: "a"}, {Path: "b", Matches: []core.SearchLineMatch{{LineNumber: 1, Line: s}}}}, Truncated: true, Total: 9},
		&core.SearchPathsView{}, &core.SearchPathsView{Title: s, Paths: []string{s}, Total: 1},
		&core.ReadResultView{}, &core.ReadResultView{Title: s, Path: s, Offset: 1, Lines: []core.ReadFileLine{{Number: 1, Text: s}}, TotalLines: 1, Lang: "go", Content: core.Text(s)},
		&core.WebSearchView{}, &core.WebSearchView{Title: s, Sources: []core.WebSource{{URL: s, Title: s, Snippet: s, PublishedAt: s}}, Answer: s, Truncated: true},
		&core.WebFetchView{}, &core.WebFetchView{Title: s, URL: s, StatusCode: 200, Truncated: true},
		&core.ImageResultView{}, &core.ImageResultView{Title: s, Images: []core.InlineImage{img}, Content: core.Text(s)},
	}
}

// TestViewJSONShape: every kind writes the same JSON, byte for byte, through
// encoding/json and through MarshalNoEscape.
func TestViewJSONShape(t *testing.T) {
	for file, marshal := range map[string]func(any) ([]byte, error){
		"testdata/viewjson.txt":          json.Marshal,
		"testdata/viewjson_noescape.txt": core.MarshalNoEscape,
	} {
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for _, v := range shapeViews() {
			b, err := marshal(v)
			if err != nil {
				t.Fatalf("%T: %v", v, err)
			}
			fmt.Fprintf(&got, "%T %s\n", v, b)
		}
		wantLines, gotLines := strings.Split(string(want), "\n"), strings.Split(got.String(), "\n")
		if len(wantLines) != len(gotLines) {
			t.Fatalf("%s: %d lines, want %d", file, len(gotLines), len(wantLines))
		}
		for i := range wantLines {
			if wantLines[i] != gotLines[i] {
				t.Errorf("%s line %d:\n got %s\nwant %s", file, i+1, gotLines[i], wantLines[i])
			}
		}
	}
}

// TestViewKindsRoundTrip: every valid view of shapeViews decodes back from
// its JSON to the same view (a nil list comes back empty).
func TestViewKindsRoundTrip(t *testing.T) {
	for _, v := range shapeViews() {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		switch x := v.(type) {
		case core.CallView:
			if x.Validate() != nil {
				continue
			}
			want = x
			got, err = core.DecodeCallView(data)
		case core.ResultView:
			if x.Validate() != nil {
				continue
			}
			want = x
			got, err = core.DecodeResultView(data)
		}
		if err != nil {
			t.Errorf("decode %s: %v", data, err)
			continue
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("round trip of %s (-want +got):\n%s", data, diff)
		}
	}
}
