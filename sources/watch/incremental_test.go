package watch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/core/search"
	"prism/db"
	"prism/sources/claudecode"
	"prism/sources/dsh"
	"prism/sources/watch"
	"prism/store"
	"prism/views"
)

// growFile is a transcript an incremental test writes under the watched
// folder, a chunk at a time, up to text.
type growFile struct {
	rel  string
	text string
	// chunks is about how many writes it takes (more: smaller chunks,
	// many a partial line).
	chunks int
	// rewrite, when set, cuts the file back once, halfway through its
	// growth, to a random earlier length and writes on from there; with
	// flip set, it instead overwrites the first line's flip[0] with
	// flip[1] (same length: an in-place rewrite) before writing on.
	rewrite bool
	flip    [2]string
}

// ccTalk is a Claude Code transcript of session sid written the way the
// decoder finds hard to read on: a call whose result comes many lines
// later (progress lines between), an assistant message of several lines
// (thinking, text, tool_use without stop_reason), an inline sidechain
// (the oldest layout, linked by its agentId), a compaction, a title, and
// a turn left open at the end.
func ccTalk(sid string) string {
	c := claudeLines{sid: sid}
	var b strings.Builder
	b.WriteString(c.prompt("Investigate the flaky build"))
	b.WriteString(c.call(1))
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, `{"type":"progress","sessionId":%q,"uuid":"p%d","timestamp":"2026-05-01T10:00:%02d.500Z","data":{"type":"bash_progress","output":"line %d"}}`+"\n", sid, i, i%60, i)
	}
	b.WriteString(c.result(1))
	// One message in three lines: thinking, text, then a call.
	b.WriteString(c.env("assistant", "g1", 50) + `,"message":{"id":"msg_g","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"Look at the agent first.","signature":"s"}],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":5}}}` + "\n")
	b.WriteString(c.env("assistant", "g2", 51) + `,"message":{"id":"msg_g","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Asking a subagent."}],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":6}}}` + "\n")
	b.WriteString(strings.Replace(c.agentCall(52, "Task", "Find the regression"), `"stop_reason":"tool_use"`, `"stop_reason":null`, 1))
	inline := func(s string) string {
		return strings.ReplaceAll(s, `"isSidechain":false`, `"isSidechain":true,"agentId":"a7f2c1"`)
	}
	b.WriteString(inline(c.prompt("Find the regression") + c.call(900) + c.result(900)))
	b.WriteString(c.agentResult(52, "a7f2c1", "completed"))
	b.WriteString(c.env("system", "cb", 60) + `,"subtype":"compact_boundary","compactMetadata":{"trigger":"auto","preTokens":1000}}` + "\n")
	b.WriteString(c.env("user", "cs", 61) + `,"isCompactSummary":true,"message":{"role":"user","content":"The summary so far."}}` + "\n")
	fmt.Fprintf(&b, `{"type":"custom-title","customTitle":"Flaky build","sessionId":%q}`+"\n", sid)
	b.WriteString(c.env("assistant", "e1", 62) + `,"message":{"id":"msg_e","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Found it."}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}}` + "\n")
	b.WriteString(c.env("user", "u2", 63) + `,"message":{"role":"user","content":"Now fix it."}}` + "\n")
	b.WriteString(c.call(64))
	return b.String()
}

// ccChild is a subagent transcript (the current layout) of session sid.
func ccChild(sid string) string {
	c := claudeLines{sid: sid}
	return c.childLines("b1", "Count the files") + strings.ReplaceAll(c.call(901), `"isSidechain":false`, `"isSidechain":true,"agentId":"b1"`)
}

// codexFamily is a Codex parent rollout that spawns a child thread, and
// the child's rollout.
func codexFamily(parent, child string) (string, string) {
	p := `{"timestamp":"2026-05-01T10:00:00.000Z","type":"session_meta","payload":{"id":"` + parent + `","timestamp":"2026-05-01T10:00:00.000Z","cwd":"/repo","originator":"codex_cli_rs","cli_version":"0.150.0","source":"cli","model_provider":"openai"}}
{"timestamp":"2026-05-01T10:00:01.010Z","type":"event_msg","payload":{"type":"task_started"}}
{"timestamp":"2026-05-01T10:00:01.020Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Why does TestParse fail?"}]}}
{"timestamp":"2026-05-01T10:00:02.000Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"Ask an explorer."}],"encrypted_content":"gAAAA"}}
{"timestamp":"2026-05-01T10:00:08.000Z","type":"response_item","payload":{"type":"function_call","name":"spawn_agent","arguments":"{\"message\":\"Find the commit that broke TestParse\",\"agent_type\":\"explorer\"}","call_id":"call_C"}}
{"timestamp":"2026-05-01T10:00:08.050Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"git\",\"log\"]}","call_id":"call_D"}}
{"timestamp":"2026-05-01T10:00:08.200Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_C","output":"{\"agent_id\":\"` + child + `\",\"nickname\":\"Lorentz\"}"}}
{"timestamp":"2026-05-01T10:00:09.000Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":100,"cached_input_tokens":80,"output_tokens":20,"reasoning_output_tokens":5,"total_tokens":120}}}}
{"timestamp":"2026-05-01T10:00:20.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_D","output":"Exit code: 0\nOutput:\nabc123 fix parse"}}
{"timestamp":"2026-05-01T10:00:30.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"abc123 broke it."}]}}
{"timestamp":"2026-05-01T10:00:41.000Z","type":"event_msg","payload":{"type":"task_complete"}}
{"timestamp":"2026-05-01T10:01:00.000Z","type":"event_msg","payload":{"type":"task_started"}}
{"timestamp":"2026-05-01T10:01:00.100Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Revert it."}]}}
{"timestamp":"2026-05-01T10:01:02.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"git\",\"revert\",\"abc123\"]}","call_id":"call_E"}}
`
	c := `{"timestamp":"2026-05-01T10:00:08.100Z","type":"session_meta","payload":{"id":"` + child + `","timestamp":"2026-05-01T10:00:08.100Z","cwd":"/repo","originator":"codex_cli_rs","cli_version":"0.150.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":"` + parent + `","depth":1,"agent_nickname":"Lorentz","agent_role":"explorer"}}},"model_provider":"openai"}}
{"timestamp":"2026-05-01T10:00:08.300Z","type":"event_msg","payload":{"type":"task_started"}}
{"timestamp":"2026-05-01T10:00:08.400Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Find the commit that broke TestParse"}]}}
{"timestamp":"2026-05-01T10:00:09.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"abc123"}]}}
{"timestamp":"2026-05-01T10:00:09.100Z","type":"event_msg","payload":{"type":"task_complete"}}
`
	return p, c
}

func fixtureText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// generated returns lines [0, n) of a growth benchmark's transcript.
func generated(line func(int) string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(line(i))
		b.WriteByte('\n')
	}
	return b.String()
}

// watchStore is a store the incremental tests run the watcher into (db's
// and pgstore's).
type watchStore interface {
	watch.Store
	watch.Appender
	watch.SourceInfoStore
}

// countingStore is a store counting how the watcher wrote into it.
type countingStore struct {
	watchStore
	appends, rewrites, syncs int
}

func (s *countingStore) AppendWatched(ctx context.Context, h core.SessionHeader, w store.WatchedWrite) (string, int, error) {
	s.appends++
	if w.From < w.Stored {
		s.rewrites++
	}
	return s.watchStore.AppendWatched(ctx, h, w)
}

func (s *countingStore) SyncWatched(ctx context.Context, h core.SessionHeader, events []core.Event) (string, int, error) {
	s.syncs++
	return s.watchStore.SyncWatched(ctx, h, events)
}

// wholeRead is what a whole read of the complete lines of the file at
// path returns now (nil: no complete line, or no session yet).
func wholeRead(t *testing.T, path string) []*dsh.Log {
	logs, _ := wholeReadErr(t, path)
	return logs
}

// wholeReadErr is wholeRead with the whole read's error.
func wholeReadErr(t *testing.T, path string) ([]*dsh.Log, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // not written yet
	}
	if err != nil {
		t.Fatal(err)
	}
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	if len(b) == 0 {
		return nil, nil
	}
	fg := dsh.DetectForeign(b, foreignFormats())
	if fg == nil {
		t.Fatalf("%s: no format claims it", path)
	}
	return fg.ReadForeign(path, bufio.NewReader(bytes.NewReader(b)), dsh.Limits{MaxMemoryBytes: 1 << 30})
}

func eventsJSON(t *testing.T, events []core.Event) []string {
	t.Helper()
	out := make([]string, len(events))
	for i, e := range events {
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// cardsOf is what a page shows of a log's tool calls.
func cardsOf(h core.SessionHeader, events []core.Event) []string {
	var out []string
	for _, c := range views.Fold(h, events, nil).Cards() {
		res := "-"
		if c.Result != nil {
			b, _ := json.Marshal(c.Result)
			res = fmt.Sprintf("%d %s", c.ResultSeq, b)
		}
		out = append(out, fmt.Sprintf("%s %s %s %s call=%v stopped=%v %s", c.ID, c.CallID, c.Name, c.Args, c.HasCall, c.Stopped, res))
	}
	return out
}

// TestWatchIncrementalEqualsWholeRead grows transcripts — the testdata's,
// generated long ones, a call answered many lines later, a message of
// several lines, an inline sidechain, a subagent file, a Codex parent and
// its child thread — in random chunks (so many a poll sees half a line),
// one Scan per chunk, and holds the incremental watcher to a whole read:
// after every Scan each session stored equals the whole read of the
// complete lines written so far, and at the end the store equals a fresh
// store into which the final files were read whole (events, session
// summaries, cards). A file cut back and written on, and one rewritten in
// place at its start, are read again from scratch. Most polls append
// (AppendWatched) rather than reconcile the whole log.
func TestWatchIncrementalEqualsWholeRead(t *testing.T) {
	const ccSID = "5a1d0000-0000-4000-8000-0000000000c1"
	const parent, child = "0196a1b2-0000-7000-8000-0000000000f1", "0196a1b2-0000-7000-8000-0000000000f2"
	pText, cText := codexFamily(parent, child)
	day := "codex/2026/05/01/"
	cases := []struct {
		name  string
		files []growFile
		// appendsOnly: every poll after the first appends.
		appendsOnly bool
	}{
		{name: "claude-code talk", files: []growFile{
			{rel: "cc/-home-dev-app/" + ccSID + ".jsonl", text: ccTalk(ccSID), chunks: 120},
			{rel: "cc/-home-dev-app/" + ccSID + "/subagents/agent-b1.jsonl", text: ccChild(ccSID), chunks: 12},
		}},
		{name: "codex family", files: []growFile{
			{rel: day + "rollout-2026-05-01T10-00-00-" + parent + ".jsonl", text: pText, chunks: 40},
			{rel: day + "rollout-2026-05-01T10-00-08-" + child + ".jsonl", text: cText, chunks: 10},
		}},
		// The child's file first: it is read before its parent's
		// exists, or before its spawning line is in.
		{name: "claude-code child first", files: []growFile{
			{rel: "cc/-home-dev-app/" + ccSID + "/subagents/agent-b1.jsonl", text: ccChild(ccSID), chunks: 4},
			{rel: "cc/-home-dev-app/" + ccSID + ".jsonl", text: ccTalk(ccSID), chunks: 40},
		}},
		{name: "codex child first", files: []growFile{
			{rel: day + "rollout-2026-05-01T10-00-08-" + child + ".jsonl", text: cText, chunks: 3},
			{rel: day + "rollout-2026-05-01T10-00-00-" + parent + ".jsonl", text: pText, chunks: 20},
		}},
		{name: "claude-code cut back", files: []growFile{
			{rel: "cc/-p/" + ccSID + ".jsonl", text: ccTalk(ccSID), chunks: 60, rewrite: true},
		}},
		{name: "codex rewritten in place", files: []growFile{
			{rel: day + "rollout-2026-05-01T10-00-00-" + parent + ".jsonl", text: pText, chunks: 30, rewrite: true, flip: [2]string{`"cwd":"/repo"`, `"cwd":"/rep0"`}},
		}},
		{name: "generated long claude-code", files: []growFile{
			{rel: "cc/-p/" + benchCCID + ".jsonl", text: generated(ccLine, 300), chunks: 30},
		}},
		{name: "generated long codex", files: []growFile{
			{rel: day + "rollout-2026-11-04T00-00-00-" + benchCodexID + ".jsonl", text: generated(codexLine, 300), chunks: 30},
		}},
		{name: "claude-code one call per message", appendsOnly: true, files: []growFile{
			{rel: "cc/-p/" + ccSID + ".jsonl", text: claudeLines{sid: ccSID}.prompt("go") + claudeLines{sid: ccSID}.call(1) + claudeLines{sid: ccSID}.result(1) +
				claudeLines{sid: ccSID}.call(2) + claudeLines{sid: ccSID}.result(2) + claudeLines{sid: ccSID}.call(3) + claudeLines{sid: ccSID}.result(3), chunks: 7},
		}},
	}
	for _, name := range []string{"compaction", "errors", "parallel", "plain", "tools", "unknown"} {
		text := fixtureText(t, "../claudecode/testdata/"+name+".jsonl")
		cases = append(cases, struct {
			name        string
			files       []growFile
			appendsOnly bool
		}{name: "claude-code " + name, files: []growFile{{rel: "cc/-p/" + name + ".jsonl", text: text, chunks: 3 * strings.Count(text, "\n")}}})
	}
	for _, name := range []string{"aborted", "apply_patch", "fork", "legacy", "malformed", "parallel", "permission", "plain"} {
		text := fixtureText(t, "../codex/testdata/"+name+".jsonl")
		cases = append(cases, struct {
			name        string
			files       []growFile
			appendsOnly bool
		}{name: "codex " + name, files: []growFile{{rel: day + "rollout-2026-05-01T10-00-00-" + name + ".jsonl", text: text, chunks: 3 * strings.Count(text, "\n")}}})
	}
	for _, c := range cases {
		for seed := uint64(1); seed <= 2; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", c.name, seed), func(t *testing.T) {
				growAndCompare(t, sqliteStore, c.files, rand.New(rand.NewPCG(seed, 37)), c.appendsOnly)
			})
		}
	}
}

// sqliteStore opens a fresh SQLite store.
func sqliteStore(t *testing.T) watchStore {
	return newTestStore(t, func(o *db.Options) { o.Limits = dsh.Limits{MaxMemoryBytes: 1 << 30} })
}

// growAndCompare grows files under a fresh folder, in random chunks in a
// random order, one Scan after each, and checks the store (open makes it)
// against whole reads all along and at the end: against a fresh store of
// the same kind into which the final files are read whole. Search is
// compared on SQLite.
func growAndCompare(t *testing.T, open func(t *testing.T) watchStore, files []growFile, rng *rand.Rand, appendsOnly bool) {
	ctx := context.Background()
	root := t.TempDir()
	st := &countingStore{watchStore: open(t)}
	sq, isSQLite := st.watchStore.(*db.Store)
	var failed []watch.Sync
	w := watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats(), Synced: func(s watch.Sync) {
		if s.Err != nil {
			failed = append(failed, s)
		}
	}})
	// Each file's cut points: random, ending at its end.
	type growing struct {
		growFile
		path    string
		cuts    []int
		written int
		cutBack bool
	}
	var gs []*growing
	for _, f := range files {
		g := &growing{growFile: f, path: filepath.Join(root, f.rel)}
		if err := os.MkdirAll(filepath.Dir(g.path), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < f.chunks-1; i++ {
			g.cuts = append(g.cuts, 1+rng.IntN(len(f.text)-1))
		}
		g.cuts = append(g.cuts, len(f.text))
		sort.Ints(g.cuts)
		gs = append(gs, g)
	}
	scan := func() {
		t.Helper()
		if err := w.Scan(ctx); err != nil {
			t.Fatal(err)
		}
		// A poll fails only where a whole read fails (a transcript whose
		// lines so far name no sessionId), with the same reason.
		for _, s := range failed {
			_, werr := wholeReadErr(t, s.Path)
			var got, want *dsh.FormatError
			if !errors.As(s.Err, &got) || !errors.As(werr, &want) || got.Reason != want.Reason {
				t.Fatalf("a sync failed: %v; a whole read: %v", s.Err, werr)
			}
		}
		failed = failed[:0]
		// A search files what the index lags: a later rewrite of the
		// log's end must take filed documents out.
		if isSQLite {
			searchHits(t, sq, anyWord)
		}
		for _, g := range gs {
			for _, l := range wholeRead(t, g.path) {
				stored, err := st.LoadSession(ctx, l.Header.ID)
				if err != nil {
					t.Fatalf("%s at %d bytes: session %s not stored: %v", g.rel, g.written, l.Header.ID, err)
				}
				if got, want := eventsJSON(t, stored.Events), eventsJSON(t, l.Events); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s at %d bytes: session %s: stored %d events, a whole read %d; first difference:\n%s", g.rel, g.written, l.Header.ID, len(got), len(want), firstDiff(got, want))
				}
			}
		}
	}
	for {
		// A file starts once those before it exist (a child's file
		// listed first starts before its parent's).
		var open []*growing
		for _, g := range gs {
			if len(g.cuts) > 0 {
				open = append(open, g)
			}
			if g.written == 0 {
				break
			}
		}
		if len(open) == 0 {
			break
		}
		g := open[rng.IntN(len(open))]
		if g.rewrite && !g.cutBack && len(g.cuts) <= g.chunks/2 && g.written > 0 {
			g.cutBack = true
			if g.flip[0] != "" {
				b, err := os.ReadFile(g.path)
				if err != nil {
					t.Fatal(err)
				}
				i := bytes.Index(b, []byte(g.flip[0]))
				if i < 0 {
					t.Fatalf("%s: %q is not in what was written", g.rel, g.flip[0])
				}
				f, err := os.OpenFile(g.path, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteAt([]byte(g.flip[1]), int64(i)); err != nil {
					t.Fatal(err)
				}
				f.Close()
				g.text = strings.Replace(g.text, g.flip[0], g.flip[1], 1)
			} else {
				g.written = rng.IntN(g.written)
				if err := os.Truncate(g.path, int64(g.written)); err != nil {
					t.Fatal(err)
				}
				scan()
			}
		}
		to := g.cuts[0]
		g.cuts = g.cuts[1:]
		if to <= g.written {
			continue
		}
		f, err := os.OpenFile(g.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(g.text[g.written:to]); err != nil {
			t.Fatal(err)
		}
		f.Close()
		g.written = to
		scan()
	}
	scan() // a quiet poll
	// A fresh store into which the final files are read whole, parents
	// first, as the watcher orders them.
	fresh := open(t)
	sort.Slice(gs, func(i, j int) bool {
		ci, cj := strings.Contains(gs[i].rel, "/agent-"), strings.Contains(gs[j].rel, "/agent-")
		if ci != cj {
			return cj
		}
		return gs[i].rel < gs[j].rel
	})
	sessions := 0
	for _, g := range gs {
		for _, l := range wholeRead(t, g.path) {
			if _, _, err := fresh.SyncWatched(ctx, l.Header, l.Events); err != nil {
				t.Fatal(err)
			}
			sessions++
			want, err := fresh.LoadSession(ctx, l.Header.ID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := st.LoadSession(ctx, l.Header.ID)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := eventsJSON(t, got.Events), eventsJSON(t, want.Events); !reflect.DeepEqual(g, w) {
				t.Fatalf("session %s: the watched store and a whole read differ:\n%s", l.Header.ID, firstDiff(g, w))
			}
			gi, wi := got.Info, want.Info
			gi.CreatedAt, wi.CreatedAt = 0, 0
			if !reflect.DeepEqual(gi, wi) {
				t.Errorf("session %s: summary %+v\nwhole read %+v", l.Header.ID, gi, wi)
			}
			if g, w := cardsOf(got.Info.Header, got.Events), cardsOf(want.Info.Header, want.Events); !reflect.DeepEqual(g, w) {
				t.Errorf("session %s: cards %v\nwhole read %v", l.Header.ID, g, w)
			}
		}
	}
	if sessions == 0 {
		t.Fatal("no session was read")
	}
	if isSQLite {
		// The search index too: what a rewritten end left out is not found,
		// what it wrote is.
		found := 0
		for _, word := range []string{"the", "a", "to", "regression", "abc123", "echo", "build", "passes", "asking", "look", "tool:Bash", "tool:shell"} {
			q, err := search.Parse(word, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			g, w := searchHits(t, sq, q), searchHits(t, fresh.(*db.Store), q)
			if !reflect.DeepEqual(g, w) {
				t.Errorf("search %q: %v\nwhole read %v", word, g, w)
			}
			found += len(w)
		}
		if found == 0 && !strings.Contains(t.Name(), "unknown") {
			t.Error("no search found anything: the index's check proves nothing")
		}
	}
	t.Logf("%d sessions: %d appends (%d rewrites), %d whole reconciliations", sessions, st.appends, st.rewrites, st.syncs)
	if st.appends == 0 {
		t.Errorf("no poll appended without reconciling the whole log (%d syncs)", st.syncs)
	}
	if appendsOnly && st.syncs != sessions {
		t.Errorf("%d whole reconciliations for %d sessions, want one each (%d appends)", st.syncs, sessions, st.appends)
	}
}

func firstDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("seq %d:\n stored %s\n whole  %s", i, g, w)
		}
	}
	return "none"
}

// claudeLines writes Claude Code transcript lines of session sid (as the
// root package's watch tests do).
type claudeLines struct{ sid string }

func (c claudeLines) env(typ, uuid string, n int) string {
	return fmt.Sprintf(`{"type":%q,"isSidechain":false,"userType":"external","cwd":"/home/dev/app","sessionId":%q,"version":"2.1.3","gitBranch":"main","uuid":%q,"timestamp":"2026-05-01T10:%02d:%02d.000Z"`,
		typ, c.sid, uuid, n/60%60, n%60)
}

func (c claudeLines) prompt(text string) string {
	return c.env("user", "u0", 0) + `,"parentUuid":null,"message":{"role":"user","content":` + fmt.Sprintf("%q", text) + "}}\n"
}

func (c claudeLines) call(n int) string {
	return c.env("assistant", fmt.Sprintf("a%d", n), n) + fmt.Sprintf(`,"requestId":"req_%d","message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"echo %d"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":5}}}`, n, n, n, n) + "\n"
}

func (c claudeLines) result(n int) string {
	return c.env("user", fmt.Sprintf("r%d", n), n) + fmt.Sprintf(`,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"%d"}]},"toolUseResult":{"stdout":"%d","stderr":"","interrupted":false,"isImage":false}}`, n, n, n) + "\n"
}

func (c claudeLines) agentCall(n int, name, prompt string) string {
	return c.env("assistant", fmt.Sprintf("a%d", n), n) + fmt.Sprintf(`,"requestId":"req_%d","message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_%d","name":%q,"input":{"subagent_type":"general-purpose","description":"look","prompt":%q}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":5}}}`, n, n, n, name, prompt) + "\n"
}

func (c claudeLines) agentResult(n int, agentID, status string) string {
	tur := fmt.Sprintf(`{"status":%q,"agentId":%q,"content":[{"type":"text","text":"done"}]}`, status, agentID)
	return c.env("user", fmt.Sprintf("r%d", n), n) + fmt.Sprintf(`,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"done"}]},"toolUseResult":%s}`, n, tur) + "\n"
}

func (c claudeLines) childLines(agentID, prompt string) string {
	side := strings.ReplaceAll(c.prompt(prompt), `"isSidechain":false`, `"isSidechain":true,"agentId":"`+agentID+`"`)
	call := strings.ReplaceAll(c.call(900), `"isSidechain":false`, `"isSidechain":true,"agentId":"`+agentID+`"`)
	res := strings.ReplaceAll(c.result(900), `"isSidechain":false`, `"isSidechain":true,"agentId":"`+agentID+`"`)
	return side + call + res
}

// anyWord is a query most of the tests' events match.
var anyWord, _ = search.Parse("the", time.Now())

// searchHits are the documents a search finds (all pages).
func searchHits(t *testing.T, st *db.Store, q *search.Query) []string {
	t.Helper()
	var out []string
	o := db.SearchOptions{Order: store.OrderTime, Limit: 200}
	for {
		page, err := st.Search(context.Background(), q, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range page.Hits {
			out = append(out, fmt.Sprintf("%s %s %d %s#%d %s result=%d failed=%v %v", h.SessionID, h.Kind, h.Seq, h.CallID, h.Card, h.Tool, h.ResultSeq, h.Failed, h.Snippet))
		}
		if page.NextCursor == "" {
			break
		}
		o.Cursor = page.NextCursor
	}
	sort.Strings(out)
	return out
}

// TestWatchKeepsTailsWithinTheBudget holds the watcher to its memory
// policy: the decoder states it keeps hold at most one import's memory
// budget together, the least recently grown dropped first — a transcript
// whose state was dropped is read whole (SyncWatched) when it grows
// again; with room for both, both grow by appends only.
func TestWatchKeepsTailsWithinTheBudget(t *testing.T) {
	ctx := context.Background()
	text := generated(ccLine, 80)
	// What one transcript's decoder state holds.
	fg := claudecode.Format()
	probe := fg.Tail("probe.jsonl", dsh.Limits{MaxMemoryBytes: 1 << 30})
	if err := probe.Feed(bufio.NewReader(strings.NewReader(text))); err != nil {
		t.Fatal(err)
	}
	one := probe.Mem()
	for _, c := range []struct {
		name   string
		budget int64
		syncs  int // whole reconciliations in all
	}{
		{"room for one", one * 3 / 2, 4},
		{"room for both", one * 3, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			st := &countingStore{watchStore: newTestStore(t, func(o *db.Options) { o.Limits = dsh.Limits{MaxMemoryBytes: c.budget} })}
			w := watch.New(st, root, watch.Options{Logger: quietLogger(), Foreign: foreignFormats(), Synced: func(s watch.Sync) {
				if s.Err != nil {
					t.Errorf("sync: %v", s.Err)
				}
			}})
			paths := []string{filepath.Join(root, "-p", "a.jsonl"), filepath.Join(root, "-p", "b.jsonl")}
			if err := os.MkdirAll(filepath.Dir(paths[0]), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, p := range paths {
				// Each its own session.
				if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, benchCCID, filepath.Base(p))), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			for _, p := range paths {
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteString(strings.ReplaceAll(ccLine(80), benchCCID, filepath.Base(p)) + "\n"); err != nil {
					t.Fatal(err)
				}
				f.Close()
				if err := w.Scan(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if st.syncs != c.syncs {
				t.Errorf("%d whole reconciliations, want %d (%d appends)", st.syncs, c.syncs, st.appends)
			}
		})
	}
}
