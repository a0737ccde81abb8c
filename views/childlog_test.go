package views_test

import (
	"testing"

	"prism/core/coretest"
	"prism/views"
)

// TestChildLog_Extend: a child's log grows by the events that continue
// it (those it has are skipped); events past a gap are refused whole; a
// slice Log returned earlier keeps what it held.
func TestChildLog_Extend(t *testing.T) {
	b := coretest.NewBuilder(0)
	b.TurnStart().StepStart().User("go").Call("c1", "note", `{}`).Call("c2", "note", `{}`).Call("c3", "note", `{}`).Call("c4", "note", `{}`)
	ev := b.Events
	c := &views.ChildLog{Events: ev[:3:3]}
	before := c.Log()
	if !c.Extend(ev[1:5]) {
		t.Fatal("events continuing the log (two it has) were refused")
	}
	if got := c.LastSeq(); got != ev[4].Seq {
		t.Fatalf("last seq %d, want %d", got, ev[4].Seq)
	}
	if c.Extend(ev[6:]) {
		t.Error("events after a gap were taken")
	}
	if got := len(c.Log()); got != 5 {
		t.Errorf("the log holds %d events after a refused gap, want 5", got)
	}
	if len(before) != 3 {
		t.Errorf("an earlier Log changed: %d events", len(before))
	}
	if !c.Extend(ev[5:]) || len(c.Log()) != len(ev) {
		t.Errorf("the rest was not taken: %d of %d", len(c.Log()), len(ev))
	}
}
