package watch_test

import (
	"context"
	"path/filepath"
	"testing"

	"prism/internal/pgtest"
	"prism/pgstore"
)

// TestWatchSessionDeletedOnAnotherNode: on a PostgreSQL cluster, a
// family of watched sessions (a parent and its subagent) deleted through
// another node — this node's watcher does not know of it — is stored
// again from its files when they grow, created anew: with its source
// info (the watcher had recorded it before, but the deletion took it) and
// the parent's link note nesting the child (the deletion took the
// parent's notes), as a first read gives them.
func TestWatchSessionDeletedOnAnotherNode(t *testing.T) {
	ctx := context.Background()
	for _, f := range families() {
		t.Run(f.name, func(t *testing.T) {
			url := pgtest.DB(t)
			open := func() *pgstore.Store {
				st, err := pgstore.Open(ctx, url, pgstore.Options{Logger: quietLogger()})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st
			}
			a, b := open(), open()
			root := t.TempDir()
			w := newQuietWatcher(t, a, root)
			appendFile(t, filepath.Join(root, f.parentRel), f.parentHead+f.parentRest)
			appendFile(t, filepath.Join(root, f.childRel), f.child)
			scanOK(t, w)
			checkLinked(t, a, f)
			if _, err := b.DeleteSession(ctx, f.parentID); err != nil {
				t.Fatal(err)
			}
			if _, err := a.LoadSession(ctx, f.childID); err == nil {
				t.Fatal("the child outlived its parent's deletion")
			}
			appendFile(t, filepath.Join(root, f.parentRel), f.parentMore)
			appendFile(t, filepath.Join(root, f.childRel), f.childMore)
			scanOK(t, w)
			for _, id := range []string{f.parentID, f.childID} {
				if _, found, err := a.SourceInfo(ctx, id); err != nil || !found {
					t.Errorf("%s stored again without its source info (found %v, err %v)", id, found, err)
				}
			}
			checkLinked(t, a, f)
		})
	}
}
