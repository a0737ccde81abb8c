package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"prism/backend"
	"prism/core"
	"prism/core/agent"
	"prism/core/agent/agenttest"
	"prism/core/approval"
	"prism/core/coretest"
	"prism/core/model"
	"prism/core/redact"
	"prism/views"
	"prism/web"
	"prism/web/ownerauth"
)

// agentRunner adapts *agent.Runner to web.Runner and web.SessionOwner.
type agentRunner struct{ r *agent.Runner }

func (a agentRunner) StartSession(ctx context.Context, req web.StartRequest) (string, error) {
	return a.r.Start(ctx, agent.StartRequest{Prompt: req.Prompt, Model: req.Model})
}

func (a agentRunner) SendMessage(ctx context.Context, id, text string) error {
	return a.r.Send(ctx, id, text)
}

func (a agentRunner) Cancel(_ context.Context, id string) error { return a.r.Cancel(id) }

func (a agentRunner) Owns(id string) bool {
	_, err := a.r.Status(id)
	return err == nil
}

// planSteps is a session whose one call, a note titled "Plan", asks.
var planSteps = []model.Step{
	{Text: "Noting the plan.", Calls: []model.ScriptCall{{ID: "c1", Name: "note", Arguments: `{"title":"Plan <b>v2</b>"}`}}},
	{Text: "Done."},
}

// approvalEnv is the real stack — SQLite, the agent runner on a scripted
// model, the pipeline with the ask rule note:title~^Plan, the approval
// service — behind the web server.
type approvalEnv struct {
	*env
	runner *agent.Runner
	svc    *approval.Service
	asked  chan core.Event // approval/asked events as they commit
	ended  chan string     // sessions whose turn/end committed
}

func newApprovalEnv(t *testing.T, cfg approval.Config, steps []model.Step, more ...func(*web.Deps)) *approvalEnv {
	t.Helper()
	a := &approvalEnv{asked: make(chan core.Event, 16), ended: make(chan string, 16)}
	reg := presenters(t)
	rules, err := approval.ParseLines("note:title~^Plan")
	if err != nil {
		t.Fatal(err)
	}
	reg.UsePreExecute(rules.Hook())
	a.env = newEnv(t, func(d *web.Deps) {
		store := d.Sessions.(backend.Source).Store
		a.runner, err = agent.NewRunner(agent.RunnerConfig{Store: store, Tools: reg, Models: agenttest.Script(steps...),
			WorkspaceRoot: t.TempDir(), Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Sessions = a.runner
		if a.svc, err = approval.NewService(cfg); err != nil {
			t.Fatal(err)
		}
		reg.SetApprover(a.svc)
		d.Runner, d.Approvals = agentRunner{a.runner}, a.svc
		for _, m := range more {
			m(d)
		}
	})
	t.Cleanup(func() { a.runner.Close(); a.svc.Close() })
	remove := a.feed.OnCommit(func(id string, events []core.Event) {
		for _, e := range events {
			switch e.Type {
			case core.EventApprovalAsked:
				a.asked <- e
			case core.EventTurnEnd:
				a.ended <- id
			}
		}
	})
	t.Cleanup(remove)
	return a
}

// start starts a session and returns it with its approval/asked data.
func (a *approvalEnv) start(t *testing.T) (string, core.ApprovalAsked) {
	t.Helper()
	id, err := a.runner.Start(context.Background(), agent.StartRequest{Prompt: "plan it"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-a.asked:
		var d core.ApprovalAsked
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		return id, d
	case <-time.After(10 * time.Second):
		t.Fatal("no approval/asked within 10s")
	}
	return "", core.ApprovalAsked{}
}

func (a *approvalEnv) waitEnd(t *testing.T) {
	t.Helper()
	select {
	case <-a.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn did not end within 10s")
	}
}

type apiError struct{ Error, Code string }

func decodeJSON[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return v
}

// TestAPI_Approvals: GET /api/approvals lists the waiting call with what a
// client needs to decide it; the first JSON decision is taken and logged,
// a second is refused with 409 naming the first decider; the list empties
// and the call runs.
func TestAPI_Approvals(t *testing.T) {
	a := newApprovalEnv(t, approval.Config{}, planSteps)
	id, asked := a.start(t)

	res, body := a.get(t, "/api/approvals")
	list := decodeJSON[[]map[string]any](t, body)
	if res.StatusCode != 200 || len(list) != 1 {
		t.Fatalf("GET /api/approvals = %d %s", res.StatusCode, body)
	}
	want := map[string]any{"id": asked.ID, "sessionId": id, "callId": "c1", "toolName": "note",
		"reason": `title matches "^Plan"`, "arguments": `{"title":"Plan <b>v2</b>"}`,
		"sessionUrl": views.CardURL(id, views.CallElemID("c1")), "decideUrl": views.APIApprovalURL(id, asked.ID)}
	for k, v := range want {
		if list[0][k] != v {
			t.Errorf("approval %s = %v, want %v", k, list[0][k], v)
		}
	}

	res, body = a.post(t, views.APIApprovalURL(id, asked.ID), "application/json", `{"decision":"approve","note":"looks right"}`)
	got := decodeJSON[approval.Decided](t, body)
	if res.StatusCode != 200 || got.Outcome != core.ApprovalAllowedOnce || got.Note != "looks right" ||
		!strings.HasPrefix(got.By, "an API client (Go-http-client/") || !strings.HasSuffix(got.By, " at 127.0.0.1)") {
		t.Fatalf("decision = %d %s", res.StatusCode, body)
	}
	res, body = a.post(t, views.APIApprovalURL(id, asked.ID), "application/json", `{"decision":"reject"}`)
	e := decodeJSON[apiError](t, body)
	if res.StatusCode != 409 || e.Code != core.CodeConflict || !strings.Contains(e.Error, "already decided: approved by "+got.By) {
		t.Errorf("second decision = %d %s", res.StatusCode, body)
	}
	a.waitEnd(t)
	if _, body := a.get(t, "/api/approvals"); strings.TrimSpace(body) != "[]" {
		t.Errorf("after the decision GET /api/approvals = %s", body)
	}
	l, err := a.store.LoadSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var decided []core.ApprovalDecided
	for _, ev := range l.Events {
		if ev.Type == core.EventApprovalDecided {
			var d core.ApprovalDecided
			_ = json.Unmarshal(ev.Data, &d)
			decided = append(decided, d)
		}
		if ev.Type == core.EventToolResult && !strings.Contains(string(ev.Data), "Plan") {
			t.Errorf("the approved note did not run: %s", ev.Data)
		}
	}
	if len(decided) != 1 || decided[0] != got.ApprovalDecided {
		t.Errorf("logged decisions %+v, want only %+v", decided, got.ApprovalDecided)
	}
	if l.Info.Summary.Awaiting != 0 {
		t.Errorf("stored awaiting = %d", l.Info.Summary.Awaiting)
	}
}

// TestAPI_DecisionsRefuseBadInput: every bad decision names what was
// wrong, and decides nothing.
func TestAPI_DecisionsRefuseBadInput(t *testing.T) {
	a := newApprovalEnv(t, approval.Config{}, planSteps)
	id, asked := a.start(t)
	u := views.APIApprovalURL(id, asked.ID)
	for _, tc := range []struct {
		name, path, ctype, body string
		hdr                     []string
		status                  int
		code, msg               string
	}{
		{"unknown decision", u, "application/json", `{"decision":"maybe"}`, nil, 400, core.CodeInvalid, `decision must be "approve" or "reject", got "maybe"`},
		{"no decision", u, "application/json", `{}`, nil, 400, core.CodeInvalid, `got ""`},
		{"unknown field", u, "application/json", `{"decision":"approve","by":"admin"}`, nil, 400, core.CodeInvalid, `unknown field "by"`},
		{"not JSON", u, "application/json", `decision=approve`, nil, 400, core.CodeInvalid, "body must be"},
		{"not declared JSON", u, "text/plain", `{"decision":"approve"}`, nil, 415, core.CodeUnsupportedMediaType, "must be JSON"},
		{"two objects", u, "application/json", `{"decision":"reject"}{"decision":"approve"}`, nil, 400, core.CodeInvalid, "data after the JSON object"},
		{"note too long", u, "application/json", `{"decision":"reject","note":"` + strings.Repeat("x", 4001) + `"}`, nil, 400, core.CodeInvalid, "the note is 4001 bytes"},
		{"unknown approval", views.APIApprovalURL(id, "nope"), "application/json", `{"decision":"approve"}`, nil, 404, core.CodeNotFound, "has no approval nope"},
		{"unknown session", views.APIApprovalURL("ghost", asked.ID), "application/json", `{"decision":"approve"}`, nil, 404, core.CodeNotFound, "ghost"},
		{"cross-origin", u, "application/json", `{"decision":"approve"}`, []string{"Origin", "https://evil.example"}, 403, core.CodeForbidden, "cross-origin request refused"},
		{"cross-site form", views.ApprovalURL(id, asked.ID), "application/x-www-form-urlencoded", `decision=approve`, []string{"Sec-Fetch-Site", "cross-site"}, 403, core.CodeForbidden, "cross-site request refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := a.post(t, tc.path, tc.ctype, tc.body, append([]string{"Accept", "application/json"}, tc.hdr...)...)
			e := decodeJSON[apiError](t, body)
			if res.StatusCode != tc.status || e.Code != tc.code || !strings.Contains(e.Error, tc.msg) {
				t.Errorf("= %d %s, want %d %s %q", res.StatusCode, body, tc.status, tc.code, tc.msg)
			}
		})
	}
	if p := a.svc.Pending(); len(p) != 1 {
		t.Fatalf("a bad request decided something: pending %+v", p)
	}
	// The approval still waits, and a good decision still works.
	if res, body := a.post(t, u, "application/json", `{"decision":"reject","note":"no"}`); res.StatusCode != 200 {
		t.Errorf("good decision = %d %s", res.StatusCode, body)
	}
	a.waitEnd(t)
}

// TestApprovals_WithoutAService: a server without an approval service
// lists nothing and answers decisions 503; awaiting cards are read-only.
func TestApprovals_WithoutAService(t *testing.T) {
	e := newEnv(t, nil)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().Call("c1", "bash", `{"command":"rm -rf /"}`)
	b.Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a1", ToolName: "bash", CallID: "c1"}, nil)
	e.session(t, "s1", b.Events)
	if _, body := e.get(t, "/api/approvals"); strings.TrimSpace(body) != "[]" {
		t.Errorf("GET /api/approvals = %s", body)
	}
	res, body := e.post(t, views.APIApprovalURL("s1", "a1"), "application/json", `{"decision":"approve"}`)
	if res.StatusCode != 503 || !strings.Contains(body, "no agent runs here") {
		t.Errorf("decision = %d %s", res.StatusCode, body)
	}
	_, page := e.get(t, "/sessions/s1")
	card := doc(t, page).Find(`[data-call-id="c1"]`)
	if st, _ := card.Attr("data-state"); st != "awaiting" || card.Find("form").Length() != 0 || card.Find(`[data-testid="approval-waiting"]`).Length() != 1 {
		t.Errorf("card: state %q, %d forms", st, card.Find("form").Length())
	}
}

// TestApprovals_LogAnswersLateDecisions: the service forgets; the log does
// not. A decision on an approval decided in the log (a previous run) is
// refused naming who decided; one asked in a session that runs elsewhere
// is refused as such.
func TestApprovals_LogAnswersLateDecisions(t *testing.T) {
	a := newApprovalEnv(t, approval.Config{}, planSteps)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().Call("c1", "bash", `{"command":"rm -rf /"}`)
	b.Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a1", ToolName: "bash", CallID: "c1"}, nil)
	b.Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a2", ToolName: "bash", CallID: "c1"}, nil)
	b.Add(core.EventApprovalDecided, core.ApprovalDecided{ID: "a1", Outcome: core.ApprovalRejected, By: "tab abcd1234 (Firefox at 10.0.0.2)"}, nil)
	a.session(t, "old", b.Events)

	res, body := a.post(t, views.APIApprovalURL("old", "a1"), "application/json", `{"decision":"approve"}`)
	if e := decodeJSON[apiError](t, body); res.StatusCode != 409 || !strings.Contains(e.Error, "rejected by tab abcd1234 (Firefox at 10.0.0.2) at 00:00:00 UTC") {
		t.Errorf("decided in the log = %d %s", res.StatusCode, body)
	}
	res, body = a.post(t, views.APIApprovalURL("old", "a2"), "application/json", `{"decision":"approve"}`)
	if e := decodeJSON[apiError](t, body); res.StatusCode != 409 || !strings.Contains(e.Error, "runs elsewhere") {
		t.Errorf("asked elsewhere = %d %s", res.StatusCode, body)
	}
	// Its page is read-only: this server does not run it.
	_, page := a.get(t, "/sessions/old")
	if n := doc(t, page).Find(`[data-testid="approval-form"]`).Length(); n != 0 {
		t.Errorf("a session run elsewhere offers %d decision forms", n)
	}
}

// TestApprovals_Pages: the session page shows the waiting card with its
// form; the list shows the session waiting on a person; the card's form
// answers a Datastar request with the page's notice — a refusal too — and
// a plain post with a redirect.
func TestApprovals_Pages(t *testing.T) {
	a := newApprovalEnv(t, approval.Config{}, planSteps)
	id, asked := a.start(t)

	_, page := a.get(t, views.SessionURL(id))
	d := doc(t, page)
	card := d.Find(`[data-call-id="c1"]`)
	if st, _ := card.Attr("data-state"); st != "awaiting" {
		t.Fatalf("card state = %q", st)
	}
	if action, _ := card.Find(`[data-testid="approval-form"]`).Attr("action"); action != views.ApprovalURL(id, asked.ID) {
		t.Errorf("form action = %q", action)
	}
	if got := d.Find(`[data-testid="stat-awaiting"]`).Text(); got != "1 waiting" {
		t.Errorf("header awaiting stat = %q", got)
	}
	_, list := a.get(t, "/")
	row := doc(t, list).Find(`[data-session-id="` + id + `"]`)
	if row.Find(`[data-testid="awaiting-badge"]`).Length() != 1 {
		t.Errorf("the list row has no awaiting badge: %s", row.Text())
	}

	form := url.Values{"decision": {"reject"}, "note": {"write it down instead"}}.Encode()
	ds := []string{"Datastar-Request", "true", "Prism-Tab", "k3j2d9x1"}
	res, body := a.post(t, views.ApprovalURL(id, asked.ID), "application/x-www-form-urlencoded", form, ds...)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") ||
		!strings.Contains(body, `id="notice"`) || !strings.Contains(body, "Rejected: the agent reads your note.") {
		t.Errorf("Datastar decision = %d %s", res.StatusCode, body)
	}
	res, body = a.post(t, views.ApprovalURL(id, asked.ID), "application/x-www-form-urlencoded", "decision=approve", "Datastar-Request", "true", "Prism-Tab", "zzzzzzz2")
	if res.StatusCode != 200 || !strings.Contains(body, "notice-bar warn") ||
		!strings.Contains(body, "Already decided: rejected by tab k3j2d9x1 (Go-http-client/1.1 at 127.0.0.1) at ") {
		t.Errorf("second Datastar decision = %d %s", res.StatusCode, body)
	}
	a.waitEnd(t)
	_, list = a.get(t, "/")
	if n := doc(t, list).Find(`[data-testid="awaiting-badge"]`).Length(); n != 0 {
		t.Errorf("the badge stays after the decision (%d)", n)
	}
	_, page = a.get(t, views.SessionURL(id))
	c := doc(t, page).Find(`[data-call-id="c1"]`)
	if c.Find("form").Length() != 0 || !strings.Contains(c.Find(`[data-testid="approval-decision"]`).Text(), "Rejected by tab k3j2d9x1") ||
		c.Find(`[data-testid="approval-note"]`).Text() != "write it down instead" {
		t.Errorf("decided card: %s", c.Find(`[data-testid="approval"]`).Text())
	}

	// A plain form post (no script): a redirect back, or the error page.
	id2, asked2 := a.start(t)
	noRedirect := *a.client()
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, _ := http.NewRequest(http.MethodPost, a.base()+views.ApprovalURL(id2, asked2.ID), strings.NewReader("decision=approve"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r2, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusSeeOther || r2.Header.Get("Location") != views.SessionURL(id2) {
		t.Errorf("plain form post = %d → %q", r2.StatusCode, r2.Header.Get("Location"))
	}
	res, body = a.post(t, views.ApprovalURL(id2, asked2.ID), "application/x-www-form-urlencoded", "decision=approve", "Accept", "text/html")
	if res.StatusCode != 409 || !strings.Contains(body, `data-testid="error-page"`) || !strings.Contains(body, "already decided") {
		t.Errorf("second plain form post = %d", res.StatusCode)
	}
	a.waitEnd(t)
}

// TestApprovals_TimeoutAndCancel: --approval-timeout cancels a call nobody
// decides, with the text the model reads; cancelling the turn cancels the
// approval and the call never starts.
func TestApprovals_TimeoutAndCancel(t *testing.T) {
	a := newApprovalEnv(t, approval.Config{Timeout: 50 * time.Millisecond}, planSteps)
	id, _ := a.start(t)
	a.waitEnd(t)
	l, err := a.store.LoadSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	tl := views.Fold(l.Info.Header, l.Events, presenters(t))
	c := tl.CardsByCallID("c1")[0]
	if c.Approval == nil || c.Approval.Outcome != core.ApprovalCancelled || c.Approval.Why != "nobody decided within 50ms" {
		t.Errorf("approval = %+v", c.Approval)
	}
	if got := c.Result.Projection().Content.PlainText(); got != `Error: approval for tool "note" was cancelled: nobody decided within 50ms` {
		t.Errorf("result = %q", got)
	}

	b := newApprovalEnv(t, approval.Config{}, planSteps)
	id, asked := b.start(t)
	if err := b.runner.Cancel(id); err != nil {
		t.Fatal(err)
	}
	b.waitEnd(t)
	res, body := b.post(t, views.APIApprovalURL(id, asked.ID), "application/json", `{"decision":"approve"}`)
	if e := decodeJSON[apiError](t, body); res.StatusCode != 409 || !strings.Contains(e.Error, "cancelled (the turn was cancelled)") {
		t.Errorf("decision after the cancel = %d %s", res.StatusCode, body)
	}
}

// TestAPI_ApprovalPolicy: a running session's policy set to never rejects
// its next ask without asking, as dsh's approval/policy does; the call
// already waiting keeps waiting. Bad policies and sessions not run here
// are refused.
func TestAPI_ApprovalPolicy(t *testing.T) {
	steps := []model.Step{
		{Calls: []model.ScriptCall{{ID: "c1", Name: "note", Arguments: `{"title":"Plan A"}`}}},
		{Calls: []model.ScriptCall{{ID: "c2", Name: "note", Arguments: `{"title":"Plan B"}`}}},
		{Text: "Done."},
	}
	a := newApprovalEnv(t, approval.Config{}, steps)
	id, first := a.start(t)
	for _, tc := range []struct {
		path, body string
		status     int
		msg        string
	}{
		{views.APIPolicyURL(id), `{"policy":"sometimes"}`, 400, `approval policy must be "ask" or "never", got "sometimes"`},
		{views.APIPolicyURL(id), `{"mode":"never"}`, 400, `unknown field "mode"`},
		{views.APIPolicyURL("ghost"), `{"policy":"never"}`, 404, "ghost"},
	} {
		res, body := a.post(t, tc.path, "application/json", tc.body)
		if e := decodeJSON[apiError](t, body); res.StatusCode != tc.status || !strings.Contains(e.Error, tc.msg) {
			t.Errorf("POST %s %s = %d %s, want %d %q", tc.path, tc.body, res.StatusCode, body, tc.status, tc.msg)
		}
	}
	if res, body := a.post(t, views.APIPolicyURL(id), "application/json", `{"policy":"never"}`); res.StatusCode != 200 {
		t.Fatalf("set never = %d %s", res.StatusCode, body)
	}
	if p := a.svc.Pending(); len(p) != 1 || p[0].ID != first.ID {
		t.Errorf("the waiting call stopped waiting: %+v", p)
	}
	if res, body := a.post(t, views.APIApprovalURL(id, first.ID), "application/json", `{"decision":"approve"}`); res.StatusCode != 200 {
		t.Fatalf("approve = %d %s", res.StatusCode, body)
	}
	a.waitEnd(t)
	l, err := a.store.LoadSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, e := range l.Events {
		if e.Type == core.EventApprovalDecided {
			var d core.ApprovalDecided
			_ = json.Unmarshal(e.Data, &d)
			outcomes = append(outcomes, string(d.Outcome)+" "+d.Reason)
		}
	}
	if want := []string{"allowed-once ", "rejected " + approval.ReasonPolicyNever}; strings.Join(outcomes, "|") != strings.Join(want, "|") {
		t.Errorf("decisions = %q, want %q", outcomes, want)
	}
}

// TestApprovals_OwnerAndShares: with an owner token the decision routes
// want the owner (like every write route) and record "the owner"; a share
// link of the waiting session shows the card awaiting, without its form,
// on its page and in its stream.
func TestApprovals_OwnerAndShares(t *testing.T) {
	guard, err := ownerauth.New(ownerToken, ownerauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := newApprovalEnv(t, approval.Config{}, planSteps, func(d *web.Deps) {
		r, err := redact.New()
		if err != nil {
			t.Fatal(err)
		}
		d.Shares, d.Redactor, d.Owner = d.Sessions.(backend.Source).Store, r, guard
	})
	id, asked := a.start(t)
	bearer := []string{"Authorization", "Bearer " + ownerToken}

	_, sharePath := a.share(t, id, `{}`, bearer...)
	status, page := a.raw(t, http.MethodGet, sharePath)
	card := doc(t, page).Find(`[data-call-id="c1"]`)
	if st, _ := card.Attr("data-state"); status != 200 || st != "awaiting" {
		t.Fatalf("share page: %d, card state %q", status, st)
	}
	if card.Find("form, [data-testid=approve]").Length() != 0 || card.Find(`[data-testid="approval-waiting"]`).Length() != 1 {
		t.Errorf("the share page offers a decision: %s", card.Find(`[data-testid="approval"]`).Text())
	}
	// The owner's page of the same session offers it.
	_, owner := a.get(t, views.SessionURL(id), bearer...)
	if doc(t, owner).Find(`[data-call-id="c1"] [data-testid="approval-form"]`).Length() != 1 {
		t.Error("the owner's page offers no decision")
	}
	// The share link's stream renders the live card read-only too.
	s := a.stream(t, sharePath+"/stream?after=0")
	evs := s.until(t, func(ev sseEvent) bool {
		return strings.Contains(ev.Elements(), `data-call-id="c1" data-state="awaiting"`)
	})
	for _, ev := range evs {
		if strings.Contains(ev.Elements(), "approval-form") {
			t.Errorf("the share stream sent a decision form: %s", ev.Elements())
		}
	}

	u := views.APIApprovalURL(id, asked.ID)
	if res, body := a.post(t, u, "application/json", `{"decision":"approve"}`); res.StatusCode != 401 {
		t.Errorf("decision without the owner = %d %s", res.StatusCode, body)
	}
	if res, body := a.post(t, u, "application/json", `{"decision":"approve"}`, "Authorization", "Bearer wrong-token-0123456789"); res.StatusCode != 401 {
		t.Errorf("decision with a wrong token = %d %s", res.StatusCode, body)
	}
	res, body := a.post(t, u, "application/json", `{"decision":"approve"}`, bearer...)
	if d := decodeJSON[approval.Decided](t, body); res.StatusCode != 200 || !strings.HasPrefix(d.By, "the owner, an API client (") {
		t.Errorf("owner's decision = %d %s", res.StatusCode, body)
	}
	a.waitEnd(t)
}
