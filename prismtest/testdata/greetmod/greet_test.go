package greet_test

import (
	"testing"

	"example.com/greet"

	"prism/core"
	"prism/prismtest"
)

func registry() *core.Registry {
	reg := core.NewRegistry(nil)
	reg.MustRegister(greet.New())
	return reg
}

func TestGreetCards(t *testing.T) {
	c := prismtest.Card(t, registry(), "greet", `{"name":"Ada"}`)
	if c.Pending.State() != "pending" || c.State() != "ok" || c.Title() != "Greeted Ada" {
		t.Errorf("%s: %s → %s %q", c, c.Pending.State(), c.State(), c.Title())
	}
	c.Golden(t, "testdata/greet-ada.golden")
}

func TestGreetNobody(t *testing.T) {
	c := prismtest.Card(t, registry(), "greet", `{"name":"nobody"}`)
	if c.State() != "error" || c.Content() != "Error: there is nobody to greet" {
		t.Errorf("%s: %s %q", c, c.State(), c.Content())
	}
}

func TestGreetRun(t *testing.T) {
	reg := registry()
	gate := prismtest.Hold(t, reg, "greet")
	srv := prismtest.NewServer(t, prismtest.Options{Tools: reg, Script: prismtest.NewScript().
		Step("Greeting Ada.", prismtest.Call("greet", `{"name":"Ada"}`)).
		Final("Done.")})
	id := srv.Start("Greet Ada.")
	st := srv.Stream(id)
	st.Card("call_1", "pending")
	gate.Release()
	if got := st.Card("call_1", "ok").Find(".title").Text(); got != "Greeted Ada" {
		t.Errorf("completed card title %q", got)
	}
	srv.Wait(id)
}
