package storetest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"prism/core"
	"prism/core/agent"
	"prism/core/attention"
	"prism/core/model"
	"prism/core/search"
	"prism/core/tools"
	"prism/store"
)

// wantDoc is a document the index must hold, derived from a log by the
// rules the transcript pairs calls by (an oracle written apart from the
// indexer): a card is a tool/call and the append-origin result that
// answers it, or a result whose call was never logged; everything else
// with text is a document of its own.
type wantDoc struct {
	seq, resultSeq int64
	kind, callID   string
	card           int
	failed         bool
	code           string
	events         []int64 // the events whose text the document holds
}

func expectedDocs(events []core.Event) map[int64]*wantDoc {
	docs := map[int64]*wantDoc{}
	cards := map[string][]*wantDoc{}
	for i := range events {
		e := &events[i]
		p := search.Extract(e)
		switch p.Role {
		case search.RoleNone:
		case search.RoleCall:
			d := &wantDoc{seq: e.Seq, resultSeq: -1, kind: search.KindCall, callID: p.CallID, card: len(cards[p.CallID]) + 1, events: []int64{e.Seq}}
			cards[p.CallID] = append(cards[p.CallID], d)
			docs[e.Seq] = d
		case search.RoleResult:
			var open *wantDoc
			cs := cards[p.CallID]
			for j := len(cs) - 1; j >= 0; j-- {
				if cs[j].resultSeq < 0 {
					open = cs[j]
					break
				}
			}
			switch {
			case open != nil:
				open.resultSeq, open.failed, open.code = e.Seq, p.IsError, p.Code
				open.events = append(open.events, e.Seq)
			case len(cs) > 0:
				docs[e.Seq] = &wantDoc{seq: e.Seq, resultSeq: -1, kind: search.KindEvent, failed: p.IsError, code: p.Code, events: []int64{e.Seq}}
			default:
				d := &wantDoc{seq: e.Seq, resultSeq: e.Seq, kind: search.KindCall, callID: p.CallID, card: 1, failed: p.IsError, code: p.Code, events: []int64{e.Seq}}
				cards[p.CallID] = append(cards[p.CallID], d)
				docs[e.Seq] = d
			}
		default:
			docs[e.Seq] = &wantDoc{seq: e.Seq, resultSeq: -1, kind: p.Kind, failed: p.IsError, code: p.Code, events: []int64{e.Seq}}
		}
	}
	return docs
}

// phraseQuery quotes up to n of the terms of text as a phrase (the terms
// are the index's own, so the query looks up exactly them).
func phraseQuery(text string, n int) string {
	var words []string
	for _, t := range search.Tokens(text) {
		if len(words) == n {
			break
		}
		words = append(words, t.Term)
	}
	if len(words) == 0 {
		return ""
	}
	return `"` + strings.Join(words, " ") + `"`
}

// searchAll runs a query and pages through every hit, in rank order: the
// logs the suite searches match fewer documents than a ranked search's
// bound (store.RankCandidates), so every match is a hit — a page that
// says the bound was reached fails the test.
func searchAll(t *testing.T, st Store, query string) []store.SearchHit {
	t.Helper()
	q, err := search.Parse(query, time.Now())
	if err != nil {
		t.Fatalf("Parse(%q): %v", query, err)
	}
	var hits []store.SearchHit
	o := store.SearchOptions{Limit: 200}
	for {
		page, err := st.Search(context.Background(), q, o)
		if err != nil {
			t.Fatalf("Search(%q): %v", query, err)
		}
		if page.RankedAmong != 0 {
			t.Fatalf("Search(%q): ranked among %d, a bound the suite's logs never reach", query, page.RankedAmong)
		}
		hits = append(hits, page.Hits...)
		if page.NextCursor == "" {
			return hits
		}
		o.Cursor = page.NextCursor
	}
}

// CheckSearchIndex holds the index to the stored logs: every document the
// logs call for is there with its kind, call and error, nothing else is;
// every event with text is found by a phrase of its own text; and every
// hit of every query names events the log holds.
func CheckSearchIndex(t *testing.T, st Store) {
	t.Helper()
	ctx := context.Background()
	page, err := st.ListSessions(ctx, store.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	logs := map[string]*store.SessionLog{}
	checked := 0
	for _, info := range page.Sessions {
		l, err := st.LoadSession(ctx, info.ID)
		if err != nil {
			t.Fatal(err)
		}
		logs[info.ID] = l
		want := expectedDocs(l.Events)
		// The session's documents, listed by operator alone.
		got := map[int64]store.SearchHit{}
		for _, h := range searchAll(t, st, "session:"+info.ID+" after:1970-01-01") {
			if h.SessionID != info.ID {
				continue // another id with this one as its prefix
			}
			got[h.Seq] = h
		}
		if h, ok := got[-1]; !ok || h.Kind != search.KindSession {
			t.Errorf("session %s: its own document is missing (%+v)", info.ID, h)
		} else if want := search.MakeSnippet(search.SessionSections(l.Info.Title, l.Info.Header.Cwd), nil); !reflect.DeepEqual(h.Snippet, want) {
			t.Errorf("session %s: its own document's snippet %+v, want %+v", info.ID, h.Snippet, want)
		}
		delete(got, -1)
		// Its own document holds its current title and cwd.
		for _, text := range []string{l.Info.Title, l.Info.Header.Cwd} {
			if pq := phraseQuery(text, 6); pq != "" && !slices.ContainsFunc(searchAll(t, st, "session:"+info.ID+" kind:session "+pq), func(h store.SearchHit) bool { return h.SessionID == info.ID }) {
				t.Errorf("session %s: %s does not find its own document", info.ID, pq)
			}
		}
		for seq, w := range want {
			h, ok := got[seq]
			if !ok {
				t.Errorf("session %s: no document for seq %d (%s)", info.ID, seq, w.kind)
				continue
			}
			if h.Kind != w.kind || h.CallID != w.callID || h.Card != w.card || h.ResultSeq != w.resultSeq || h.Failed != w.failed || h.ErrorCode != w.code {
				t.Errorf("session %s seq %d: indexed as %+v, want %+v", info.ID, seq, h, *w)
			}
			// A query without words shows the start of the section that
			// says most, as if made from the log now.
			var secs []search.Section
			for _, es := range w.events {
				secs = append(secs, search.Extract(&l.Events[es]).Sections...)
			}
			if want := search.MakeSnippet(secs, nil); !reflect.DeepEqual(h.Snippet, want) {
				t.Errorf("session %s seq %d: snippet %+v, want %+v", info.ID, seq, h.Snippet, want)
			}
			delete(got, seq)
		}
		for seq, h := range got {
			t.Errorf("session %s: a document for seq %d (%s) that the log does not call for", info.ID, seq, h.Kind)
		}
		// Every event with text is found by its own words. Queries are
		// run once per distinct text.
		found := map[string]map[int64]bool{}
		for seq, w := range want {
			for _, es := range w.events {
				e := l.Events[es]
				for _, sec := range search.Extract(&e).Sections {
					pq := phraseQuery(sec.Text, 6)
					if pq == "" {
						continue
					}
					q := "session:" + info.ID + " " + pq
					if found[q] == nil {
						found[q] = map[int64]bool{}
						for _, h := range searchAll(t, st, q) {
							found[q][h.Seq] = h.SessionID == info.ID
						}
					}
					if !found[q][seq] {
						t.Errorf("session %s: event %d (%s) is not found by %s", info.ID, es, e.Type, q)
					}
					checked++
				}
			}
		}
	}
	// Broad queries: every hit names events the log holds.
	// (The last two have words: excluded only, nothing to mark; and one
	// to mark.)
	for _, q := range []string{"kind:call", "error:", "after:1970-01-01", "kind:user OR kind:assistant", "kind:call -config", "kind:call OR the"} {
		parsed, err := search.Parse(q, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range searchAll(t, st, q) {
			l := logs[h.SessionID]
			if l == nil {
				t.Errorf("%s: a hit in session %s, which is not stored", q, h.SessionID)
				continue
			}
			if h.Seq == -1 {
				continue
			}
			if h.Seq >= int64(len(l.Events)) || h.ResultSeq >= int64(len(l.Events)) {
				t.Errorf("%s: a hit at seq %d (result %d) of session %s, which holds %d events", q, h.Seq, h.ResultSeq, h.SessionID, len(l.Events))
				continue
			}
			if h.Kind == search.KindCall {
				e := l.Events[h.Seq]
				if p := search.Extract(&e); p.CallID != h.CallID || (p.Role != search.RoleCall && h.ResultSeq != h.Seq) {
					t.Errorf("%s: card hit %+v lands on %s of call %q", q, h, e.Type, p.CallID)
				}
			}
			// Its snippet is what the log's events show for the query.
			var secs []search.Section
			for _, seq := range store.HitSeqs(&h) {
				secs = append(secs, search.Extract(&l.Events[seq]).Sections...)
			}
			if want := search.MakeSnippet(secs, parsed.Highlights()); !reflect.DeepEqual(h.Snippet, want) {
				t.Errorf("%s: session %s seq %d: snippet %+v, want %+v", q, h.SessionID, h.Seq, h.Snippet, want)
			}
		}
	}
	if checked == 0 && len(page.Sessions) > 0 {
		t.Error("no event was checked")
	}
}

// testSearchIndexExactAfterConcurrentSessions runs 50 scripted demo
// sessions at once through the agent loop into one store (their appends
// group-committed together) and holds the index to their logs.
func testSearchIndexExactAfterConcurrentSessions(t *testing.T, e Engine) {
	if testing.Short() {
		t.Skip("runs 50 agent sessions")
	}
	st := e.open(t)
	builtins, err := tools.Builtins(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(quiet())
	if err := reg.Register(builtins...); err != nil {
		t.Fatal(err)
	}
	const n = 50
	ended := make(chan string, n)
	r, err := agent.NewRunner(agent.RunnerConfig{
		Store: st, Tools: reg, WorkspaceRoot: t.TempDir(), Logger: quiet(),
		Models: model.NewCatalog(model.CatalogConfig{DemoPacing: &model.Pacing{}}),
		OnEvent: func(id string, e core.Event) {
			if e.Type == core.EventTurnEnd {
				ended <- id
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Start(context.Background(), agent.StartRequest{Prompt: fmt.Sprintf("session %d: find why the tests fail", i), Model: model.DemoModelName}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		select {
		case <-ended:
		case <-time.After(3 * time.Minute): // a failure guard, not synchronization
			t.Fatalf("only %d of %d sessions ended", i, n)
		}
	}
	CheckSearchIndex(t, st)
	// The demo's calls, by tool and error, across all sessions.
	if hits := searchAll(t, st, "tool:grep"); len(hits) != n {
		t.Errorf("tool:grep: %d hits, want one grep card per session (%d)", len(hits), n)
	}
	if hits := searchAll(t, st, "error:UNKNOWN_TOOL"); len(hits) < n {
		t.Errorf("error:UNKNOWN_TOOL: %d hits, want at least one per session", len(hits))
	}
}

// testSearchIndexExactAfterDshImport imports dsh's logs (a plain log, a
// zstd log, an export with a subagent, a crashed log repaired on import)
// and holds the index to them.
func testSearchIndexExactAfterDshImport(t *testing.T, e Engine) {
	st := e.open(t)
	files, _ := filepath.Glob(filepath.Join(Fixtures, "*", "*"))
	imported := 0
	for _, f := range files {
		if strings.Contains(f, "/bad/") {
			continue
		}
		if _, err := st.ImportFile(context.Background(), f); err == nil {
			imported++
		}
	}
	if imported < 3 {
		t.Fatalf("imported %d fixtures of %v", imported, files)
	}
	CheckSearchIndex(t, st)
	// A document filed without its query-free snippet, or with one that
	// does not decode, shows the same: read from the log.
	e.Exec(t, st, "UPDATE search_docs SET snip = NULL WHERE id % 3 = 0")
	e.Exec(t, st, `UPDATE search_docs SET snip = '{"n": 1}' WHERE id % 3 = 1`)
	CheckSearchIndex(t, st)
}

// testSearchIndexesAnOlderDatabase: a database written before the index
// existed is indexed when it is opened, with progress in the log.
func testSearchIndexesAnOlderDatabase(t *testing.T, e Engine) {
	ctx := context.Background()
	st, reopen := e.Open(t, Options{})
	for i := 0; i < 3; i++ {
		id := fmt.Sprint("old-", i)
		MustCreate(t, st, id)
		if err := st.AppendEvents(ctx, id, TurnEvents(0, 1, i == 1)); err != nil {
			t.Fatal(err)
		}
	}
	e.Unindex(t, st) // back to the schema before the search migration
	st.Close()
	var logs syncBuffer
	st = reopen(Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if out := logs.String(); !strings.Contains(out, "indexing sessions for search") || !strings.Contains(out, `"search index ready" sessions=3 events=24`) {
		t.Errorf("the log does not report the indexing:\n%s", out)
	}
	CheckSearchIndex(t, st)
	if hits := searchAll(t, st, "error:"); len(hits) != 1 || hits[0].SessionID != "old-1" {
		t.Errorf("error: found %+v, want the failed call of old-1", hits)
	}
}

// syncBuffer is a log sink safe for the store's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testSearchReindexesAReplacedLog: a watched session whose file was
// rewritten is found by its new text only.
func testSearchReindexesAReplacedLog(t *testing.T, e Engine) {
	st := e.open(t)
	ctx := context.Background()
	h := Header("watched")
	first := []core.Event{Ev(0, core.EventUserMessage, `{"id":"u","role":"user","content":[{"type":"text","text":"alpha original"}],"source":{"kind":"user"}}`)}
	second := []core.Event{Ev(0, core.EventUserMessage, `{"id":"u","role":"user","content":[{"type":"text","text":"beta rewritten"}],"source":{"kind":"user"}}`)}
	for i, events := range [][]core.Event{first, second} {
		if _, _, err := st.SyncLog(ctx, h, events, store.SourceWatch, true); err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
	}
	if hits := searchAll(t, st, "alpha"); len(hits) != 0 {
		t.Errorf("the replaced text is still found: %+v", hits)
	}
	if hits := searchAll(t, st, "beta"); len(hits) != 2 { // the message, and the session's title
		t.Errorf("beta: %+v, want the new message and the session's title", hits)
	}
	CheckSearchIndex(t, st)
}

// searchSeqs returns the (session, seq) of every hit, sorted.
func searchSeqs(t *testing.T, st Store, q string) []string {
	var out []string
	for _, h := range searchAll(t, st, q) {
		out = append(out, fmt.Sprintf("%s/%d", h.SessionID, h.Seq))
	}
	slices.Sort(out)
	return out
}

// testSearchQueries runs each operator over a store whose expected hits
// are computed from the logs with the operator's meaning.
func testSearchQueries(t *testing.T, e Engine) {
	st := e.open(t)
	ctx := context.Background()
	type call struct {
		name, args, result, code string
		isError                  bool
	}
	sessions := map[string][]call{
		"s-alpha": {{name: "read", args: `{"path":"config.yaml"}`, result: "port: 8080"}, {name: "grep", args: `{"pattern":"fmt.Sprintf"}`, result: "main.go:3: fmt.Sprintf(\"%d\")"}},
		"s-beta":  {{name: "bash", args: `{"command":"rm -rf /tmp/build"}`, result: "killed after 30s", code: "TOOL_TIMEOUT", isError: true}, {name: "read", args: `{"path":"greet_test.go"}`, result: "package greet"}},
		"s-gamma": {{name: "grep", args: `{"pattern":"数据库"}`, result: "db.go:1: 连接数据库失败"}, {name: "bash", args: `{"command":"ls"}`, result: "no such file", code: "FS_NOT_FOUND", isError: true}},
	}
	times := map[string]int64{"s-alpha": 1_700_000_000_000, "s-beta": 1_800_000_000_000, "s-gamma": 1_900_000_000_000}
	type doc struct {
		id   string
		seq  int64
		c    call
		time int64
	}
	var docs []doc
	for id, calls := range sessions {
		h := Header(id)
		h.CreatedAt = times[id]
		if err := st.CreateSession(ctx, h); err != nil {
			t.Fatal(err)
		}
		var events []core.Event
		add := func(typ, data string) {
			e := Ev(int64(len(events)), typ, data)
			e.Time = times[id] + e.Seq
			events = append(events, e)
		}
		add(core.EventTurnStart, `{"turn":1}`)
		for i, c := range calls {
			cid := fmt.Sprintf("%s-c%d", id, i)
			docs = append(docs, doc{id, int64(len(events)), c, times[id] + int64(len(events))})
			add(core.EventToolCall, fmt.Sprintf(`{"turn":1,"step":1,"callId":%q,"name":%q,"arguments":%q}`, cid, c.name, c.args))
			errPart := ""
			if c.code != "" {
				errPart = fmt.Sprintf(`,"error":{"name":"X","code":%q}`, c.code)
			}
			add(core.EventToolResult, fmt.Sprintf(`{"turn":1,"step":1,"message":{"id":"r%d","role":"user","content":[{"type":"tool-result","toolCallId":%q,"content":[{"type":"text","text":%q}],"isError":%t}],"source":{"kind":"tool","callId":%q}}%s}`,
				i, cid, c.result, c.isError, cid, errPart))
		}
		if id != "s-gamma" {
			add(core.EventTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`) // s-gamma stays running
		}
		if err := st.AppendEvents(ctx, id, events); err != nil {
			t.Fatal(err)
		}
	}
	want := func(keep func(d doc) bool) []string {
		var out []string
		for _, d := range docs {
			if keep(d) {
				out = append(out, fmt.Sprintf("%s/%d", d.id, d.seq))
			}
		}
		slices.Sort(out)
		return out
	}
	has := func(s, sub string) bool { return strings.Contains(strings.ToLower(s), sub) }
	// An attention rule's query runs in memory over the same cards
	// (attention.Match on the card's search document, as a call is new
	// and once it completed): where the rules allow the query, it must
	// fire on exactly the cards the engine finds.
	logs := map[string][]core.Event{}
	for id := range sessions {
		l, err := st.LoadSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		logs[id] = l.Events
	}
	ruleHits := func(q string) ([]string, bool) {
		parsed, err := attention.ParseQuery(q)
		if err != nil {
			return nil, false // a session-level operator: refused in rules
		}
		ev := attention.NewEvaluator([]attention.Rule{{Name: "q", When: attention.WhenQuery, Query: q, Parsed: parsed}}, nil)
		var out []string
		for id, events := range logs {
			callSeq := map[string]int64{}
			for i := range events {
				if events[i].Type == core.EventToolCall {
					f := core.FactsOf(&events[i])
					callSeq[f.CallID()] = events[i].Seq
				}
			}
			for _, f := range ev.Observe(id, events, time.Unix(0, 0)).Fired {
				out = append(out, fmt.Sprintf("%s/%d", id, callSeq[f.CallID]))
			}
		}
		slices.Sort(out)
		return out, true
	}
	for _, tc := range []struct {
		q    string
		keep func(d doc) bool
	}{
		{"kind:call", func(doc) bool { return true }},
		{"config.yaml", func(d doc) bool { return has(d.c.args, "config.yaml") }},
		{"Sprintf", func(d doc) bool { return has(d.c.args+d.c.result, "sprintf") }},
		{"fmt.Sprintf", func(d doc) bool { return has(d.c.args+d.c.result, "fmt.sprintf") }},
		{`"rm -rf"`, func(d doc) bool { return has(d.c.args, "rm -rf") }},
		{"greet_test.go", func(d doc) bool { return has(d.c.args, "greet_test.go") }},
		{"greet_test", func(d doc) bool { return has(d.c.args, "greet_test") }},
		{"数据库", func(d doc) bool { return has(d.c.args+d.c.result, "数据库") }},
		{"tool:grep", func(d doc) bool { return d.c.name == "grep" }},
		{"tool:GREP", func(d doc) bool { return d.c.name == "grep" }},
		{"tool:gr*", func(d doc) bool { return d.c.name == "grep" }},
		{"-tool:read kind:call", func(d doc) bool { return d.c.name != "read" }},
		{"error:", func(d doc) bool { return d.c.isError }},
		{"error:TOOL_TIMEOUT", func(d doc) bool { return d.c.code == "TOOL_TIMEOUT" }},
		{"error:tool_timeout", func(d doc) bool { return d.c.code == "TOOL_TIMEOUT" }},
		{"TOOL_TIMEOUT", func(d doc) bool { return d.c.code == "TOOL_TIMEOUT" }},
		{"status:running kind:call", func(d doc) bool { return d.id == "s-gamma" }},
		{"session:s-be kind:call", func(d doc) bool { return d.id == "s-beta" }},
		{"after:2027-01-01 kind:call", func(d doc) bool { return d.time >= time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() }},
		{"before:2027-01-01 kind:call", func(d doc) bool { return d.time < time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() }},
		{"read -config", func(d doc) bool { return d.c.name == "read" && !has(d.c.args, "config") }},
		{"grep OR bash", func(d doc) bool { return d.c.name == "grep" || d.c.name == "bash" }},
		{"tool:bash OR package", func(d doc) bool { return d.c.name == "bash" || has(d.c.result, "package") }},
		{"conf*", func(d doc) bool { return has(d.c.args+d.c.result, "conf") }},
		{"error: -tool:bash", func(doc) bool { return false }},
		{"nothingmatchesthis", func(doc) bool { return false }},
	} {
		t.Run(tc.q, func(t *testing.T) {
			got := searchSeqs(t, st, tc.q)
			if w := want(tc.keep); !slices.Equal(got, w) {
				t.Errorf("%s: hits %v, want %v", tc.q, got, w)
			}
			if fired, ok := ruleHits(tc.q); ok && !slices.Equal(fired, got) {
				t.Errorf("%s: a query rule fires on %v, the engine finds %v", tc.q, fired, got)
			}
		})
	}
	// The session documents: a title and the cwd.
	if got := searchSeqs(t, st, "kind:session"); len(got) != 3 {
		t.Errorf("kind:session: %v", got)
	}
	CheckSearchIndex(t, st)
}

// testSearchPagesAndOrders: rank and time orders page through the same
// hits without repeats; a cursor of another order is refused.
func testSearchPagesAndOrders(t *testing.T, e Engine) {
	st := e.open(t)
	ctx := context.Background()
	MustCreate(t, st, "p")
	var events []core.Event
	for i := 0; i < 45; i++ {
		text := "needle"
		if i%3 == 0 {
			text = "needle needle needle haystack"
		}
		events = append(events, Ev(int64(i), core.EventUserMessage, fmt.Sprintf(`{"id":"u%d","role":"user","content":[{"type":"text","text":%q}],"source":{"kind":"user"}}`, i, text)))
	}
	if err := st.AppendEvents(ctx, "p", events); err != nil {
		t.Fatal(err)
	}
	q, _ := search.Parse("needle kind:user", time.Now())
	for _, order := range []string{store.OrderRank, store.OrderTime} {
		seen := map[int64]bool{}
		var keys []int64
		o := store.SearchOptions{Limit: 7, Order: order}
		for {
			page, err := st.Search(ctx, q, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range page.Hits {
				if seen[h.Seq] {
					t.Errorf("%s: seq %d twice", order, h.Seq)
				}
				seen[h.Seq] = true
				keys = append(keys, h.Seq)
			}
			if page.NextCursor == "" {
				break
			}
			o.Cursor = page.NextCursor
		}
		if len(seen) != 45 {
			t.Errorf("%s: %d hits over the pages, want 45", order, len(seen))
		}
		if order == store.OrderTime && !slices.IsSortedFunc(keys, func(a, b int64) int { return int(b - a) }) {
			t.Errorf("time order: %v is not newest first", keys)
		}
		if order == store.OrderRank {
			for i, k := range keys[:15] {
				if k%3 != 0 {
					t.Errorf("rank order: hit %d is seq %d, want the messages with the word three times first", i, k)
					break
				}
			}
		}
	}
	page, _ := st.Search(ctx, q, store.SearchOptions{Limit: 5, Order: store.OrderTime})
	if _, err := st.Search(ctx, q, store.SearchOptions{Order: store.OrderRank, Cursor: page.NextCursor}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("a time cursor with rank order: %v, want CodeInvalid", err)
	}
	if _, err := st.Search(ctx, q, store.SearchOptions{Order: "best"}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("order best: %v, want CodeInvalid", err)
	}
}

// testSearchRanksTheMostRecentMatches: a ranked search ranks the most
// recent matches up to its bound (SearchOptions.Candidates, at most
// store.RankCandidates) — the oracle: by time, newest first, the bound's
// worth, then ranked — and says the bound was reached on every page; a
// bound above the matches ranks them all and says nothing; time order has
// no bound.
func testSearchRanksTheMostRecentMatches(t *testing.T, e Engine) {
	st := e.open(t)
	ctx := context.Background()
	MustCreate(t, st, "p")
	var events []core.Event
	for i := 0; i < 45; i++ {
		text := "needle"
		if i%3 == 0 {
			text = "needle needle needle haystack"
		}
		events = append(events, Ev(int64(i), core.EventUserMessage, fmt.Sprintf(`{"id":"u%d","role":"user","content":[{"type":"text","text":%q}],"source":{"kind":"user"}}`, i, text)))
	}
	if err := st.AppendEvents(ctx, "p", events); err != nil {
		t.Fatal(err)
	}
	q, _ := search.Parse("needle kind:user", time.Now())
	pages := func(o store.SearchOptions) (seqs []int64, among []int) {
		t.Helper()
		for {
			page, err := st.Search(ctx, q, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range page.Hits {
				seqs = append(seqs, h.Seq)
			}
			among = append(among, page.RankedAmong)
			if page.NextCursor == "" {
				return seqs, among
			}
			o.Cursor = page.NextCursor
		}
	}
	// The oracle: the 10 most recent matches are seqs 35…44; of them 36,
	// 39 and 42 hold the word three times and rank first.
	seqs, among := pages(store.SearchOptions{Order: store.OrderRank, Limit: 4, Candidates: 10})
	got := slices.Clone(seqs)
	slices.Sort(got)
	if want := []int64{35, 36, 37, 38, 39, 40, 41, 42, 43, 44}; !slices.Equal(got, want) {
		t.Errorf("ranked among 10: hits %v, want the 10 most recent matches %v", seqs, want)
	}
	if len(seqs) >= 3 {
		best := slices.Clone(seqs[:3])
		slices.Sort(best)
		if !slices.Equal(best, []int64{36, 39, 42}) {
			t.Errorf("ranked among 10: %v, want 36, 39 and 42 (the word three times) first", seqs)
		}
	}
	for i, n := range among {
		if n != 10 {
			t.Errorf("ranked among 10: page %d says RankedAmong %d, want 10", i, n)
		}
	}
	seqs, among = pages(store.SearchOptions{Order: store.OrderRank, Limit: 20, Candidates: 100})
	if len(seqs) != 45 || slices.ContainsFunc(among, func(n int) bool { return n != 0 }) {
		t.Errorf("bound 100 over 45 matches: %d hits, RankedAmong %v; want 45 and 0", len(seqs), among)
	}
	seqs, among = pages(store.SearchOptions{Order: store.OrderTime, Limit: 20, Candidates: 10})
	if len(seqs) != 45 || slices.ContainsFunc(among, func(n int) bool { return n != 0 }) {
		t.Errorf("time order with a bound of 10: %d hits, RankedAmong %v; want 45 and 0", len(seqs), among)
	}
}

// bashCall and bashResult are a bash card's call and result events, each
// holding word.
func bashCall(seq int64, id, word string) core.Event {
	return Ev(seq, core.EventToolCall, fmt.Sprintf(`{"turn":1,"step":1,"callId":%q,"name":"bash","arguments":"{\"command\":\"echo %s\"}"}`, id, word))
}

func bashResult(seq int64, id, word string) core.Event {
	return Ev(seq, core.EventToolResult, fmt.Sprintf(`{"turn":1,"step":1,"message":{"id":"m%d","role":"user","content":[{"type":"tool-result","toolCallId":%q,"content":[{"type":"text","text":%q}],"isError":false}],"source":{"kind":"tool","callId":%q}}}`, seq, id, word, id))
}

// testSearchPairsResultsAsTheTranscriptDoes: a reused call id makes two
// cards (the second counted 2), each result completes the latest waiting
// card, a second result is a row of its own, and a result whose call was
// never logged is a card by itself — by the same rule whether the call was
// committed in the same transaction or an earlier one, also when a reused
// call id opens a newer card in the same transaction as a result for an
// older one.
func testSearchPairsResultsAsTheTranscriptDoes(t *testing.T, e Engine) {
	st := e.open(t)
	ctx := context.Background()
	call, result := bashCall, bashResult
	transcript := []core.Event{
		call(0, "c", "first"), result(1, "c", "firstout"),
		call(2, "c", "second"), result(3, "c", "secondout"), result(4, "c", "extraout"),
		result(5, "orphan", "orphanout"),
	}
	oneByOne := make([][]core.Event, len(transcript))
	for i := range transcript {
		oneByOne[i] = transcript[i : i+1]
	}
	pairs := map[string]string{"firstout": "seq 0 card 1 result 1", "secondout": "seq 2 card 2 result 3", "extraout": "seq 4 card 0 result -1", "orphanout": "seq 5 card 1 result 5"}
	for _, c := range []struct {
		id      string
		commits [][]core.Event
		want    map[string]string
	}{
		{"one-commit", [][]core.Event{transcript}, pairs},
		{"one-by-one", oneByOne, pairs},
		{"older-card-beside-a-newer-one", [][]core.Event{
			{call(0, "c", "old")}, {call(1, "c", "new"), result(2, "c", "newout"), result(3, "c", "oldout")},
		}, map[string]string{"newout": "seq 1 card 2 result 2", "oldout": "seq 0 card 1 result 3"}},
		{"result-before-a-reused-call", [][]core.Event{
			{call(0, "d", "early")}, {result(1, "d", "earlyout"), call(2, "d", "late")}, {result(3, "d", "lateout")},
		}, map[string]string{"earlyout": "seq 0 card 1 result 1", "lateout": "seq 2 card 2 result 3"}},
		// A card of a result alone, and then its call id reused, in one
		// commit: the later card is the second.
		{"result-alone-then-its-call-id", [][]core.Event{
			{result(0, "e", "aloneout"), call(1, "e", "after"), result(2, "e", "afterout")},
		}, map[string]string{"aloneout": "seq 0 card 1 result 0", "afterout": "seq 1 card 2 result 2"}},
		// Cards of one call id in an earlier commit and in this one,
		// with a result alone for another call id between them: each
		// counted after those committed before.
		{"cards-across-commits", [][]core.Event{
			{call(0, "f", "one"), result(1, "f", "oneout")},
			{call(2, "f", "two"), result(3, "g", "gout"), call(4, "f", "three"), result(5, "f", "threeout"), result(6, "f", "twoout")},
		}, map[string]string{"oneout": "seq 0 card 1 result 1", "threeout": "seq 4 card 3 result 5", "twoout": "seq 2 card 2 result 6", "gout": "seq 3 card 1 result 3"}},
	} {
		t.Run(c.id, func(t *testing.T) {
			MustCreate(t, st, c.id)
			for _, events := range c.commits {
				if err := st.AppendEvents(ctx, c.id, events); err != nil {
					t.Fatal(err)
				}
			}
			for q, want := range c.want {
				hits := searchAll(t, st, "session:"+c.id+" "+q)
				if len(hits) != 1 {
					t.Errorf("%s: %d hits", q, len(hits))
					continue
				}
				h := hits[0]
				if got := fmt.Sprintf("seq %d card %d result %d", h.Seq, h.Card, h.ResultSeq); got != want {
					t.Errorf("%s: %s, want %s", q, got, want)
				}
			}
		})
	}
	CheckSearchIndex(t, st)
}

// testSearchPhrasesStayInOneColumn: a phrase matches words in a row
// within one part of a document (a tool's name, its arguments, its
// result), never across two — whether the result was committed with its
// call or later.
func testSearchPhrasesStayInOneColumn(t *testing.T, e Engine) {
	st := e.open(t)
	ctx := context.Background()
	for _, split := range []bool{false, true} {
		id := fmt.Sprint("cols-", split)
		MustCreate(t, st, id)
		events := []core.Event{
			Ev(0, core.EventToolCall, `{"turn":1,"step":1,"callId":"k","name":"grep","arguments":"{\"pattern\":\"zebra\"}"}`),
			Ev(1, core.EventToolResult, `{"turn":1,"step":1,"message":{"id":"m","role":"user","content":[{"type":"tool-result","toolCallId":"k","content":[{"type":"text","text":"okapi giraffe"}],"isError":false}],"source":{"kind":"tool","callId":"k"}}}`),
		}
		commits := [][]core.Event{events}
		if split {
			commits = [][]core.Event{events[:1], events[1:]}
		}
		for _, c := range commits {
			if err := st.AppendEvents(ctx, id, c); err != nil {
				t.Fatal(err)
			}
		}
		for q, n := range map[string]int{`"pattern zebra"`: 1, `"okapi giraffe"`: 1, "gira*": 1, `"zebra okapi"`: 0, `"grep pattern"`: 0, "zebra okapi": 1} {
			if hits := searchAll(t, st, "session:"+id+" "+q); len(hits) != n {
				t.Errorf("%s (result committed apart: %t): %d hits, want %d", q, split, len(hits), n)
			}
		}
	}
}

// FuzzSearch runs what search.Parse accepts against a real index, in both
// orders, with whatever cursor the fuzzer makes up: a query the parser
// accepted never fails in the engine, a made-up cursor is refused as
// invalid input, and every hit names a session of the store. st is an
// empty store the fuzz target owns.
func FuzzSearch(f *testing.F, st Store) {
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		id := fmt.Sprint("fz-", i)
		MustCreate(f, st, id)
		if err := st.AppendEvents(ctx, id, TurnEvents(0, 1, i%2 == 0)); err != nil {
			f.Fatal(err)
		}
	}
	for _, s := range [][2]string{
		{"grep", ""}, {`"a b" -c tool:x error: status:idle`, "x"}, {"NEAR(a b)", ""}, {"*", ""}, {`it's \x`, ""},
		{"tool:bash -error:", ""}, {"session:fz-1 after:2020-01-01", "eyJ0IjoxfQ"}, {"日本語 fmt.Sprintf", ""}, {"a:* & !b | (c <-> d)", ""},
	} {
		f.Add(s[0], s[1], false)
	}
	now := time.Now()
	f.Fuzz(func(t *testing.T, query, cursor string, byTime bool) {
		q, err := search.Parse(query, now)
		if err != nil {
			return // FuzzParse holds the refusals to their form
		}
		o := store.SearchOptions{Cursor: cursor, Limit: 5, Order: store.OrderRank}
		if byTime {
			o.Order = store.OrderTime
		}
		page, err := st.Search(ctx, q, o)
		if err != nil {
			if cursor != "" && core.ErrorCode(err) == core.CodeInvalid {
				return
			}
			t.Fatalf("Search(%q, cursor %q): %v (code %s)", query, cursor, err, core.ErrorCode(err))
		}
		for _, h := range page.Hits {
			if len(h.SessionID) != 4 || h.SessionID[:3] != "fz-" {
				t.Fatalf("Search(%q): a hit in session %q", query, h.SessionID)
			}
		}
	})
}

// AppendReusedCallIDs stores a session whose call ids are reused, across
// commits and within one, and one of a result alone followed by its call
// id reused: cards numbered 1 to 3. An engine's test of the migration that
// numbers the cards already filed runs it over them (CheckSearchIndex
// holds every card's number to the log).
func AppendReusedCallIDs(tb testing.TB, st core.EventStore) {
	tb.Helper()
	ctx := context.Background()
	MustCreate(tb, st, "reused")
	for _, events := range [][]core.Event{
		{bashCall(0, "f", "one"), bashResult(1, "f", "oneout")},
		{bashCall(2, "f", "two"), bashResult(3, "g", "gout"), bashCall(4, "f", "three"), bashResult(5, "f", "threeout"), bashResult(6, "f", "twoout")},
	} {
		if err := st.AppendEvents(ctx, "reused", events); err != nil {
			tb.Fatal(err)
		}
	}
	MustCreate(tb, st, "alone")
	if err := st.AppendEvents(ctx, "alone", []core.Event{bashResult(0, "e", "aloneout"), bashCall(1, "e", "after"), bashResult(2, "e", "afterout")}); err != nil {
		tb.Fatal(err)
	}
}
