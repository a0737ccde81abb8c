package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"prism/backend"
	"prism/core/notes"
	"prism/core/share"
	"prism/db"
	"prism/internal/pgtest"
	"prism/pgstore"
	"prism/sources/otel"
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

// TestMigrate_spansNotesLogins: the received OpenTelemetry spans, every
// note (a removed one too, ids and times kept) and the owner logins that
// have not expired reach PostgreSQL; the spans keep deduplicating there (a
// retried batch changes nothing) and the session derived from them keeps
// its source.
func TestMigrate_spansNotesLogins(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "prism.db")
	src, err := db.Open(ctx, path, db.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := os.ReadFile("sources/otel/testdata/batch.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (backend.Traces{Store: src}).ReceiveTraces(ctx, batch, true); err != nil {
		t.Fatal(err)
	}
	spans, err := src.CountSpans(ctx)
	if err != nil || spans == 0 {
		t.Fatalf("source spans %d %v", spans, err)
	}
	storetest.MustCreate(t, src, "live")
	if err := src.AppendEvents(ctx, "live", storetest.TurnEvents(0, 1, false)); err != nil {
		t.Fatal(err)
	}
	kept, err := src.PutNote(ctx, notes.Input{Session: "live", Kind: notes.KindLabel, Author: "owner", Data: []byte(`{"label":"good","note":"kept"}`)})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := src.PutNote(ctx, notes.Input{Session: "live", Kind: notes.KindLabel, Data: []byte(`{"label":"bad"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.RemoveNote(ctx, "live", gone.ID); err != nil {
		t.Fatal(err)
	}
	wantNotes, err := src.Notes(ctx, "live", notes.Query{Removed: true})
	if err != nil || len(wantNotes) != 2 {
		t.Fatalf("source notes %+v %v", wantNotes, err)
	}
	valid, expired := sha256.Sum256([]byte("valid")), sha256.Sum256([]byte("expired"))
	if err := src.AddOwnerLogin(ctx, valid, time.Now().Add(time.Hour).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if err := src.AddOwnerLogin(ctx, expired, time.Now().Add(time.Hour).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if err := src.RevokeOwnerLogin(ctx, expired); err != nil {
		t.Fatal(err)
	}
	otelID := otel.ConversationSessionID("conv 7/α")
	wantLog := exportAll(t, src)[otelID]
	src.Close()

	dbURL := pgtest.DB(t)
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"migrate", "--from", path, "--to", dbURL}, &out, &errOut); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if w := fmt.Sprintf("2 notes, %d spans, 1 owner logins", spans); !strings.Contains(out.String(), w) {
		t.Errorf("migrate said %q, want %q", out.String(), w)
	}
	dst, err := pgstore.Open(ctx, dbURL, pgstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if n, err := dst.CountSpans(ctx); err != nil || n != spans {
		t.Errorf("target spans %d %v, want %d", n, err, spans)
	}
	gotNotes, err := dst.Notes(ctx, "live", notes.Query{Removed: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantNotes, gotNotes); diff != "" {
		t.Errorf("notes differ (-sqlite +postgres):\n%s", diff)
	}
	if gotNotes[0].ID != kept.ID || gotNotes[1].RemovedAt == 0 {
		t.Errorf("copied notes %+v", gotNotes)
	}
	if ok, err := dst.OwnerLoginValid(ctx, valid, time.Now().UnixMilli()); err != nil || !ok {
		t.Errorf("the owner login was not copied: %v %v", ok, err)
	}
	if ok, _ := dst.OwnerLoginValid(ctx, expired, time.Now().UnixMilli()); ok {
		t.Errorf("a revoked owner login was copied")
	}
	info, err := dst.Session(ctx, otelID)
	if err != nil || info.Source != store.SourceOTel {
		t.Fatalf("the session derived from spans: %+v %v", info, err)
	}
	// The same batch again, now received by PostgreSQL: nothing changes.
	resp, err := (backend.Traces{Store: dst}).ReceiveTraces(ctx, batch, true)
	if err != nil || resp.GetPartialSuccess().GetRejectedSpans() != 0 {
		t.Fatal(resp, err)
	}
	if got := exportAll(t, dst)[otelID]; got != wantLog {
		t.Errorf("a retried batch after the copy changed %s", otelID)
	}
	// Again: everything is there already.
	out.Reset()
	if code := run(ctx, []string{"migrate", "--from", path, "--to", dbURL}, &out, &errOut); code != 0 {
		t.Fatalf("second migrate: exit %d, %s", code, errOut.String())
	}
	if n, _ := dst.CountSpans(ctx); n != spans {
		t.Errorf("after a second run: %d spans, want %d", n, spans)
	}
	if again, _ := dst.Notes(ctx, "live", notes.Query{Removed: true}); len(again) != 2 {
		t.Errorf("after a second run: %d notes, want 2", len(again))
	}
}
