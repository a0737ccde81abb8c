package web_test

import (
	"net/http"
	"strings"
	"testing"

	"prism/core"
	"prism/core/coretest"
)

// TestList_annotatedFilter: the list's "annotated" box shows how many
// sessions have a label, and checked (?annotated=1) keeps only those; a
// bad value is a 400 naming it.
func TestList_annotatedFilter(t *testing.T) {
	e := notesEnv(t) // session s, call c1
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("other").StepEnd()
	b.TurnEnd(core.TurnCompleted)
	e.session(t, "plain", b.Events)
	if res, body := e.post(t, "/api/sessions/s/annotations", "application/json", `{"callId":"c1","label":"wrong"}`); res.StatusCode != http.StatusCreated {
		t.Fatalf("POST annotations: %d %s", res.StatusCode, body)
	}
	_, all := e.get(t, "/")
	if !strings.Contains(all, `data-testid="filter-annotated"`) || !strings.Contains(all, "annotated (1)") {
		t.Errorf("the list has no annotated box with its count")
	}
	if !strings.Contains(all, `id="session-row-plain"`) && !strings.Contains(all, "/sessions/plain") {
		t.Fatalf("the unfiltered list lacks session plain")
	}
	_, some := e.get(t, "/?annotated=1")
	if !strings.Contains(some, "/sessions/s\"") || strings.Contains(some, "/sessions/plain") {
		t.Errorf("?annotated=1 should list s only")
	}
	if !strings.Contains(some, `name="annotated" value="1" checked`) {
		t.Errorf("?annotated=1 does not check the box")
	}
	if a := e.ask(t, http.MethodGet, "/?annotated=yes", "", nil); a.status != http.StatusBadRequest || !strings.Contains(a.msg, "annotated") {
		t.Errorf("?annotated=yes: %d %q, want 400 naming annotated", a.status, a.msg)
	}
}
