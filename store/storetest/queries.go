package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"prism/core"
	"prism/store"
)

func testDerivedSessionRow(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	MustCreate(t, st, "s")
	info, _ := st.Session(ctx, "s")
	if info.Status != core.StatusIdle || info.LastSeq != -1 || info.Title != "" || info.Source != store.SourceLive || info.UpdatedAt != 1764500000000 {
		t.Errorf("new session row = %+v", info)
	}
	turn := TurnEvents(0, 1, true)
	if err := st.AppendEvents(ctx, "s", turn[:3]); err != nil {
		t.Fatal(err)
	}
	info, _ = st.Session(ctx, "s")
	if info.Status != core.StatusRunning || info.Title != "do thing" {
		t.Errorf("mid-turn row: status %s title %q, want running and %q (the prompt's first line)", info.Status, info.Title, "do thing")
	}
	if err := st.AppendEvents(ctx, "s", turn[3:]); err != nil {
		t.Fatal(err)
	}
	info, _ = st.Session(ctx, "s")
	if info.Status != core.StatusIdle || info.Calls != 1 || info.Errors != 1 || info.LastSeq != 7 || info.UpdatedAt != turn[7].Time {
		t.Errorf("after the turn: %+v, want idle, 1 call, 1 error, last seq 7", info)
	}
	long := strings.Repeat("word ", 100)
	more := []core.Event{
		Ev(8, core.EventSessionTitle, `{"title":"  Named\n by   the model ","messageSeqs":[2],"source":"llm"}`),
		Ev(9, core.EventUserMessage, fmt.Sprintf(`{"id":"x","role":"user","content":[{"type":"text","text":%q}],"source":{"kind":"user"}}`, long)),
	}
	if err := st.AppendEvents(ctx, "s", more); err != nil {
		t.Fatal(err)
	}
	info, _ = st.Session(ctx, "s")
	if info.Title != "Named by the model" {
		t.Errorf("title = %q, want the session/title one", info.Title)
	}
	// The fallback title is cut to 80 characters, on a word boundary.
	MustCreate(t, st, "long")
	st.AppendEvents(ctx, "long", []core.Event{Ev(0, core.EventUserMessage, fmt.Sprintf(`{"id":"x","role":"user","content":[{"type":"text","text":%q}],"source":{"kind":"user"}}`, long))})
	if info, _ := st.Session(ctx, "long"); len([]rune(info.Title)) > 80 || !strings.HasSuffix(info.Title, " word…") {
		t.Errorf("long title = %q (%d runes), want at most 80 ending in a whole word and …", info.Title, len([]rune(info.Title)))
	}
	// An interrupted turn end marks the session interrupted.
	MustCreate(t, st, "cut")
	st.AppendEvents(ctx, "cut", []core.Event{Ev(0, core.EventTurnStart, `{"turn":1}`), Ev(1, core.EventTurnEnd, `{"turn":1,"reason":{"kind":"interrupted"}}`)})
	if info, _ := st.Session(ctx, "cut"); info.Status != core.StatusInterrupted {
		t.Errorf("status = %s, want interrupted", info.Status)
	}
}

func testListAndEventQueries(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	for i := 0; i < 7; i++ {
		id := fmt.Sprintf("s%d", i)
		h := Header(id)
		if i == 6 {
			h.ParentSession, h.Origin = "s0", core.OriginSubagent
		}
		if err := st.CreateSession(ctx, h); err != nil {
			t.Fatal(err)
		}
		events := TurnEvents(0, 1, false)
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
	ids := func(p store.SessionPage) string {
		var out []string
		for _, s := range p.Sessions {
			out = append(out, s.ID)
		}
		return strings.Join(out, ",")
	}
	page, err := st.ListSessions(ctx, store.ListOptions{Limit: 3})
	if err != nil || ids(page) != "s6,s5,s4" || page.NextCursor == "" {
		t.Fatalf("first page = %s (cursor %q, %v)", ids(page), page.NextCursor, err)
	}
	page, _ = st.ListSessions(ctx, store.ListOptions{Limit: 3, Cursor: page.NextCursor})
	if ids(page) != "s3,s2,s1" {
		t.Errorf("second page = %s", ids(page))
	}
	page, _ = st.ListSessions(ctx, store.ListOptions{Limit: 3, Cursor: page.NextCursor})
	if ids(page) != "s0" || page.NextCursor != "" {
		t.Errorf("last page = %s cursor %q", ids(page), page.NextCursor)
	}
	if page, _ := st.ListSessions(ctx, store.ListOptions{Limit: 2, Offset: 5}); ids(page) != "s1,s0" {
		t.Errorf("offset page = %s", ids(page))
	}
	if page, _ := st.ListSessions(ctx, store.ListOptions{Status: core.StatusRunning}); ids(page) != "s5,s3,s1" {
		t.Errorf("running = %s", ids(page))
	}
	if page, _ := st.ListSessions(ctx, store.ListOptions{TopLevel: true, Status: core.StatusIdle}); ids(page) != "s4,s2,s0" {
		t.Errorf("top-level idle = %s", ids(page))
	}
	if page, _ := st.ListSessions(ctx, store.ListOptions{Query: "S6"}); ids(page) != "s6" {
		t.Errorf("query = %s", ids(page))
	}
	if page, _ := st.ListSessions(ctx, store.ListOptions{Query: "%"}); ids(page) != "" {
		t.Errorf("query %% = %s, want nothing (LIKE metacharacters are escaped)", ids(page))
	}
	if _, err := st.ListSessions(ctx, store.ListOptions{Status: "bogus"}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("unknown status: %v", err)
	}
	if _, err := st.ListSessions(ctx, store.ListOptions{Cursor: "!!"}); core.ErrorCode(err) != core.CodeInvalid {
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
	calls, err := st.CallEvents(ctx, "s0", "call_1")
	if err != nil || len(calls) != 2 || calls[0].Seq != 4 || calls[1].Seq != 5 {
		t.Errorf("CallEvents = %+v (%v)", calls, err)
	}
	// With types: the call's events and, in seq order, every event of the
	// types named (what a card's fold needs to place its call).
	var want []int64
	for _, ev := range all {
		if ev.Seq == 4 || ev.Seq == 5 || ev.Type == core.EventTurnStart || ev.Type == core.EventStepStart {
			want = append(want, ev.Seq)
		}
	}
	calls, err = st.CallEvents(ctx, "s0", "call_1", core.EventTurnStart, core.EventStepStart)
	var got []int64
	for _, ev := range calls {
		got = append(got, ev.Seq)
	}
	if err != nil || len(want) < 4 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("CallEvents with types = %v (%v), want %v", got, err, want)
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

// testCommittedHookAfterCommit: the hook sees each commit once, in commit
// order, after it is visible; a rejected append is not reported.
func testCommittedHookAfterCommit(t *testing.T, e Engine) {
	ctx := context.Background()
	got := make(chan store.Commit, 16)
	var st Store
	var ready sync.WaitGroup
	ready.Add(1)
	st, _ = e.Open(t, Options{Committed: func(c store.Commit) {
		ready.Wait()
		// The commit is durable and visible when the hook runs.
		info, err := st.Session(ctx, c.SessionID)
		if err != nil || info.LastSeq < int64(len(c.Events))-1 {
			t.Errorf("hook ran before the commit was visible: %+v %v", info, err)
		}
		got <- c
	}})
	ready.Done()
	MustCreate(t, st, "s")
	st.AppendEvents(ctx, "s", TurnEvents(0, 1, false))
	st.AppendEvents(ctx, "s", []core.Event{Ev(3, core.EventTurnStart, `{}`)}) // rejected: no notice
	MustCreate(t, st, "t")
	var list []store.Commit
	for c := range got {
		list = append(list, c)
		if c.SessionID == "t" {
			break
		}
	}
	// s is created first and its 8 events follow once each, in order; an
	// engine may hand a creation over together with the events that
	// followed it (PostgreSQL's fan-out reads them back in one go when its
	// own NOTIFY outruns the writer's hand-off), never out of order, twice
	// or with the rejected append; t comes last, created.
	var seqs []int64
	for i, c := range list[:len(list)-1] {
		if c.SessionID != "s" || c.Created != (i == 0) || c.Replaced || c.Deleted {
			t.Errorf("commit %d = %+v, want s's (created first)", i, c)
		}
		for _, e := range c.Events {
			seqs = append(seqs, e.Seq)
		}
	}
	if want := []int64{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(seqs, want) || len(list) > 3 {
		t.Errorf("commits = %+v: s's events %v, want %v in at most 2 commits", list, seqs, want)
	}
	if last := list[len(list)-1]; !last.Created || len(last.Events) != 0 {
		t.Errorf("last commit = %+v, want t created", last)
	}
}

// testResummarizesOlderRows: a row written under older summary rules
// (a database of an earlier prism; summary_version 0 after migration 0002)
// is folded again from its log when the store opens.
func testResummarizesOlderRows(t *testing.T, e Engine) {
	ctx := context.Background()
	st, reopen := e.Open(t, Options{})
	MustCreate(t, st, "s")
	if err := st.AppendEvents(ctx, "s", TurnEvents(0, 1, true)); err != nil {
		t.Fatal(err)
	}
	want, _ := st.Session(ctx, "s")
	e.Exec(t, st, "UPDATE sessions SET summary_version = 0, title = 'stale', calls = 99, turns = 0")
	st.Close()
	st = reopen(Options{})
	got, _ := st.Session(ctx, "s")
	if !reflect.DeepEqual(got.Summary, want.Summary) || !reflect.DeepEqual(got.Summary, core.Summarize(TurnEvents(0, 1, true))) {
		t.Errorf("after reopen: %+v\nwant %+v", got.Summary, want.Summary)
	}
}

// testAwaitingApprovals: the session row counts the approvals waiting for a
// person (core.Summary.Awaiting) as they are asked and decided, the list
// carries it, and a row of an older summary version gets it from its log.
func testAwaitingApprovals(t *testing.T, e Engine) {
	ctx := context.Background()
	st, reopen := e.Open(t, Options{})
	MustCreate(t, st, "s")
	turn := TurnEvents(0, 1, false)
	asked := func(seq int64, id string) core.Event {
		return Ev(seq, core.EventApprovalAsked, fmt.Sprintf(`{"id":%q,"toolName":"note","callId":"call_1"}`, id))
	}
	awaiting := func(want int64, when string) {
		t.Helper()
		info, err := st.Session(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		page, err := st.ListSessions(ctx, store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if info.Awaiting != want || len(page.Sessions) != 1 || page.Sessions[0].Awaiting != want {
			t.Errorf("%s: awaiting = %d (session), %+v (list), want %d", when, info.Awaiting, page.Sessions, want)
		}
	}
	if err := st.AppendEvents(ctx, "s", append(turn[:5:5], asked(5, "ap1"), asked(6, "ap2"))); err != nil {
		t.Fatal(err)
	}
	awaiting(2, "two asked")
	if err := st.AppendEvents(ctx, "s", []core.Event{Ev(7, core.EventApprovalDecided, `{"id":"ap1","outcome":"allowed-once","by":"the owner"}`)}); err != nil {
		t.Fatal(err)
	}
	awaiting(1, "one decided")
	// A row written before the column existed is folded from its log.
	e.Exec(t, st, "UPDATE sessions SET summary_version = 1, awaiting = 0")
	st.Close()
	st = reopen(Options{})
	awaiting(1, "reopened after a stale row")
	// The turn's end clears what is left.
	if err := st.AppendEvents(ctx, "s", []core.Event{Ev(8, core.EventTurnEnd, `{"turn":1,"reason":{"kind":"interrupted"}}`)}); err != nil {
		t.Fatal(err)
	}
	awaiting(0, "turn ended")
}

// testListOrdersAndFilters: the list orders by the updated or created
// time, calls or errors (largest first, ties by id descending), pages each
// order with its own cursor, keeps sessions with errors on request, and
// refuses an unknown order or another order's cursor.
func testListOrdersAndFilters(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	// a: created first, 3 turns, 1 error, updated last; b: 1 turn,
	// 1 error; c: created last, 2 turns, no error; d: empty.
	mk := func(id string, created int64, turns int, failed bool, at int64) {
		h := Header(id)
		h.CreatedAt = created
		if err := st.CreateSession(ctx, h); err != nil {
			t.Fatal(err)
		}
		var events []core.Event
		for turn := 1; turn <= turns; turn++ {
			events = append(events, TurnEvents(int64(len(events)), turn, failed && turn == 1)...)
		}
		for k := range events {
			events[k].Time = at + int64(k)
		}
		if err := st.AppendEvents(ctx, id, events); err != nil {
			t.Fatal(err)
		}
	}
	mk("a", 1000, 3, true, 9000)
	mk("b", 2000, 1, true, 5000)
	mk("c", 3000, 2, false, 7000)
	if err := st.CreateSession(ctx, core.SessionHeader{ID: "d", CreatedAt: 2500, Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	ids := func(o store.ListOptions) string {
		t.Helper()
		var out []string
		for {
			page, err := st.ListSessions(ctx, o)
			if err != nil {
				t.Fatalf("ListSessions(%+v): %v", o, err)
			}
			for _, s := range page.Sessions {
				out = append(out, s.ID)
			}
			if page.NextCursor == "" {
				return strings.Join(out, ",")
			}
			o.Cursor = page.NextCursor
		}
	}
	for _, c := range []struct {
		o    store.ListOptions
		want string
	}{
		{store.ListOptions{Limit: 1}, "a,c,b,d"},
		{store.ListOptions{Sort: store.SortUpdated, Limit: 2}, "a,c,b,d"},
		{store.ListOptions{Sort: store.SortCreated, Limit: 1}, "c,d,b,a"},
		{store.ListOptions{Sort: store.SortCalls, Limit: 1}, "a,c,b,d"},
		{store.ListOptions{Sort: store.SortErrors, Limit: 1}, "b,a,d,c"},
		{store.ListOptions{HasErrors: true, Limit: 1}, "a,b"},
		{store.ListOptions{HasErrors: true, Sort: store.SortCreated}, "b,a"},
	} {
		if got := ids(c.o); got != c.want {
			t.Errorf("ListSessions(%+v) = %s, want %s", c.o, got, c.want)
		}
	}
	if _, err := st.ListSessions(ctx, store.ListOptions{Sort: "name"}); core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), `"name"`) {
		t.Errorf("unknown order: %v", err)
	}
	page, _ := st.ListSessions(ctx, store.ListOptions{Limit: 1})
	if _, err := st.ListSessions(ctx, store.ListOptions{Sort: store.SortCalls, Cursor: page.NextCursor}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("the updated order's cursor on the calls order: %v", err)
	}
}

// testListHeaders: a list decodes the sessions' headers only when asked
// (ListOptions.WithHeader) and then gives each its whole stored header, as
// Session and LoadSession always do; without it Header is left zero.
func testListHeaders(t *testing.T, e Engine) {
	ctx := context.Background()
	st := e.open(t)
	depth := int64(1)
	want := map[string]core.SessionHeader{
		"top":   {ID: "top", CreatedAt: 1764500000000, Cwd: "/home/alice/app", AgentPreset: "review"},
		"child": {ID: "child", CreatedAt: 1764500001000, Cwd: "/home/alice/app/sub", ParentSession: "top", Origin: core.OriginSubagent, DelegationDepth: &depth},
	}
	for _, id := range []string{"top", "child"} {
		if err := st.CreateSession(ctx, want[id]); err != nil {
			t.Fatal(err)
		}
	}
	for id, h := range want { // what the store kept of each header
		l, err := st.LoadSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if l.Info.Header.Cwd != h.Cwd || l.Info.Header.Origin != h.Origin || l.Info.Header.ParentSession != h.ParentSession {
			t.Fatalf("LoadSession(%s).Info.Header = %+v, want %+v", id, l.Info.Header, h)
		}
		want[id] = l.Info.Header
		if info, err := st.Session(ctx, id); err != nil || !reflect.DeepEqual(info.Header, l.Info.Header) {
			t.Errorf("Session(%s).Header = %+v (%v), want %+v", id, info.Header, err, l.Info.Header)
		}
	}
	for _, o := range []store.ListOptions{{WithHeader: true}, {WithHeader: true, ParentID: "top"}, {WithHeader: true, Limit: 1}} {
		page, err := st.ListSessions(ctx, o)
		if err != nil {
			t.Fatalf("ListSessions(%+v): %v", o, err)
		}
		if len(page.Sessions) == 0 {
			t.Fatalf("ListSessions(%+v): no session", o)
		}
		for _, s := range page.Sessions {
			if !reflect.DeepEqual(s.Header, want[s.ID]) {
				t.Errorf("ListSessions(%+v): %s's header = %+v, want %+v", o, s.ID, s.Header, want[s.ID])
			}
		}
	}
	page, err := st.ListSessions(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != 2 {
		t.Fatalf("ListSessions: %d sessions, want 2", len(page.Sessions))
	}
	for _, s := range page.Sessions {
		if s.Header != (core.SessionHeader{}) {
			t.Errorf("ListSessions without WithHeader: %s's header = %+v, want it left zero", s.ID, s.Header)
		}
		if s.ParentID != want[s.ID].ChildOf() || s.CreatedAt != want[s.ID].CreatedAt {
			t.Errorf("ListSessions without WithHeader: %s has parent %q, created %d; want %q, %d", s.ID, s.ParentID, s.CreatedAt, want[s.ID].ChildOf(), want[s.ID].CreatedAt)
		}
	}
}
