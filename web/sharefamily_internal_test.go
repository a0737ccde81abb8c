package web

import "testing"

// TestFamilyCache_invalidation: a link's family is read once and kept;
// a change of one of its members drops it (and names its key), a change
// of another session does not; a read that a change of one of its
// members overtook is returned but not kept, one overtaken by another
// session's change is kept.
func TestFamilyCache_invalidation(t *testing.T) {
	var c familyCache
	reads := 0
	fam := func(members ...string) func() (*linkFamily, error) {
		return func() (*linkFamily, error) {
			reads++
			m := map[string]bool{}
			for _, id := range members {
				m[id] = true
			}
			return &linkFamily{members: m}, nil
		}
	}
	get := func(key string, read func() (*linkFamily, error)) {
		t.Helper()
		if _, err := c.get(key, read); err != nil {
			t.Fatal(err)
		}
	}
	get("L", fam("p", "k"))
	get("L", fam("p", "k"))
	if reads != 1 || !c.has("L") {
		t.Fatalf("%d reads for two gets, kept %v; want 1, kept", reads, c.has("L"))
	}
	if dropped := c.invalidate("other"); len(dropped) != 0 || !c.has("L") {
		t.Errorf("a change of a session outside the family dropped %v", dropped)
	}
	if dropped := c.invalidate("k"); !dropped["L"] || c.has("L") {
		t.Errorf("a change of a member dropped %v, kept %v; want L dropped", dropped, c.has("L"))
	}
	get("L", func() (*linkFamily, error) {
		c.invalidate("k") // the member changes while the family is read
		return fam("p", "k")()
	})
	if c.has("L") {
		t.Errorf("a read overtaken by its member's change was kept")
	}
	get("L", func() (*linkFamily, error) {
		c.invalidate("other")
		return fam("p", "k")()
	})
	if !c.has("L") {
		t.Errorf("a read overtaken by another session's change was not kept")
	}
}
