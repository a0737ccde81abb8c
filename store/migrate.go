package store

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// Migrate runs an engine's migrations: the files migrations/*.sql of fsys
// (an engine's embedded folder), in name order, each one not in applied
// (the names the database recorded) passed to apply, which runs it in a
// transaction of its own and records its name there. A recorded name that
// fsys lacks is refused: the database was written by a newer prism.
func Migrate(ctx context.Context, fsys fs.FS, applied []string, apply func(ctx context.Context, name, body string) error) error {
	paths, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("list migrations: %w", err)
	}
	sort.Strings(paths)
	known := map[string]bool{}
	for _, p := range paths {
		known[strings.TrimPrefix(p, "migrations/")] = true
	}
	done := map[string]bool{}
	for _, n := range applied {
		if !known[n] {
			return fmt.Errorf("database has migration %s, unknown to this prism (written by a newer version?)", n)
		}
		done[n] = true
	}
	for _, p := range paths {
		name := strings.TrimPrefix(p, "migrations/")
		if done[name] {
			continue
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
		if err := apply(ctx, name, string(body)); err != nil {
			return err
		}
	}
	return nil
}
