package db

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
)

func TestStore_derivedSessionRow(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	mustCreate(t, st, "s")
	info, _ := st.Session(ctx, "s")
	if info.Status != StatusIdle || info.LastSeq != -1 || info.Title != "" || info.Source != SourceLive || info.UpdatedAt != 1764500000000 {
		t.Errorf("new session row = %+v", info)
	}
	turn := turnEvents(0, 1, true)
	if err := st.AppendEvents(ctx, "s", turn[:3]); err != nil {
		t.Fatal(err)
	}
	info, _ = st.Session(ctx, "s")
	if info.Status != StatusRunning || info.Title != "do thing" {
		t.Errorf("mid-turn row: status %s title %q, want running and %q (the prompt's first line)", info.Status, info.Title, "do thing")
	}
	if err := st.AppendEvents(ctx, "s", turn[3:]); err != nil {
		t.Fatal(err)
	}
	info, _ = st.Session(ctx, "s")
	if info.Status != StatusIdle || info.Calls != 1 || info.Errors != 1 || info.LastSeq != 7 || info.UpdatedAt != turn[7].Time {
		t.Errorf("after the turn: %+v, want idle, 1 call, 1 error, last seq 7", info)
	}
	long := strings.Repeat("word ", 100)
	more := []core.Event{
		ev(8, core.EventSessionTitle, `{"title":"  Named\n by   the model ","messageSeqs":[2],"source":"llm"}`),
		ev(9, core.EventUserMessage, fmt.Sprintf(`{"id":"x","role":"user","content":[{"type":"text","text":%q}],"source":{"kind":"user"}}`, long)),
	}
	if err := st.AppendEvents(ctx, "s", more); err != nil {
		t.Fatal(err)
	}
	info, _ = st.Session(ctx, "s")
	if info.Title != "Named by the model" {
		t.Errorf("title = %q, want the session/title one", info.Title)
	}
	// The fallback title is cut to 80 characters, on a word boundary.
	mustCreate(t, st, "long")
	st.AppendEvents(ctx, "long", []core.Event{ev(0, core.EventUserMessage, fmt.Sprintf(`{"id":"x","role":"user","content":[{"type":"text","text":%q}],"source":{"kind":"user"}}`, long))})
	if info, _ := st.Session(ctx, "long"); len([]rune(info.Title)) > 80 || !strings.HasSuffix(info.Title, " word…") {
		t.Errorf("long title = %q (%d runes), want at most 80 ending in a whole word and …", info.Title, len([]rune(info.Title)))
	}
	// An interrupted turn end marks the session interrupted.
	mustCreate(t, st, "cut")
	st.AppendEvents(ctx, "cut", []core.Event{ev(0, core.EventTurnStart, `{"turn":1}`), ev(1, core.EventTurnEnd, `{"turn":1,"reason":{"kind":"interrupted"}}`)})
	if info, _ := st.Session(ctx, "cut"); info.Status != StatusInterrupted {
		t.Errorf("status = %s, want interrupted", info.Status)
	}
}

func TestStore_listAndEventQueries(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	for i := 0; i < 7; i++ {
		id := fmt.Sprintf("s%d", i)
		h := header(id)
		if i == 6 {
			h.ParentSession = "s0"
		}
		if err := st.CreateSession(ctx, h); err != nil {
			t.Fatal(err)
		}
		events := turnEvents(0, 1, false)
		for k := range events {
			events[k].Time = int64(1000*i + k) // s6 is the newest
		}
		n := len(events)
		if i%2 == 1 {
			n = 3 // odd sessions stay running
		}
		if err := st.AppendEvents(ctx, id, events[:n]); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(p SessionPage) string {
		var out []string
		for _, s := range p.Sessions {
			out = append(out, s.ID)
		}
		return strings.Join(out, ",")
	}
	page, err := st.ListSessions(ctx, ListOptions{Limit: 3})
	if err != nil || ids(page) != "s6,s5,s4" || page.NextCursor == "" {
		t.Fatalf("first page = %s (cursor %q, %v)", ids(page), page.NextCursor, err)
	}
	page, _ = st.ListSessions(ctx, ListOptions{Limit: 3, Cursor: page.NextCursor})
	if ids(page) != "s3,s2,s1" {
		t.Errorf("second page = %s", ids(page))
	}
	page, _ = st.ListSessions(ctx, ListOptions{Limit: 3, Cursor: page.NextCursor})
	if ids(page) != "s0" || page.NextCursor != "" {
		t.Errorf("last page = %s cursor %q", ids(page), page.NextCursor)
	}
	if page, _ := st.ListSessions(ctx, ListOptions{Limit: 2, Offset: 5}); ids(page) != "s1,s0" {
		t.Errorf("offset page = %s", ids(page))
	}
	if page, _ := st.ListSessions(ctx, ListOptions{Status: StatusRunning}); ids(page) != "s5,s3,s1" {
		t.Errorf("running = %s", ids(page))
	}
	if page, _ := st.ListSessions(ctx, ListOptions{TopLevel: true, Status: StatusIdle}); ids(page) != "s4,s2,s0" {
		t.Errorf("top-level idle = %s", ids(page))
	}
	if page, _ := st.ListSessions(ctx, ListOptions{Query: "S6"}); ids(page) != "s6" {
		t.Errorf("query = %s", ids(page))
	}
	if page, _ := st.ListSessions(ctx, ListOptions{Query: "%"}); ids(page) != "" {
		t.Errorf("query %% = %s, want nothing (LIKE metacharacters are escaped)", ids(page))
	}
	if _, err := st.ListSessions(ctx, ListOptions{Status: "bogus"}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("unknown status: %v", err)
	}
	if _, err := st.ListSessions(ctx, ListOptions{Cursor: "!!"}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("bad cursor: %v", err)
	}
	// The list row carries what GET /api/sessions needs.
	row, _ := st.Session(ctx, "s6")
	b, _ := json.Marshal(row)
	for _, key := range []string{`"id":"s6"`, `"title":"do thing"`, `"status":"idle"`, `"parentId":"s0"`, `"calls":1`, `"errors":0`, `"createdAt":1764500000000`, `"updatedAt":6007`} {
		if !bytes.Contains(b, []byte(key)) {
			t.Errorf("JSON row %s lacks %s", b, key)
		}
	}

	after, _ := st.EventsAfter(ctx, "s0", 5)
	upTo, _ := st.EventsUpTo(ctx, "s0", 2)
	all, _ := st.EventsAfter(ctx, "s0", -1)
	if len(after) != 2 || after[0].Seq != 6 || len(upTo) != 3 || upTo[2].Seq != 2 || len(all) != 8 {
		t.Errorf("EventsAfter(5) = %d, EventsUpTo(2) = %d, all = %d", len(after), len(upTo), len(all))
	}
	if all[5].SourceEventSeqs[0] != 4 || !all[5].IsAppendOrigin() {
		t.Errorf("tool/result envelope not restored: %+v", all[5])
	}
	calls, _ := st.CallEvents(ctx, "s0", "call_1")
	if len(calls) != 2 || calls[0].Seq != 4 || calls[1].Seq != 5 {
		t.Errorf("CallEvents = %+v", calls)
	}
	for name, err := range map[string]error{
		"EventsAfter": func() error { _, err := st.EventsAfter(ctx, "nope", 0); return err }(),
		"EventsUpTo":  func() error { _, err := st.EventsUpTo(ctx, "nope", 0); return err }(),
		"CallEvents":  func() error { _, err := st.CallEvents(ctx, "nope", "c"); return err }(),
		"LoadSession": func() error { _, err := st.LoadSession(ctx, "nope"); return err }(),
		"Session":     func() error { _, err := st.Session(ctx, "nope"); return err }(),
		"Export":      st.Export(ctx, "nope", &bytes.Buffer{}),
	} {
		if core.ErrorCode(err) != core.CodeNotFound {
			t.Errorf("%s(missing) = %v, want %s", name, err, core.CodeNotFound)
		}
	}
}

func TestStore_committedHookAfterCommit(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var got []Commit
	var st *Store
	st = newTestStore(t, func(o *Options) {
		o.Committed = func(c Commit) {
			// The commit is durable and visible when the hook runs.
			info, err := st.Session(ctx, c.SessionID)
			if err != nil || info.LastSeq < int64(len(c.Events))-1 {
				t.Errorf("hook ran before the commit was visible: %+v %v", info, err)
			}
			mu.Lock()
			got = append(got, c)
			mu.Unlock()
		}
	})
	mustCreate(t, st, "s")
	st.AppendEvents(ctx, "s", turnEvents(0, 1, false))
	st.AppendEvents(ctx, "s", []core.Event{ev(3, core.EventTurnStart, `{}`)}) // rejected: no notice
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || !got[0].Created || len(got[0].Events) != 0 || len(got[1].Events) != 8 || got[1].Events[7].Seq != 7 {
		t.Errorf("commits = %+v", got)
	}
}

func TestImport_fromReader(t *testing.T) {
	st := newTestStore(t)
	data, _ := os.ReadFile(filepath.Join(fixtures, "basic/session.jsonl.zstd"))
	res, err := st.Import(context.Background(), "upload.zst", bytes.NewReader(data), int64(len(data)))
	if err != nil || len(res) != 1 || res[0].Events != 39 {
		t.Fatalf("Import = %+v, %v", res, err)
	}
	bad, _ := os.ReadFile(filepath.Join(fixtures, "bad/version.jsonl"))
	if _, err := st.Import(context.Background(), "upload.jsonl", bytes.NewReader(bad), -1); err == nil || !strings.HasPrefix(err.Error(), "upload.jsonl: line 1: ") {
		t.Errorf("Import(bad) = %v, want an error naming the upload", err)
	}
}

// TestStore_resummarizesOlderRows: a row written under older summary rules
// (a database of an earlier prism; summary_version 0 after migration 0002)
// is folded again from its log when the store opens.
func TestStore_resummarizesOlderRows(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "prism.db")
	st, err := Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, st, "s")
	if err := st.AppendEvents(ctx, "s", turnEvents(0, 1, true)); err != nil {
		t.Fatal(err)
	}
	want, _ := st.Session(ctx, "s")
	if _, err := st.wdb.ExecContext(ctx, "UPDATE sessions SET summary_version = 0, title = 'stale', calls = 99, turns = 0"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, _ := st.Session(ctx, "s")
	if !reflect.DeepEqual(got.Summary, want.Summary) || !reflect.DeepEqual(got.Summary, core.Summarize(turnEvents(0, 1, true))) {
		t.Errorf("after reopen: %+v\nwant %+v", got.Summary, want.Summary)
	}
}

// TestStore_modelUsage: a session's models and their usage (migration
// 0006) are stored on its row — the list and Session read what the fold
// computed — and a row written before them (an older summary_version) gets
// them back from its log on open.
func TestStore_modelUsage(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "prism.db")
	st, err := Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, st, "s")
	msg := func(seq int64, model string, in, out, cached int64) core.Event {
		return ev(seq, core.EventAssistantMessage, fmt.Sprintf(`{"turn":1,"step":1,"message":{"id":"a%d","role":"assistant","content":[{"type":"text","text":"ok"}],"source":{"kind":"model","provider":"p","model":%q}},"usage":{"inputTokens":%d,"outputTokens":%d,"cacheReadTokens":%d}}`, seq, model, in, out, cached))
	}
	events := []core.Event{ev(0, core.EventTurnStart, `{"turn":1}`), msg(1, "big", 1000, 100, 400), msg(2, "small", 50, 5, 0), msg(3, "big", 10, 1, 0)}
	if err := st.AppendEvents(ctx, "s", events); err != nil {
		t.Fatal(err)
	}
	want := []core.ModelUsage{
		{Model: "big", TokenUsage: core.TokenUsage{InputTokens: 1010, OutputTokens: 101, CacheReadTokens: 400}},
		{Model: "small", TokenUsage: core.TokenUsage{InputTokens: 50, OutputTokens: 5}},
	}
	check := func(when string) {
		t.Helper()
		got, err := st.Session(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got.Models); d != "" || got.Model != "big, small" {
			t.Errorf("%s: Session model %q, models (-want +got):\n%s", when, got.Model, d)
		}
		page, err := st.ListSessions(ctx, ListOptions{})
		if err != nil || len(page.Sessions) != 1 {
			t.Fatalf("%s: list %+v, %v", when, page, err)
		}
		if d := cmp.Diff(core.Summarize(events), page.Sessions[0].Summary); d != "" {
			t.Errorf("%s: listed summary differs from the log's fold (-fold +listed):\n%s", when, d)
		}
	}
	check("stored")
	var model, usage string
	if err := st.rdb.QueryRowContext(ctx, "SELECT model, model_usage FROM sessions WHERE id = 's'").Scan(&model, &usage); err != nil {
		t.Fatal(err)
	}
	if wantUsage := `[{"model":"big","inputTokens":1010,"outputTokens":101,"cacheReadTokens":400},{"model":"small","inputTokens":50,"outputTokens":5}]`; model != "big, small" || usage != wantUsage {
		t.Errorf("columns model %q model_usage %s, want %q %s", model, usage, "big, small", wantUsage)
	}
	if _, err := st.wdb.ExecContext(ctx, "UPDATE sessions SET summary_version = 2, model = '', model_usage = ''"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st, err = Open(ctx, path, Options{Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check("reopened after an older summary_version")
}
