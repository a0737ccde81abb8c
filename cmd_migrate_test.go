package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core/share"
	"prism/db"
	"prism/internal/pgtest"
	"prism/pgstore"
	"prism/store"
	"prism/store/storetest"
)

// TestMigrate copies a SQLite store — live, imported and subagent
// sessions, share links — into PostgreSQL: every session's log exports
// byte for byte the same from both, the links resolve by the same tokens;
// a run interrupted halfway (the target holds a prefix of one log and not
// another) resumes; a target whose log diverges is refused.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "prism.db")
	src, err := db.Open(ctx, path, db.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	storetest.MustCreate(t, src, "live")
	turn := storetest.TurnEvents(0, 1, false)
	if err := src.AppendEvents(ctx, "live", turn); err != nil {
		t.Fatal(err)
	}
	if _, err := src.ImportFile(ctx, "testdata/dsh/export/session-export.zip"); err != nil {
		t.Fatal(err)
	}
	if _, err := src.ImportFile(ctx, "testdata/dsh/basic/session.jsonl"); err != nil {
		t.Fatal(err)
	}
	link, tok, err := src.CreateShare(ctx, share.Spec{SessionID: "live", Label: "review", Redact: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.RevokeShare(ctx, link.ID); err != nil {
		t.Fatal(err)
	}
	_, tok2, err := src.CreateShare(ctx, share.Spec{SessionID: "live", UpToSeq: new(int64(4))})
	if err != nil {
		t.Fatal(err)
	}
	want := exportAll(t, src)
	counts, err := src.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src.Close()

	// An interrupted earlier run: a prefix of "live" is there, nothing else.
	dbURL := pgtest.DB(t)
	dst, err := pgstore.Open(ctx, dbURL, pgstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := dst.SyncLog(ctx, storetest.Header("live"), turn[:3], store.SourceLive, false); err != nil {
		t.Fatal(err)
	}
	dst.Close()

	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"migrate", "--from", path, "--to", dbURL}, &out, &errOut); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if got, w := out.String(), fmt.Sprintf("copied 4 sessions (3 created, 1 extended, 0 already there), %d events, 2 share links", counts.Events); !strings.Contains(got, w) {
		t.Errorf("migrate said %q", got)
	}
	dst, err = pgstore.Open(ctx, dbURL, pgstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if diff := cmp.Diff(want, exportAll(t, dst)); diff != "" {
		t.Errorf("exports differ between SQLite and PostgreSQL (-sqlite +postgres):\n%s", diff)
	}
	for _, tk := range []string{tok, tok2} {
		hash, _ := share.ParseToken(tk)
		if _, err := dst.ShareByToken(ctx, hash); err != nil {
			t.Errorf("a link's token does not resolve after the copy: %v", err)
		}
	}
	links, _ := dst.Shares(ctx, "live")
	if len(links) != 2 || links[0].RevokedAt == 0 || links[0].Label != "review" || links[1].UpToSeq == nil || *links[1].UpToSeq != 4 {
		t.Errorf("copied links = %+v", links)
	}

	// Again: everything is there already.
	out.Reset()
	if code := run(ctx, []string{"migrate", "--from", path, "--to", dbURL}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "(0 created, 0 extended, 4 already there)") {
		t.Errorf("second migrate: exit %d, %q %s", code, out.String(), errOut.String())
	}
	// A target whose log of a session differs is refused, naming it.
	other := pgtest.DB(t)
	dst2, err := pgstore.Open(ctx, other, pgstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	changed := storetest.TurnEvents(0, 9, true)
	if _, _, err := dst2.SyncLog(ctx, storetest.Header("live"), changed, store.SourceLive, false); err != nil {
		t.Fatal(err)
	}
	dst2.Close()
	errOut.Reset()
	if code := run(ctx, []string{"migrate", "--from", path, "--to", other}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "session live already exists with a different log") {
		t.Errorf("migrate onto a diverging log: exit %d, %s", code, errOut.String())
	}
	for _, args := range [][]string{{"migrate"}, {"migrate", "--from", path, "--to", path}, {"migrate", "--from", dbURL, "--to", dbURL}} {
		if code := run(ctx, args, &out, &errOut); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// exportAll exports every session of a store as JSONL, by id.
func exportAll(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	page, err := st.ListSessions(context.Background(), store.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range page.Sessions {
		var b bytes.Buffer
		if err := st.Export(context.Background(), s.ID, &b); err != nil {
			t.Fatal(err)
		}
		out[s.ID] = b.String()
	}
	return out
}
