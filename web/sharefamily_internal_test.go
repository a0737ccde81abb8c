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

// TestFamilyCache_readAfterChange: a reader that comes after a change
// of a member does not wait for (nor take) a read that began before it:
// it reads on its own, and its read is the one kept.
func TestFamilyCache_readAfterChange(t *testing.T) {
	var c familyCache
	started, release := make(chan struct{}), make(chan struct{})
	reads := 0
	first := make(chan *linkFamily)
	go func() {
		f, _ := c.get("L", func() (*linkFamily, error) {
			reads++
			close(started)
			<-release
			return &linkFamily{key: "old", members: map[string]bool{"p": true}}, nil
		})
		first <- f
	}()
	<-started
	c.invalidate("p") // the read under way began before this change
	f, err := c.get("L", func() (*linkFamily, error) {
		return &linkFamily{key: "new", members: map[string]bool{"p": true}}, nil
	})
	if err != nil || f.key != "new" {
		t.Errorf("a reader after the change got %+v, %v; want its own read", f, err)
	}
	close(release)
	if f := <-first; f.key != "old" {
		t.Errorf("the first reader got %q", f.key)
	}
	if got, _ := c.get("L", nil); got.key != "new" {
		t.Errorf("kept %q, want the read made after the change", got.key)
	}
	if reads != 1 {
		t.Errorf("%d reads", reads)
	}
}
