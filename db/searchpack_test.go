package db

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"prism/core/search"
	"prism/store/storetest"
)

// TestUnpackPlainRow: unpackPlainRow reads what plainPacked writes —
// numbers, texts of any bytes (NUL, non-ASCII, empty), NULLs — and
// refuses anything else with an error naming what was wrong.
func TestUnpackPlainRow(t *testing.T) {
	var h SearchHit
	doc, snip, has, err := unpackPlainRow("42,-1,0,-1,1764500000000,2,7,0,0,-1,5,4,-1:s1session\x00ab\u00e9done", &h)
	if err != nil {
		t.Fatal(err)
	}
	want := SearchHit{SessionID: "s1", Kind: "session", Seq: -1, ResultSeq: -1, Time: 1764500000000, SessionTitle: "\x00ab\u00e9", SessionStatus: "done"}
	if doc != 42 || has || snip != "" || !hitEqual(h, want) {
		t.Errorf("got doc %d, snippet %q (%v), hit %+v; want 42, none, %+v", doc, snip, has, h, want)
	}
	h = SearchHit{}
	doc, snip, has, err = unpackPlainRow("7,3,2,4,9,1,4,2,4,7,0,7,2:scardc1grepTIMEOUTrunning{}", &h)
	want = SearchHit{SessionID: "s", Kind: "card", CallID: "c1", Card: 2, Tool: "grep", Seq: 3, ResultSeq: 4, Time: 9, Failed: true, ErrorCode: "TIMEOUT", SessionStatus: "running"}
	if err != nil || doc != 7 || !has || snip != "{}" || !hitEqual(h, want) {
		t.Errorf("got doc %d, snippet %q (%v), hit %+v, %v; want 7, {}, %+v", doc, snip, has, h, err, want)
	}
	for _, bad := range []string{
		"",
		"1,2,3",
		"x,0,0,0,0,0,0,0,0,0,0,0,0:",
		"1,0,0,0,0,0,0,0,0,0,0,0,0",      // no colon
		"1,0,0,0,0,5,0,0,0,0,0,0,0:abc",  // a text longer than what is left
		"1,0,0,0,0,1,0,0,0,0,0,0,0:abcd", // bytes after the texts
	} {
		if _, _, _, err := unpackPlainRow(bad, &SearchHit{}); err == nil || !strings.Contains(err.Error(), "packed columns") {
			t.Errorf("unpackPlainRow(%q) = %v, want an error naming the packed columns", bad, err)
		}
	}
}

// TestPlainPageReadsEveryColumnAsStored: a page of operators alone (one
// packed text a row) holds each hit's columns as search_docs and sessions
// hold them, a title with NUL and non-ASCII bytes included, on every page.
func TestPlainPageReadsEveryColumnAsStored(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "pack.db"), Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range []string{"a", "b"} {
		storetest.MustCreate(t, st, id)
		if err := st.AppendEvents(ctx, id, storetest.NewCorpus(1).Log(1000, 1764500000000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.catchUpIndex(ctx); err != nil {
		t.Fatal(err)
	}
	const title = "T\x00\u00ef\u2713 ,:"
	if err := st.write(ctx, func(w *wtx) error {
		_, err := w.tx.Exec("UPDATE sessions SET title = ? WHERE id = 'a'", title)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, qs := range []string{"tool:grep", "error:", "kind:session", "tool:bash -refused"} {
		q, err := search.Parse(qs, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		o, pages, hits := SearchOptions{Order: OrderTime, Limit: 7}, 0, 0
		for {
			page, err := st.Search(ctx, q, o)
			if err != nil {
				t.Fatalf("%q: %v", qs, err)
			}
			pages++
			for _, h := range page.Hits {
				hits++
				var want SearchHit
				var code sql.NullString
				if err := st.rdb.QueryRow(`SELECT d.session_id, d.seq, d.kind, COALESCE(d.call_id, ''), d.card, COALESCE(d.tool, ''),
					COALESCE(d.result_seq, -1), d.error, d.time, s.title, s.status FROM search_docs d JOIN sessions s ON s.id = d.session_id
					WHERE d.session_id = ? AND d.seq = ?`, h.SessionID, h.Seq).Scan(&want.SessionID, &want.Seq, &want.Kind, &want.CallID, &want.Card,
					&want.Tool, &want.ResultSeq, &code, &want.Time, &want.SessionTitle, &want.SessionStatus); err != nil {
					t.Fatalf("%q: hit %+v: %v", qs, h, err)
				}
				want.Failed, want.ErrorCode, want.Snippet = code.Valid, code.String, h.Snippet
				if h.SessionID == "a" && h.SessionTitle != title {
					t.Errorf("%q: session a's title %q, want %q", qs, h.SessionTitle, title)
				}
				if h.Snippet.Highlights == nil {
					t.Errorf("%q: hit %+v without its snippet", qs, h)
				}
				if !hitEqual(h, want) {
					t.Errorf("%q: hit\n%+v\nstored as\n%+v", qs, h, want)
				}
			}
			if page.NextCursor == "" {
				break
			}
			o.Cursor = page.NextCursor
		}
		if pages < 2 && strings.HasPrefix(qs, "tool:") || hits == 0 {
			t.Errorf("%q: %d page(s) of %d hits: no page after the first is read", qs, pages, hits)
		}
	}
}

// hitEqual compares two hits but their snippets' highlights.
func hitEqual(a, b SearchHit) bool {
	a.Snippet.Highlights, b.Snippet.Highlights = nil, nil
	return a.SessionID == b.SessionID && a.SessionTitle == b.SessionTitle && a.SessionStatus == b.SessionStatus && a.Kind == b.Kind &&
		a.Seq == b.Seq && a.CallID == b.CallID && a.Card == b.Card && a.Tool == b.Tool && a.ResultSeq == b.ResultSeq &&
		a.Failed == b.Failed && a.ErrorCode == b.ErrorCode && a.Time == b.Time && a.Snippet.Label == b.Snippet.Label && a.Snippet.Text == b.Snippet.Text
}
