package storetest

import (
	"context"
	"strings"
	"testing"

	"prism/store"
)

// annotatedCounter is the count of the "annotated" filter both engines
// offer.
type annotatedCounter interface {
	AnnotatedCount(ctx context.Context) (int, error)
}

// testListAnnotated: ListOptions.Annotated keeps the sessions with a label
// (on a call or on the session), not one whose only label was removed;
// AnnotatedCount counts the same sessions.
func testListAnnotated(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		MustCreate(t, st, id)
		if err := st.AppendEvents(ctx, id, TurnEvents(0, 1, false)); err != nil {
			t.Fatal(err)
		}
	}
	mustPut(t, st, label("a", "call_1", `{"label":"wrong"}`))
	mustPut(t, st, label("b", "", `{"label":"good"}`))
	gone := mustPut(t, st, label("c", "call_1", `{"label":"slow"}`))
	if _, err := st.RemoveNote(ctx, "c", gone.ID); err != nil {
		t.Fatal(err)
	}
	page, err := st.ListSessions(ctx, store.ListOptions{Annotated: true, Sort: store.SortCreated})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range page.Sessions {
		ids = append(ids, s.ID)
	}
	if got := strings.Join(ids, ","); got != "b,a" && got != "a,b" {
		t.Errorf("annotated sessions = %s, want a and b", got)
	}
	c, ok := st.(annotatedCounter)
	if !ok {
		t.Fatal("the store has no AnnotatedCount")
	}
	if n, err := c.AnnotatedCount(ctx); err != nil || n != 2 {
		t.Errorf("AnnotatedCount = %d, %v; want 2", n, err)
	}
}
