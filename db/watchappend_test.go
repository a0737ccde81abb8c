package db

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"prism/core"
	"prism/core/coretest"
	"prism/core/search"
	"prism/store"
)

// hitSeqs are the seqs of the documents of session id a search for word
// finds.
func hitSeqs(t *testing.T, st *Store, id, word string) []int64 {
	t.Helper()
	q, err := search.Parse(word, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	page, err := st.Search(context.Background(), q, SearchOptions{Order: store.OrderTime, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, h := range page.Hits {
		if h.SessionID == id {
			seqs = append(seqs, h.Seq)
		}
	}
	return seqs
}

// TestAppendWatchedRewritesTheEnd writes a watched session's log as the
// watcher does when a step the file's end closed for now grows: an append
// that marks where the settled events end, then a rewrite of what follows
// the mark. The stored log, its summary and its search documents end up
// those of the final log written whole — the rewritten message's old
// words are not found, its new ones are — and a write that does not fit
// the stored session is refused as a conflict naming why.
func TestAppendWatchedRewritesTheEnd(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	const id = "watched-rewrite"
	h := core.SessionHeader{Version: core.SessionFormatVersion, ID: id, CreatedAt: 1000}
	// The settled events, then the end as the file's end closes it now
	// (a message still growing), then as it closes later.
	settled := coretest.NewBuilder(1000)
	settled.TurnStart().StepStart().User("deploy the service").Assistant("checking", [3]string{"c1", "bash", `{"cmd":"ls"}`}).Call("c1", "bash", `{"cmd":"ls"}`).Result("c1", "main.go", false, nil, nil).StepEnd()
	base := settled.Events
	endFor := func(text string, calls ...string) []core.Event {
		b := coretest.NewBuilder(2000)
		b.Events = append([]core.Event(nil), base...)
		var asked [][3]string
		for _, c := range calls {
			asked = append(asked, [3]string{c, "bash", `{"cmd":"make"}`})
		}
		b.StepStart().Assistant(text, asked...)
		for _, c := range calls {
			b.Call(c, "bash", `{"cmd":"make"}`)
		}
		return b.Events
	}
	// The end first asks for two calls, then for one, answered.
	first, final := endFor("bravo", "c2", "c3"), endFor("charlie delta", "c2")
	{
		b := coretest.NewBuilder(3000)
		b.Events = final
		b.Result("c2", "built", false, nil, nil)
		final = b.Events
	}
	if _, _, err := st.SyncWatched(ctx, h, base[:2]); err != nil {
		t.Fatal(err)
	}
	// An append past the settled events, marking them.
	out, added, err := st.AppendWatched(ctx, h, store.WatchedWrite{Stored: 2, From: 2, Events: first[2:], Mark: len(base)})
	if err != nil || out != store.ImportExtended || added != len(first)-2 {
		t.Fatalf("append: %s %d %v", out, added, err)
	}
	if got := hitSeqs(t, st, id, "bravo"); len(got) != 1 {
		t.Fatalf("bravo before the rewrite: hits at %v, want one", got)
	}
	// Refused: the store holds another number of events, or another
	// header; a rewrite without a mark before the stored end is invalid.
	for _, c := range []struct {
		w    store.WatchedWrite
		h    core.SessionHeader
		code string
	}{
		{store.WatchedWrite{Stored: 3, From: 3, Events: nil, Mark: -1}, h, core.CodeConflict},
		{store.WatchedWrite{Stored: len(first), From: len(first), Mark: -1}, core.SessionHeader{Version: core.SessionFormatVersion, ID: id, CreatedAt: 5}, core.CodeConflict},
		{store.WatchedWrite{Stored: len(first), From: 2, Events: first[2:], Mark: -1}, h, core.CodeInvalid},
	} {
		if _, _, err := st.AppendWatched(ctx, c.h, c.w); core.ErrorCode(err) != c.code {
			t.Errorf("%+v: err %v, want code %s", c.w, err, c.code)
		}
	}
	// The rewrite of what follows the mark.
	out, added, err = st.AppendWatched(ctx, h, store.WatchedWrite{Stored: len(first), From: len(base), Events: final[len(base):], Mark: len(base)})
	if err != nil || out != store.ImportReplaced || added != len(final)-len(base) {
		t.Fatalf("rewrite: %s %d %v", out, added, err)
	}
	got, err := st.LoadSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	fresh := newTestStore(t)
	if _, _, err := fresh.SyncWatched(ctx, h, final); err != nil {
		t.Fatal(err)
	}
	want, err := fresh.LoadSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != len(want.Events) {
		t.Fatalf("%d events stored, want %d", len(got.Events), len(want.Events))
	}
	for i := range got.Events {
		a, _ := got.Events[i].MarshalJSON()
		b, _ := want.Events[i].MarshalJSON()
		if string(a) != string(b) {
			t.Fatalf("seq %d: %s\nwant %s", i, a, b)
		}
	}
	gi, wi := got.Info, want.Info
	if !reflect.DeepEqual(gi.Summary, wi.Summary) || gi.UpdatedAt != wi.UpdatedAt {
		t.Errorf("summary %+v\nwant %+v", gi.Summary, wi.Summary)
	}
	if got := hitSeqs(t, st, id, "bravo"); len(got) != 0 {
		t.Errorf("bravo after the rewrite: hits at %v, want none", got)
	}
	if g, w := watchIndexRows(t, st), watchIndexRows(t, fresh); !reflect.DeepEqual(g, w) {
		t.Errorf("search documents %v\na whole write's %v", g, w)
	}
	if got, want := hitSeqs(t, st, id, "charlie"), hitSeqs(t, fresh, id, "charlie"); len(want) != 1 || !reflect.DeepEqual(got, want) {
		t.Errorf("charlie after the rewrite: hits at %v, a whole write %v", got, want)
	}
	// Without a mark (a store opened since), the summary before the
	// rewrite is read from the log: the same end again.
	st.marks.Drop(id)
	if _, _, err := st.AppendWatched(ctx, h, store.WatchedWrite{Stored: len(final), From: len(base), Events: final[len(base):], Mark: len(final)}); err != nil {
		t.Fatalf("rewrite without a mark: %v", err)
	}
	again, err := st.Session(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Summary, wi.Summary) {
		t.Errorf("summary after a rewrite without a mark %+v\nwant %+v", again.Summary, wi.Summary)
	}
	// A session deleted during the run gets nothing.
	if _, err := st.DeleteSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	if out, _, err := st.AppendWatched(ctx, h, store.WatchedWrite{Stored: len(final), From: len(final), Mark: -1}); err != nil || out != store.ImportSkipped {
		t.Errorf("after a delete: %s %v, want skipped", out, err)
	}
}

// watchIndexRows are the store's search documents and their terms.
func watchIndexRows(t *testing.T, st *Store) []string {
	t.Helper()
	if err := st.catchUpIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := st.rdb.Query(`SELECT d.session_id, d.seq, d.kind, COALESCE(d.call_id, ''), d.card, COALESCE(d.result_seq, -1), COALESCE(d.snip, ''),
		COALESCE(f.name, ''), COALESCE(f.body, ''), COALESCE(f.more, '') FROM search_docs d LEFT JOIN search_fts f ON f.docid = d.id ORDER BY d.session_id, d.seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var sid, kind, call, snip, name, body, more string
		var seq, card, res int64
		if err := rows.Scan(&sid, &seq, &kind, &call, &card, &res, &snip, &name, &body, &more); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d %s %s#%d result=%d %q %q %q %q", sid, seq, kind, call, card, res, snip, name, body, more))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// No term row outlives its document.
	var docs, terms, bravo int
	if err := st.rdb.QueryRow(`SELECT (SELECT count(*) FROM search_docs), (SELECT count(*) FROM search_fts), (SELECT count(*) FROM search_fts WHERE search_fts MATCH 'bravo')`).Scan(&docs, &terms, &bravo); err != nil {
		t.Fatal(err)
	}
	return append(out, fmt.Sprintf("%d documents, %d term rows, %d with bravo", docs, terms, bravo))
}
