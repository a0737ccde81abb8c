package web_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"prism/backend"
	"prism/core"
	"prism/core/coretest"
	"prism/views"
	"prism/web"
)

// compareLog is a two-step session: a read and a grep, then a note.
// pattern is the grep's, readOut the read's result; the read fails with
// FS_NOT_FOUND when readFails.
func compareLog(pattern, readOut string, readFails bool) []core.Event {
	b := coretest.NewBuilder(t0)
	grepArgs := `{"pattern":` + strconv.Quote(pattern) + `}`
	b.TurnStart().StepStart().User("Look around.")
	b.Assistant("Looking.", [3]string{"c1", "read", `{"file_path":"a.go"}`}, [3]string{"c2", "grep", grepArgs})
	b.Call("c1", "read", `{"file_path":"a.go"}`)
	b.Call("c2", "grep", grepArgs)
	if readFails {
		b.Result("c1", "Error: a.go not found", true, nil, &core.ErrorInfo{Name: "FsNotFound", Code: "FS_NOT_FOUND"})
	} else {
		b.Result("c1", readOut, false, nil, nil)
	}
	b.Result("c2", "a.go:3: // "+pattern, false, nil, nil)
	b.StepEnd().StepStart()
	b.Assistant("Noting.", [3]string{"c3", "note", `{"title":"done"}`})
	b.Call("c3", "note", `{"title":"done"}`)
	b.Result("c3", "noted", false, nil, nil)
	b.StepEnd().TurnEnd(core.TurnCompleted)
	return b.Events
}

func compareDoc(t *testing.T, e *env, a, b string) (*goquery.Document, string) {
	t.Helper()
	res, body := e.get(t, views.CompareURL(a, b))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET compare %s %s: %d %s", a, b, res.StatusCode, body)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc, body
}

func rowMarks(doc *goquery.Document) []string {
	var out []string
	doc.Find(`[data-testid="compare-row"]`).Each(func(_ int, s *goquery.Selection) {
		out = append(out, s.AttrOr("data-mark", "?"))
	})
	return out
}

// TestComparePage: two sessions side by side, one row per aligned call,
// each marked; the differing fields as diffs; every byte of tool output
// escaped.
func TestComparePage(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "base", compareLog("TODO", "package a", false))
	e.session(t, "args", compareLog("FIXME", "package a", false))
	e.session(t, "result", compareLog("TODO", "package a\n<script>alert(1)</script>", false))
	e.session(t, "failed", compareLog("TODO", "", true))
	e.session(t, "bidi", compareLog("TODO\u202e<b>x</b>", "package a", false))

	for _, tt := range []struct {
		b     string
		marks string
		diff  string // the testid of the diff shown
		has   []string
	}{
		{"base", "same same same", "", nil},
		{"args", "same arguments differ same", "args-diff", []string{`"pattern": "TODO"`, `"pattern": "FIXME"`}},
		{"result", "result differs same same", "result-diff", []string{"+<script>alert(1)</script>"}},
		{"failed", "error differs same same", "error-diff", []string{"no error → FS_NOT_FOUND"}},
		{"bidi", "same arguments differ same", "args-diff", []string{`"pattern": "TODO<U+202E><b>x</b>"`}},
	} {
		t.Run(tt.b, func(t *testing.T) {
			doc, body := compareDoc(t, e, "base", tt.b)
			if got := strings.Join(rowMarks(doc), " "); got != tt.marks {
				t.Fatalf("marks %q, want %q", got, tt.marks)
			}
			differs := doc.Find(".cmp-row.differs")
			if tt.diff == "" {
				if differs.Length() != 0 || doc.Find(".cmp-diff").Length() != 0 {
					t.Fatalf("%d differing rows and %d diffs, want none", differs.Length(), doc.Find(".cmp-diff").Length())
				}
				return
			}
			if differs.Length() != 1 || differs.Find(`[data-testid="`+tt.diff+`"]`).Length() != 1 {
				t.Fatalf("want one differing row holding %s; got %d rows:\n%s", tt.diff, differs.Length(), body)
			}
			text := differs.Find(`[data-testid="` + tt.diff + `"]`).Text()
			for _, h := range tt.has {
				if !strings.Contains(text, h) {
					t.Errorf("the %s lacks %q:\n%s", tt.diff, h, text)
				}
			}
			if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>x") || strings.Contains(body, "\u202e") {
				t.Error("tool output reached the page unescaped")
			}
			if got := doc.Find(`[data-testid="compare"]`).AttrOr("data-differences", ""); got != "1" {
				t.Errorf("data-differences = %q, want 1", got)
			}
			// The JSON API says the same.
			res, js := e.do(t, http.MethodGet, views.APICompareURL("base", tt.b), nil)
			var got struct {
				Pairs []struct {
					Mark string `json:"mark"`
				} `json:"pairs"`
				Differences int `json:"differences"`
			}
			if err := json.Unmarshal([]byte(js), &got); err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d %s (%v)", views.APICompareURL("base", tt.b), res.StatusCode, js, err)
			}
			var marks []string
			for _, p := range got.Pairs {
				marks = append(marks, p.Mark)
			}
			if got.Differences != 1 || strings.Join(marks, " ") != tt.marks {
				t.Errorf("JSON: %d differences, marks %q", got.Differences, marks)
			}
		})
	}
}

// TestComparePage_self: a session compared with itself has no
// differences.
func TestComparePage_self(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "s", compareLog("TODO", "package a", true))
	doc, _ := compareDoc(t, e, "s", "s")
	if got := strings.Join(rowMarks(doc), " "); got != "same same same" {
		t.Fatalf("marks %q, want every row same", got)
	}
	if v := doc.Find(`[data-testid="compare-verdict"]`).Text(); !strings.Contains(v, "compared with itself: no differences") {
		t.Fatalf("verdict %q", v)
	}
}

// TestComparePage_missing: a missing (or deleted) session is a 404 page
// that names it, on either side; so is the picker's.
func TestComparePage_missing(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "s", compareLog("TODO", "package a", false))
	for _, path := range []string{views.CompareURL("s", "gone-session"), views.CompareURL("gone-session", "s"), views.ComparePickURL("gone-session")} {
		res, body := e.get(t, path)
		if res.StatusCode != http.StatusNotFound || !strings.Contains(body, "session gone-session not found") {
			t.Errorf("GET %s: %d, want 404 naming the session:\n%s", path, res.StatusCode, body)
		}
	}
}

// TestComparePick: the session page and the list link the picker, which
// lists the other sessions and redirects a typed id to the comparison.
func TestComparePick(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "one", compareLog("TODO", "package a", false))
	e.session(t, "two", compareLog("FIXME", "package a", false))
	_, page := e.get(t, views.SessionURL("one"))
	if !strings.Contains(page, `href="`+views.ComparePickURL("one")+`"`) {
		t.Fatal("the session page does not link compare")
	}
	_, list := e.get(t, views.HomeURL(""))
	if !strings.Contains(list, `href="`+views.ComparePickURL("two")+`"`) {
		t.Fatal("the list does not link compare")
	}
	_, pick := e.get(t, views.ComparePickURL("one"))
	if !strings.Contains(pick, `href="`+views.CompareURL("one", "two")+`"`) || strings.Contains(pick, `href="`+views.CompareURL("one", "one")+`"`) {
		t.Fatalf("the picker should offer two, not one itself:\n%s", pick)
	}
	res, _ := e.client().Get(e.base() + views.ComparePickURL("one") + "&b=two")
	if res != nil {
		res.Body.Close()
	}
	if res == nil || res.Request.URL.Path != views.CompareURL("one", "two") {
		t.Fatalf("the picker's form should land on the comparison, got %v", res.Request.URL)
	}
}

// TestCompareStream: a call committed to either session re-renders the
// comparison on the open stream.
func TestCompareStream(t *testing.T) {
	e := newEnv(t, nil)
	base := compareLog("TODO", "package a", false)
	e.session(t, "a", base)
	e.session(t, "b", base[:len(base)-1]) // b's turn is still open
	doc, _ := compareDoc(t, e, "a", "b")
	url := doc.Find("#compare-stream").AttrOr("data-init", "")
	_, url, _ = strings.Cut(url, "'")
	url, _, _ = strings.Cut(url, "'")
	if !strings.HasPrefix(url, views.CompareStreamURL("a", "b")+"?") {
		t.Fatalf("stream url %q", url)
	}
	c := e.stream(t, url)
	b := coretest.NewBuilder(t0)
	b.Events = append(b.Events, base[:len(base)-1]...)
	b.StepStart()
	b.Assistant("One more.", [3]string{"c9", "glob", `{"pattern":"*.md"}`})
	b.Call("c9", "glob", `{"pattern":"*.md"}`)
	e.append(t, "b", b.Events[len(base)-1:]...)
	evs := c.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), `id="compare"`) })
	got := evs[len(evs)-1].Elements()
	if !strings.Contains(got, `data-mark="inserted"`) || !strings.Contains(got, "glob") {
		t.Fatalf("the re-rendered comparison lacks the inserted glob call:\n%s", got)
	}
}

// TestCompareStream_deleted: a compare page open on a session that is
// deleted is told, live, which one went.
func TestCompareStream_deleted(t *testing.T) {
	e := newEnv(t, func(d *web.Deps) {
		d.Deleter = backend.Deleter{Store: d.Sessions.(backend.Source).Store.(backend.Remover)}
	})
	e.session(t, "a", compareLog("TODO", "package a", false))
	e.session(t, "b", compareLog("FIXME", "package a", false))
	// Without the page's seqs the stream renders once it has subscribed
	// to both sessions: the delete below reaches it there.
	c := e.stream(t, views.CompareStreamURL("a", "b"))
	c.until(t, func(ev sseEvent) bool { return strings.Contains(ev.Elements(), `id="compare"`) })
	if res, body := e.do(t, http.MethodDelete, "/api/sessions/b", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("DELETE b: %d %s", res.StatusCode, body)
	}
	c.until(t, func(ev sseEvent) bool {
		return strings.Contains(ev.Elements(), "live updates stopped: session b was deleted.")
	})
}

// TestComparePage_folds: a long run of same rows folds, its ends shown;
// every row is still in the page.
func TestComparePage_folds(t *testing.T) {
	e := newEnv(t, nil)
	e.session(t, "a", manyReads(20, -1))
	e.session(t, "b", manyReads(20, 10))
	doc, _ := compareDoc(t, e, "a", "b")
	if n := doc.Find(`[data-testid="compare-row"]`).Length(); n != 20 {
		t.Fatalf("%d rows, want 20", n)
	}
	var folds []string
	doc.Find(`[data-testid="compare-fold"]`).Each(func(_ int, s *goquery.Selection) {
		folds = append(folds, s.Find("summary").Text()+" ("+strconv.Itoa(s.Find(`[data-testid="compare-row"]`).Length())+" rows)")
	})
	// Rows 0–9 same, 10 differs, 11–19 same: each run keeps 2 rows at
	// each end.
	if got := strings.Join(folds, "; "); got != "6 more calls the same (6 rows); 5 more calls the same (5 rows)" {
		t.Fatalf("folds: %s", got)
	}
	if doc.Find(`[data-testid="compare-fold"] .differs`).Length() != 0 {
		t.Fatal("a differing row is folded")
	}
}
