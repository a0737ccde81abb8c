package web_test

import (
	"archive/zip"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"prism/core/coretest"
	"prism/views"
	"prism/views/testgen"
)

// TestSaveAsTest: the owner's call page of a completed call has a "save as
// test" button that downloads a zip of one directory — the generated test,
// the recording and the golden of both cards (package views/testgen) — for
// the card the page shows (?card= for a reused call id); a pending call
// and a share link's page have no button, and the pending call's zip is a
// 404.
func TestSaveAsTest(t *testing.T) {
	e, _ := shareEnv(t, nil)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("go")
	b.Assistant("", [3]string{"c-note", "note", `{"title":"Plan"}`})
	b.Call("c-note", "note", `{"title":"Plan"}`).Result("c-note", "# Plan", false, map[string]any{"lineCount": 0, "title": "Plan"}, nil)
	b.StepEnd().StepStart()
	b.Assistant("", [3]string{"c-note", "note", `{"title":"Again"}`})
	b.Call("c-note", "note", `{"title":"Again"}`).Result("c-note", "# Again", false, nil, nil)
	b.Call("c-pending", "note", `{"title":"waits"}`)
	e.session(t, "sv", b.Events)

	button := func(path string) (string, bool) {
		t.Helper()
		_, page := e.get(t, path)
		a := doc(t, page).Find(`a[data-testid="save-as-test"]`)
		_, download := a.Attr("download")
		href, ok := a.Attr("href")
		return href, ok && download
	}
	unzip := func(href string) map[string]string {
		t.Helper()
		res, body := e.do(t, http.MethodGet, href, nil)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/zip" ||
			!strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment; filename=") {
			t.Fatalf("GET %s = %d %q %q", href, res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"))
		}
		z, err := zip.NewReader(bytes.NewReader([]byte(body)), int64(len(body)))
		if err != nil {
			t.Fatalf("GET %s: not a zip: %v", href, err)
		}
		files := map[string]string{}
		for _, f := range z.File {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			files[f.Name] = string(data)
		}
		return files
	}

	_, page := e.get(t, "/sessions/sv")
	first, _ := doc(t, page).Find(`[data-call-id="c-note"]`).Eq(0).Attr("id")
	second, _ := doc(t, page).Find(`[data-call-id="c-note"]`).Eq(1).Attr("id")
	href, ok := button("/sessions/sv/calls/c-note")
	if !ok || href != views.CallTestURL("sv", "c-note", first) {
		t.Fatalf("the call page's save-as-test button: %q (found: %v)", href, ok)
	}
	files := unzip(href)
	const name = "note_c_note"
	src, recJSON, golden := files[name+"/"+name+"_test.go"], files[name+"/testdata/"+name+".call.json"], files[name+"/testdata/"+name+".golden"]
	if len(files) != 3 || !strings.Contains(src, "package "+name+"\n") || !strings.Contains(src, "prismtest.Present(t, reg, rec)") ||
		!strings.Contains(src, "prismtest.Rerun(t, reg, rec)") {
		t.Fatalf("the zip holds %d files; the test:\n%s", len(files), src)
	}
	rec, err := testgen.Decode([]byte(recJSON))
	if err != nil || rec.Tool != "note" || rec.Arguments != `{"title":"Plan"}` || rec.Result.Content.PlainText() != "# Plan" {
		t.Fatalf("the recording: %+v, %v", rec, err)
	}
	if !strings.HasPrefix(golden, `call "note" "{\"title\":\"Plan\"}"`) || !strings.Contains(golden, `data-state="pending"`) || !strings.Contains(golden, `data-state="ok"`) {
		t.Errorf("the golden does not hold both cards of the call:\n%s", golden)
	}

	// The second card of the reused call id: its own button and recording.
	href, ok = button(views.CallURL("sv", "c-note", second))
	if !ok || href != views.CallTestURL("sv", "c-note", second) {
		t.Fatalf("the second card's button: %q", href)
	}
	if rec, err := testgen.Decode([]byte(unzip(href)[name+"/testdata/"+name+".call.json"])); err != nil || rec.Arguments != `{"title":"Again"}` {
		t.Errorf("the second card's recording: %+v, %v", rec, err)
	}

	if _, ok := button("/sessions/sv/calls/c-pending"); ok {
		t.Error("a pending call's page offers save as test")
	}
	if res, _ := e.do(t, http.MethodGet, views.CallTestURL("sv", "c-pending", ""), nil); res.StatusCode != 404 {
		t.Errorf("a pending call's test.zip = %d, want 404", res.StatusCode)
	}
	_, link := e.share(t, "sv", "{}")
	if _, ok := button(link + "/calls/c-note"); ok {
		t.Error("a share link's call page offers save as test")
	}
}
