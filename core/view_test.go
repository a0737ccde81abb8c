package core_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
)

// TestDecodeViewsRoundTrip checks that every view kind marshals with its
// card tag and decodes back to the same view, and that malformed or
// unknown views are refused (callers then fall back to the generic card).
func TestDecodeViewsRoundTrip(t *testing.T) {
	old := "a"
	exit := 3
	out := "done"
	calls := []core.CallView{
		&core.GenericCallView{Title: "t", Kind: core.KindRead, Locations: []core.FileLocation{{Path: "a.go", Line: 2}}},
		&core.TerminalCallView{Title: "ls", Description: "list", Cwd: "sub"},
		&core.DiffCallView{Title: "Edit a", Diffs: []core.FileDiff{{Path: "a", OldText: &old, NewText: "b"}, {Path: "c", NewText: "d"}}},
	}
	for _, v := range calls {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := core.DecodeCallView(data)
		if err != nil {
			t.Fatalf("DecodeCallView(%s): %v", data, err)
		}
		if diff := cmp.Diff(v, got); diff != "" {
			t.Errorf("call view round trip of %s (-want +got):\n%s", data, diff)
		}
	}
	results := []core.ResultView{
		&core.GenericResultView{Title: "t", Content: core.Text("x")},
		&core.TerminalResultView{Output: &out, ExitCode: &exit},
		&core.DiffResultView{Diffs: []core.FileDiff{{Path: "a", NewText: "b"}}},
		&core.SearchMatchesView{Files: []core.SearchFileMatches{{Path: "a", Matches: []core.SearchLineMatch{{LineNumber: 1, Line: "x"}}}}, Total: 1},
		&core.SearchPathsView{Paths: []string{"a", "b"}, Truncated: true, Total: 9},
		&core.ReadResultView{Path: "a", Offset: 1, Lines: []core.ReadFileLine{{Number: 1, Text: "x"}}, TotalLines: 1, Lang: "go"},
		&core.WebSearchView{Sources: []core.WebSource{{URL: "https://go.dev"}}, Answer: "yes"},
		&core.WebFetchView{URL: "https://go.dev", StatusCode: 200},
	}
	for _, v := range results {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := core.DecodeResultView(data)
		if err != nil {
			t.Fatalf("DecodeResultView(%s): %v", data, err)
		}
		if diff := cmp.Diff(v, got); diff != "" {
			t.Errorf("result view round trip of %s (-want +got):\n%s", data, diff)
		}
	}
	for _, bad := range []struct{ data, want string }{
		{`{"card":"hologram"}`, `unknown card "hologram"`},
		{`{"card":"diff","diffs":[]}`, "no diffs"},
		{`{"card":"terminal","exitCode":1,"signal":"SIGKILL"}`, "mutually exclusive"},
		{`{"card":"read","path":"a","offset":1,"lines":"nope","totalLines":1}`, "read result view"},
		{`{"card":"search","shape":"matches","files":[],"truncated":false,"total":0,"extra":1}`, "unknown field"},
		{`{"card":"web","kind":"fetch","statusCode":200,"truncated":false}`, "no url"},
	} {
		if _, err := core.DecodeResultView([]byte(bad.data)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("DecodeResultView(%s) error = %v, want it to mention %q", bad.data, err, bad.want)
		}
	}
	if _, err := core.DecodeCallView([]byte(`{"card":"generic","title":"x","kind":"teleport"}`)); err == nil {
		t.Error("DecodeCallView accepted an unknown call kind")
	}
}
