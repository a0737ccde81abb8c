package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"prism/core"
	"prism/internal/pgcluster"
	"prism/internal/pgtest"
	"prism/pgstore"
	"prism/sources/dsh"
	"prism/store"
	"prism/store/storetest"
)

// nodeEnv makes this test binary run as a prism node: `prism ARGS…`.
const nodeEnv = "PRISM_TEST_NODE"

// runIfNode runs prism and exits when the binary was started as a node.
func runIfNode() {
	if os.Getenv(nodeEnv) != "1" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// node is one prism process of a test cluster.
type node struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	url    string
	exited chan struct{}

	mu  sync.Mutex
	log bytes.Buffer
}

var servingLine = regexp.MustCompile(`msg=serving url=(\S+)`)

// startNode starts a prism node (this test binary) serving on a free
// loopback port with the database dbURL; it is stopped when the test ends.
func startNode(t *testing.T, name, dbURL string, args ...string) *node {
	t.Helper()
	n := &node{t: t, name: name, exited: make(chan struct{})}
	n.cmd = exec.Command(os.Args[0], append([]string{"serve", "--addr", "127.0.0.1:0", "--db", dbURL, "--log-level", "info"}, args...)...)
	n.cmd.Env = append(os.Environ(), nodeEnv+"=1")
	stderr, err := n.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			n.mu.Lock()
			n.log.WriteString(sc.Text() + "\n")
			n.mu.Unlock()
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case serving <- m[1]:
				default:
				}
			}
		}
	}()
	go func() {
		n.cmd.Wait() //nolint:errcheck
		close(n.exited)
	}()
	t.Cleanup(func() {
		n.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck
		select {
		case <-n.exited:
		case <-time.After(20 * time.Second):
			n.cmd.Process.Kill() //nolint:errcheck
			<-n.exited
		}
		if t.Failed() {
			t.Logf("node %s log:\n%s", n.name, n.logText())
		}
	})
	select {
	case n.url = <-serving:
	case <-n.exited:
		t.Fatalf("node %s exited before serving:\n%s", name, n.logText())
	case <-time.After(90 * time.Second):
		t.Fatalf("node %s did not serve within 90 s:\n%s", name, n.logText())
	}
	return n
}

func (n *node) logText() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.log.String()
}

// kill ends the node with SIGKILL: no shutdown, no goodbye.
func (n *node) kill() {
	n.cmd.Process.Kill() //nolint:errcheck
	<-n.exited
}

// export reads a session's log through a node's API.
func (n *node) export(t *testing.T, id string) []core.Event {
	t.Helper()
	res, err := http.Get(n.url + "/api/sessions/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("export of %s from node %s: %d %s", id, n.name, res.StatusCode, body)
	}
	logs, _, err := dsh.Decode(bytes.NewReader(body), int64(len(body)), dsh.Limits{})
	if err != nil {
		t.Fatalf("export of %s: %v", id, err)
	}
	return logs[0].Events
}

// sessions lists the sessions through a node's API.
func (n *node) sessions(t *testing.T) []store.SessionInfo {
	t.Helper()
	res, err := http.Get(n.url + "/api/sessions")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var list []store.SessionInfo
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	return list
}

// post sends a form to a node and returns the status.
func (n *node) post(t *testing.T, path string, form url.Values) int {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.PostForm(n.url+path, form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode >= 400 {
		t.Logf("POST %s on node %s: %d %s", path, n.name, res.StatusCode, body)
	}
	return res.StatusCode
}

// clusterBrowser starts headless Chromium with a probe that records, per
// call id, how its card appeared and changed: "added:STATE" when an
// element first shows it, "attr:STATE" when its data-state changes,
// "replaced:STATE" when another element takes its place.
func clusterBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser test needs %s (apt-get install chromium; .ci/run installs it): %v", chromium, err)
	}
	ctx := headless(t)
	const probe = `
window.__cards = {}; window.__els = new Map();
const note = (el, what) => { const id = el.getAttribute('data-call-id'); (window.__cards[id] = window.__cards[id] || []).push(what + ':' + el.getAttribute('data-state')); };
const seen = el => { const id = el.getAttribute('data-call-id'); const prev = window.__els.get(id);
  if (prev === el) return; note(el, prev ? 'replaced' : 'added'); window.__els.set(id, el); };
new MutationObserver(ms => { for (const m of ms) {
  if (m.type === 'attributes' && m.target.hasAttribute && m.target.hasAttribute('data-call-id') && m.target.classList.contains('card')) note(m.target, 'attr');
  for (const n of m.addedNodes) if (n.nodeType === 1) {
    if (n.matches('.card[data-call-id]')) seen(n);
    n.querySelectorAll && n.querySelectorAll('.card[data-call-id]').forEach(seen);
  }
}}).observe(document, {subtree: true, childList: true, attributes: true, attributeFilter: ['data-state']});
document.addEventListener('DOMContentLoaded', () => document.querySelectorAll('.card[data-call-id]').forEach(seen));`
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: probe}); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// TestClusterBrowser runs two prism processes on one PostgreSQL database:
// started together on the empty database they start one demo; the node
// that does not run it streams it live in a real browser. The demo's write
// and edits wait for approval (so the test, not the machine's speed, sets
// the pace): the write, approved through the watching node, turns
// completed on its page as the same element, and the next call appears
// there pending. While that call waits the running node is SIGKILLed: the
// watching node finds the session's lock free and repairs the open turn
// (interrupted, the node gone), and its page shows the repair without a
// reload. The killed node then restarts beside a third node: every event
// committed before the kill is kept, and the turn was repaired exactly
// once.
func TestClusterBrowser(t *testing.T) {
	dbURL := pgtest.DB(t)
	obs := observe(t, dbURL)
	// Two nodes start together on the empty database.
	var wg sync.WaitGroup
	nodes := make([]*node, 2)
	for i, name := range []string{"one", "two"} {
		wg.Go(func() { nodes[i] = startNode(t, name, dbURL, "--ask", "write,edit") })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	list := nodes[1].sessions(t)
	if len(list) != 1 {
		t.Fatalf("%d sessions after two nodes started on an empty database, want one demo", len(list))
	}
	id := list[0].ID
	// runner runs the demo; watcher only shows it.
	runner, watcher := nodes[0], nodes[1]
	if !strings.Contains(runner.logText(), "started the scripted demo session") {
		runner, watcher = watcher, runner
	}
	if strings.Contains(watcher.logText(), "started the scripted demo session") {
		t.Fatal("both nodes started a demo")
	}
	asked := func(n int) core.ApprovalAsked {
		t.Helper()
		var a core.ApprovalAsked
		obs.waitLog(t, id, func(events []core.Event) bool {
			k := 0
			for _, e := range events {
				if e.Type == core.EventApprovalAsked {
					if k++; k == n {
						return json.Unmarshal(e.Data, &a) == nil
					}
				}
			}
			return false
		}, fmt.Sprintf("approval/asked number %d", n))
		return a
	}
	write := asked(1)

	bctx := clusterBrowser(t)
	if err := chromedp.Do(bctx, chromedp.Navigate(watcher.url+"/sessions/"+id),
		chromedp.WaitReady(chromedp.CSS(`[data-call-id="`+write.CallID+`"][data-state="awaiting"]`))); err != nil {
		t.Fatalf("the waiting write on the watching node's page: %v", err)
	}
	if code, body := watcher.postJSON(t, "/api/sessions/"+id+"/approvals/"+write.ID, `{"decision":"approve"}`); code != http.StatusOK {
		t.Fatalf("approve through the watching node: %d %s", code, body)
	}
	// The write's card morphed to completed; a later card appeared, open
	// (pending, or already awaiting: the edit's call and its approval may
	// reach the page in one commit since appends commit at durability
	// points).
	livePoll := `(() => { const w = window.__cards['` + write.CallID + `'] || [];
  return w[0] === 'added:awaiting' && w.slice(1).every(x => x.startsWith('attr:')) && w.includes('attr:ok') &&
    Object.entries(window.__cards).some(([id, s]) => id !== '` + write.CallID + `' && (s[0] === 'added:pending' || s[0] === 'added:awaiting')); })()`
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](livePoll, chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		cards, _ := chromedp.Run(bctx, chromedp.Evaluate[map[string][]string](`window.__cards`))
		t.Fatalf("the watching node did not show the write completing and a new open card, live: %v (cards %v)", err, cards)
	}
	asked(2) // the next call waits: the turn is open
	before := watcher.export(t, id)
	runner.kill()
	if l := storetest.EventJSON(before); len(l) == 0 {
		t.Fatal("nothing was committed before the kill")
	}
	if !openTurn(before) {
		t.Fatal("the demo's turn had ended before the kill: the test did not catch it mid-turn")
	}

	// The watching node repairs the session of the node that is gone; its
	// page shows it, live.
	if err := chromedp.Do(bctx, chromedp.WaitReady(chromedp.CSS(`[data-testid="turn"][data-status="stopped"]`))); err != nil {
		t.Fatalf("the watching node's page never showed the repaired turn: %v", err)
	}
	// Why it was repaired is a note beside the (plain dsh) log; the divider
	// reads it, live.
	repairMsg := `(document.querySelector('[data-testid="turn"][data-status="stopped"] .turn-msg') || {}).textContent || ''`
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`(`+repairMsg+`).includes('closed by crash repair: the node running it stopped')`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		msg, _ := chromedp.Run(bctx, chromedp.Evaluate[string](repairMsg))
		t.Errorf("the repaired turn's divider says %q, want why (the node stopped): %v", msg, err)
	}
	// The killed node restarts while a third node starts: both run
	// startup repair, and neither may touch the session again.
	var restarted [2]*node
	for i, name := range []string{"one-again", "three"} {
		wg.Go(func() { restarted[i] = startNode(t, name, dbURL, "--no-demo") })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	after := watcher.export(t, id)
	if len(after) <= len(before) {
		t.Fatalf("no repair: %d events before the kill, %d after", len(before), len(after))
	}
	for i, e := range storetest.EventJSON(before) {
		if got := storetest.EventJSON(after[i : i+1])[0]; got != e {
			t.Fatalf("event %d changed across the crash:\n%s\n%s", i, e, got)
		}
	}
	closers := core.InterruptedTurnClosers(before)
	if len(after) != len(before)+len(closers) {
		t.Fatalf("%d events appended by repair, want %d (one repair)", len(after)-len(before), len(closers))
	}
	if got, want := storetest.EventJSON(after[len(before):]), storetest.EventJSON(closers); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("repair appended\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	logs := watcher.logText() + restarted[0].logText() + restarted[1].logText()
	if repairs := strings.Count(logs, "repaired a session whose node is gone") + strings.Count(logs, "repaired an interrupted turn"); repairs != 1 {
		t.Errorf("%d repairs logged, want 1", repairs)
	}
	if nav, err := chromedp.Run(bctx, chromedp.Evaluate[int](`performance.getEntriesByType('navigation').length`)); err != nil || nav != 1 {
		t.Errorf("navigations = %d (%v), want 1: no reload", nav, err)
	}
	if shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(90)); err == nil {
		if dir := os.Getenv("PRISM_SHOTS"); dir != "" {
			_ = os.WriteFile(dir+"/cluster-repair.png", shot, 0o644)
		}
	}
}

// openTurn reports whether a log's last turn is open.
func openTurn(events []core.Event) bool {
	open := false
	for _, e := range events {
		switch e.Type {
		case core.EventTurnStart:
			open = true
		case core.EventTurnEnd:
			open = false
		}
	}
	return open
}

// TestClusterForwarding: a follow-up and a cancel posted to one node for a
// session another node runs reach the running node through the database;
// the session page on the other node offers both controls.
func TestClusterForwarding(t *testing.T) {
	dbURL := pgtest.DB(t)
	obs := observe(t, dbURL)
	a := startNode(t, "A", dbURL, "--no-demo")
	b := startNode(t, "B", dbURL, "--no-demo")
	res, err := http.Post(a.url+"/api/sessions", "application/json", strings.NewReader(`{"prompt":"Find why the tests fail and fix it.","model":"scripted"}`))
	if err != nil {
		t.Fatal(err)
	}
	var started struct{ ID string }
	json.NewDecoder(res.Body).Decode(&started)
	res.Body.Close()
	if started.ID == "" {
		t.Fatalf("start on A: %d", res.StatusCode)
	}
	id := started.ID
	page, err := http.Get(b.url + "/sessions/" + id)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if !strings.Contains(string(body), `data-testid="message-form"`) {
		t.Errorf("B's page of A's running session has no message form")
	}
	// Cancel through B: A aborts its turn.
	if code := b.post(t, "/sessions/"+id+"/cancel", nil); code != http.StatusSeeOther {
		t.Fatalf("cancel through B: %d", code)
	}
	obs.waitLog(t, id, func(events []core.Event) bool {
		for _, e := range events {
			if e.Type == core.EventTurnEnd && strings.Contains(string(e.Data), `"aborted"`) {
				return true
			}
		}
		return false
	}, "a turn/end aborted by the forwarded cancel")
	// A follow-up through B: A logs it as the next turn's user message.
	if code := b.post(t, "/sessions/"+id+"/messages", url.Values{"text": {"and now the README"}}); code != http.StatusSeeOther {
		t.Fatalf("follow-up through B: %d", code)
	}
	obs.waitLog(t, id, func(events []core.Event) bool {
		for _, e := range events {
			if e.Type == core.EventUserMessage && strings.Contains(string(e.Data), "and now the README") {
				return true
			}
		}
		return false
	}, "the forwarded follow-up")
	if !strings.Contains(a.logText(), "took a forwarded command") {
		t.Error("A did not log the forwarded commands")
	}
	// Search on B finds what A committed: the index is written in the
	// append transaction, in the shared database.
	var found struct {
		Hits []struct {
			SessionID string `json:"sessionId"`
			Kind      string `json:"kind"`
			Snippet   string `json:"snippet"`
		} `json:"hits"`
	}
	if res, err := http.Get(b.url + "/api/search?q=" + url.QueryEscape(`"now the README" kind:user`)); err != nil {
		t.Fatal(err)
	} else {
		err := json.NewDecoder(res.Body).Decode(&found)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("search on B: %d %v", res.StatusCode, err)
		}
	}
	if len(found.Hits) != 1 || found.Hits[0].SessionID != id || !strings.Contains(found.Hits[0].Snippet, "README") {
		t.Errorf("search on B for A's follow-up: %+v, want the one user message of session %s", found.Hits, id)
	}
	if list := b.get(t, "/"); !strings.Contains(list, `data-testid="search-link"`) {
		t.Error("B's list has no link to search")
	}
	// A session no node runs (imported) takes no follow-up on any node.
	imported := postFile(t, b, storetest.Fixtures[1:]+"/basic/session.jsonl")
	if code := b.post(t, "/sessions/"+imported+"/messages", url.Values{"text": {"hello?"}}); code != http.StatusNotFound {
		t.Errorf("follow-up to an imported session: %d, want 404", code)
	}
}

// observer is a store on the test cluster's database that collects every
// node's commits (through NOTIFY and the events table, as a node would).
type observer struct {
	mu     sync.Mutex
	events map[string][]core.Event
	more   chan struct{}
}

func observe(t *testing.T, dbURL string) *observer {
	t.Helper()
	o := &observer{events: map[string][]core.Event{}, more: make(chan struct{}, 1)}
	// No RepairInterval: the observer only watches; it never repairs.
	st, err := pgstore.Open(context.Background(), dbURL, pgstore.Options{Logger: quietLog(), Committed: func(c store.Commit) {
		o.mu.Lock()
		if c.Replaced {
			o.events[c.SessionID] = nil
		}
		o.events[c.SessionID] = append(o.events[c.SessionID], c.Events...)
		o.mu.Unlock()
		select {
		case o.more <- struct{}{}:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return o
}

// waitLog waits until the events committed to session id satisfy ok.
func (o *observer) waitLog(t *testing.T, id string, ok func([]core.Event) bool, what string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		o.mu.Lock()
		done := ok(o.events[id])
		o.mu.Unlock()
		if done {
			return
		}
		select {
		case <-o.more:
		case <-deadline:
			t.Fatalf("never saw %s in session %s", what, id)
		}
	}
}

// postFile imports a session log file through a node's API and returns
// the session's id.
func postFile(t *testing.T, n *node, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(n.url+"/api/sessions/import", "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct{ IDs []string }
	body, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(body, &out); err != nil || len(out.IDs) != 1 {
		t.Fatalf("import on node %s: %d %s", n.name, res.StatusCode, body)
	}
	return out.IDs[0]
}

// TestClusterApprovals: the demo on node A waits for approval of a write;
// node B lists the waiting approval (read from A's session log), offers
// its buttons, forwards a policy and a decision to A, which logs them and
// runs the call, and refuses a second decision naming the first.
func TestClusterApprovals(t *testing.T) {
	dbURL := pgtest.DB(t)
	obs := observe(t, dbURL)
	const rule = "write:file_path!~^src/"
	a := startNode(t, "A", dbURL, "--ask-rule", rule)
	b := startNode(t, "B", dbURL, "--no-demo", "--ask-rule", rule)
	list := b.sessions(t)
	if len(list) != 1 {
		t.Fatalf("%d sessions, want A's demo", len(list))
	}
	id := list[0].ID
	var asked core.ApprovalAsked
	obs.waitLog(t, id, func(events []core.Event) bool {
		for _, e := range events {
			if e.Type == core.EventApprovalAsked {
				return json.Unmarshal(e.Data, &asked) == nil
			}
		}
		return false
	}, "the write's approval/asked")

	var pending []struct{ ID, SessionID, CallID, ToolName, Reason, Arguments string }
	if err := json.Unmarshal([]byte(b.get(t, "/api/approvals")), &pending); err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].ID != asked.ID || pending[0].SessionID != id || pending[0].ToolName != "write" ||
		pending[0].Reason != asked.Reason || !strings.Contains(pending[0].Arguments, "file_path") {
		t.Fatalf("B's /api/approvals = %+v, want A's waiting write %+v", pending, asked)
	}
	page := pageDoc(t, b.get(t, "/sessions/"+id))
	if page.Find(`[data-state="awaiting"] [data-testid="approve"]`).Length() != 1 {
		t.Error("B's page of A's waiting card offers no Approve button")
	}

	if code, body := b.postJSON(t, "/api/sessions/"+id+"/approval-policy", `{"policy":"ask"}`); code != http.StatusOK {
		t.Errorf("policy through B: %d %s", code, body)
	}
	obs.waitLog(t, id, func(events []core.Event) bool {
		return events[len(events)-1].Type == core.EventApprovalPolicy
	}, "the forwarded approval/policy")

	decide := "/api/sessions/" + id + "/approvals/" + asked.ID
	code, body := b.postJSON(t, decide, `{"decision":"approve","note":"fine"}`)
	var got core.ApprovalDecided
	if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil || got.ID != asked.ID || got.Outcome != core.ApprovalAllowedOnce ||
		!strings.Contains(got.By, "API client") {
		t.Fatalf("decision through B: %d %s", code, body)
	}
	obs.waitLog(t, id, func(events []core.Event) bool {
		for _, e := range events {
			var r core.ToolResultData
			if e.Type == core.EventToolResult && json.Unmarshal(e.Data, &r) == nil && r.Message.Source.CallID == asked.CallID {
				return true
			}
		}
		return false
	}, "the approved write's result")
	var decided core.ApprovalDecided
	for _, e := range obs.log(id) {
		if e.Type == core.EventApprovalDecided {
			_ = json.Unmarshal(e.Data, &decided)
		}
	}
	if decided != got {
		t.Errorf("A logged %+v, B answered %+v", decided, got)
	}
	if !strings.Contains(a.logText(), "took a forwarded command") {
		t.Error("A did not log the forwarded decision")
	}
	// A second decision through B is refused, naming the first.
	if code, body := b.postJSON(t, decide, `{"decision":"reject"}`); code != http.StatusConflict || !strings.Contains(body, "already decided") ||
		!strings.Contains(body, "approved by") {
		t.Errorf("second decision through B: %d %s, want 409 naming the approval", code, body)
	}
	if got := strings.TrimSpace(b.get(t, "/api/approvals")); got != "[]" {
		t.Errorf("B still lists %s", got)
	}
}

// postJSON posts a JSON body to a node and returns the status and body.
func (n *node) postJSON(t *testing.T, path, body string) (int, string) {
	t.Helper()
	res, err := http.Post(n.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(out)
}

// get reads a page of a node, failing on any status but 200.
func (n *node) get(t *testing.T, path string) string {
	t.Helper()
	return getOK(t, n.url+path)
}

// log returns the events committed to session id so far.
func (o *observer) log(id string) []core.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.events[id])
}

// TestClusterShareRevocation: a share link made on node A streams on node
// B; revoking it on A ends B's open stream, saying so, and B refuses the
// link from then on.
func TestClusterShareRevocation(t *testing.T) {
	dbURL := pgtest.DB(t)
	a := startNode(t, "A", dbURL, "--no-demo")
	b := startNode(t, "B", dbURL, "--no-demo")
	id := postFile(t, a, storetest.Fixtures[1:]+"/basic/session.jsonl")
	code, body := a.postJSON(t, "/api/sessions/"+id+"/shares", `{"label":"watch"}`)
	var link struct{ ID, URL string }
	if err := json.Unmarshal([]byte(body), &link); code != http.StatusCreated || err != nil {
		t.Fatalf("create a link on A: %d %s", code, body)
	}
	u, err := url.Parse(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.url+u.Path+"/stream?after=-1", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the link's stream on B: %v %v", res, err)
	}
	defer res.Body.Close()
	// The stream's first frame (the page) proves it is open.
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "event: ") {
	}
	del, _ := http.NewRequest(http.MethodDelete, a.url+"/api/shares/"+link.ID, nil)
	if r, err := http.DefaultClient.Do(del); err != nil || r.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke on A: %v %v", r, err)
	}
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
	}
	if ctx.Err() != nil || !strings.Contains(rest.String(), "revoked") {
		t.Fatalf("B's stream after the revocation on A (ended: %v):\n%.2000s", ctx.Err() == nil, rest.String())
	}
	r, err := http.Get(b.url + u.Path)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusNotFound {
		t.Errorf("the revoked link on B: %d, want 404", r.StatusCode)
	}
}

// sseReader reads an open SSE stream's lines in the background.
type sseReader struct {
	lines chan string
	body  io.Closer
}

// openSSE opens a stream on a node; it is closed when the test ends.
func openSSE(t *testing.T, u string) *sseReader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("stream %s: %v %v", u, res, err)
	}
	r := &sseReader{lines: make(chan string, 1024), body: res.Body}
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { cancel(); res.Body.Close() })
	return r
}

// waitFor reads the stream until a line holds every one of want, failing
// after limit (a failure guard); it returns how long it waited.
func (r *sseReader) waitFor(t *testing.T, limit time.Duration, want ...string) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := time.After(limit)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				t.Fatalf("the stream ended before a line with %q", want)
			}
			found := true
			for _, w := range want {
				found = found && strings.Contains(line, w)
			}
			if found {
				return time.Since(start)
			}
		case <-deadline:
			t.Fatalf("no line with %q on the stream within %s", want, limit)
		}
	}
}

// statusOf returns a session's status in a node's list.
func statusOf(t *testing.T, n *node, id string) string {
	t.Helper()
	for _, s := range n.sessions(t) {
		if s.ID == id {
			return s.Status
		}
	}
	t.Fatalf("session %s is not in node %s's list", id, n.name)
	return ""
}

// waitAsked waits until session id logged an approval/asked and returns it.
func (o *observer) waitAsked(t *testing.T, id string) core.ApprovalAsked {
	t.Helper()
	var a core.ApprovalAsked
	o.waitLog(t, id, func(events []core.Event) bool {
		for _, e := range events {
			if e.Type == core.EventApprovalAsked {
				return json.Unmarshal(e.Data, &a) == nil
			}
		}
		return false
	}, "an approval/asked")
	return a
}

// TestClusterNodeKillRepairedLive: node A runs the demo, whose turn waits
// for an approval; node B shows it live. A is SIGKILLed and stays dead:
// within 10 s B finds the session's lock free, repairs the turn
// (interrupted, saying the node stopped), its open page shows the turn
// stopped without a reload, and its list says interrupted — no node has
// to start for that. A follow-up or a cancel sent to B is refused as for
// any session no node runs.
func TestClusterNodeKillRepairedLive(t *testing.T) {
	dbURL := pgtest.DB(t)
	obs := observe(t, dbURL)
	a := startNode(t, "A", dbURL, "--ask", "write,edit")
	b := startNode(t, "B", dbURL, "--no-demo")
	list := b.sessions(t)
	if len(list) != 1 {
		t.Fatalf("%d sessions, want A's demo", len(list))
	}
	id := list[0].ID
	obs.waitAsked(t, id)
	before := obs.log(id)
	if !openTurn(before) {
		t.Fatal("the demo's turn is not open while its call waits")
	}
	if got := statusOf(t, b, id); got != core.StatusRunning {
		t.Fatalf("B lists A's session as %s, want running", got)
	}
	// The stream's catch-up frame (the last event) proves it subscribed.
	stream := openSSE(t, fmt.Sprintf("%s/sessions/%s/stream?after=%d", b.url, id, before[len(before)-1].Seq-1))
	stream.waitFor(t, 30*time.Second, fmt.Sprintf("id: %d", before[len(before)-1].Seq))

	a.kill()
	took := stream.waitFor(t, 30*time.Second, `data-status="stopped"`, "the node running it stopped")
	t.Logf("B's page showed the repair %s after the kill", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("B's page showed the repair %s after the kill, want within 10 s", took)
	}
	if got := statusOf(t, b, id); got != core.StatusInterrupted {
		t.Errorf("B lists the session as %s after the repair, want interrupted", got)
	}
	after := b.export(t, id)
	if !slices.Equal(storetest.EventJSON(after[:len(before)]), storetest.EventJSON(before)) || openTurn(after) {
		t.Errorf("the repair changed the log's prefix or left the turn open")
	}
	if !strings.Contains(b.logText(), "repaired a session whose node is gone") {
		t.Error("B did not log the repair")
	}
	if code := b.post(t, "/sessions/"+id+"/cancel", nil); code != http.StatusNotFound {
		t.Errorf("cancel through B after the repair: %d, want 404 (no node runs it)", code)
	}
}

// TestClusterDatabaseOutage: PostgreSQL crashes (an immediate shutdown)
// while node A's demo turn waits for an approval that B's page shows.
// During the outage a new session is refused with 503 and a Retry-After
// saying the store is unreachable, so is the approval (the call still
// waits), and a cancel's append fails: the session refuses further
// appends. Once PostgreSQL is back, A repairs the
// session itself, saying "the store was unreachable": B's open page shows
// it without a reload, A's page says it, both lists say interrupted, and
// new sessions start again.
func TestClusterDatabaseOutage(t *testing.T) {
	ctx := context.Background()
	pg, err := pgcluster.Start(ctx, pgcluster.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop() })
	dbURL, err := pg.CreateDatabase(ctx, "outage")
	if err != nil {
		t.Fatal(err)
	}
	obs := observe(t, dbURL)
	a := startNode(t, "A", dbURL, "--ask", "write,edit")
	b := startNode(t, "B", dbURL, "--no-demo")
	list := b.sessions(t)
	if len(list) != 1 {
		t.Fatalf("%d sessions, want A's demo", len(list))
	}
	id := list[0].ID
	asked := obs.waitAsked(t, id)
	before := obs.log(id)
	// The stream's catch-up frame (the last event) proves it subscribed.
	stream := openSSE(t, fmt.Sprintf("%s/sessions/%s/stream?after=%d", b.url, id, before[len(before)-1].Seq-1))
	stream.waitFor(t, 30*time.Second, fmt.Sprintf("id: %d", before[len(before)-1].Seq))

	pg.Crash()
	res, err := http.Post(a.url+"/api/sessions", "application/json", strings.NewReader(`{"prompt":"hello","model":"scripted"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(body), "unreachable") || strings.Contains(string(body), "127.0.0.1") {
		t.Errorf("new session during the outage: %d Retry-After %q %s; want 503 with Retry-After, saying the store is unreachable (without its address)",
			res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	// A decision is refused while the store cannot take it (503, the
	// call still waits: TestApprovalDuringOutage decides it once the
	// store is back). A cancel is appended: that append fails, and the
	// session refuses further appends.
	code, body2 := a.postJSON(t, "/api/sessions/"+id+"/approvals/"+asked.ID, `{"decision":"approve"}`)
	if code != http.StatusServiceUnavailable || !strings.Contains(body2, "unreachable") || !strings.Contains(body2, "still waits") {
		t.Errorf("approval during the outage: %d %s; want 503 saying the store is unreachable and the call still waits", code, body2)
	}
	t.Logf("cancel during the outage: %d", a.post(t, "/sessions/"+id+"/cancel", nil))
	waitLogLine(t, a, "the session refuses further appends")

	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	stream.waitFor(t, 60*time.Second, `data-status="stopped"`, "the store was unreachable")
	t.Logf("B's page showed the repair %s after PostgreSQL accepted connections again", time.Since(back).Round(time.Millisecond))
	if page := a.get(t, "/sessions/"+id); !strings.Contains(page, "the store was unreachable") {
		t.Error("A's page of the repaired session does not say the store was unreachable")
	}
	for _, n := range []*node{a, b} {
		if got := statusOf(t, n, id); got != core.StatusInterrupted {
			t.Errorf("node %s lists the session as %s, want interrupted", n.name, got)
		}
	}
	if !strings.Contains(a.logText(), "repaired a session whose events could not be stored") {
		t.Error("A did not repair its own session")
	}
	res, err = http.Post(a.url+"/api/sessions", "application/json", strings.NewReader(`{"prompt":"hello again","model":"scripted"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode >= 300 {
		t.Errorf("new session after the outage: %d", res.StatusCode)
	}
}

// waitLogLine waits until a node's log holds line (a failure guard of 30 s).
func waitLogLine(t *testing.T, n *node, line string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(n.logText(), line) {
		if time.Now().After(deadline) {
			t.Fatalf("node %s never logged %q", n.name, line)
		}
		time.Sleep(10 * time.Millisecond) // polling the log the node writes
	}
}

// TestClusterSignOut: a login cookie made on node A opens node B (the
// login is in the shared database), and signing out on A ends it on B.
func TestClusterSignOut(t *testing.T) {
	const token = "cluster-owner-token-0123456789"
	t.Setenv("PRISM_OWNER_TOKEN", token)
	dbURL := pgtest.DB(t)
	a := startNode(t, "A", dbURL, "--no-demo")
	b := startNode(t, "B", dbURL, "--no-demo")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noRedirect.PostForm(a.url+"/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 1 {
		t.Fatalf("sign-in on A: %d, cookies %v", res.StatusCode, res.Cookies())
	}
	cookie := res.Cookies()[0]
	with := func(method, u string) int {
		t.Helper()
		req, _ := http.NewRequest(method, u, nil)
		req.AddCookie(cookie)
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := with(http.MethodGet, b.url+"/api/sessions"); code != http.StatusOK {
		t.Fatalf("A's login cookie on B: %d, want 200", code)
	}
	if code := with(http.MethodPost, a.url+"/logout"); code != http.StatusSeeOther {
		t.Fatalf("sign-out on A: %d", code)
	}
	for name, n := range map[string]*node{"A": a, "B": b} {
		if code := with(http.MethodGet, n.url+"/api/sessions"); code != http.StatusUnauthorized {
			t.Errorf("the signed-out cookie on %s: %d, want 401", name, code)
		}
	}
}
