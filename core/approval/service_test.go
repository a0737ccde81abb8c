package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/agent"
	"prism/core/agent/agenttest"
	"prism/core/approval"
	"prism/core/model"
	"prism/core/tools"
)

// noteSteps is a session that calls note once, then answers.
var noteSteps = []model.Step{
	{Text: "Let me note that.", Calls: []model.ScriptCall{{ID: "c1", Name: "note", Arguments: `{"title":"Plan"}`}}},
	{Text: "Done."},
}

// rig is the real loop over an in-memory session: the note tool behind the
// ask rule "note", the approval service as its approver.
type rig struct {
	runner *agent.Runner
	svc    *approval.Service
	events chan core.Event
}

func newRig(t *testing.T, cfg approval.Config, steps []model.Step) *rig {
	t.Helper()
	reg := core.NewRegistry(nil)
	reg.MustRegister(tools.NewNote())
	rules, err := approval.ParseTools("note")
	if err != nil {
		t.Fatal(err)
	}
	reg.UsePreExecute(rules.Hook())
	r := &rig{events: make(chan core.Event, 1024)}
	r.runner, err = agent.NewRunner(agent.RunnerConfig{Tools: reg, Models: agenttest.Script(steps...), WorkspaceRoot: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
		OnEvent: func(_ string, e core.Event) { r.events <- e }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.runner.Close() })
	cfg.Sessions = r.runner
	if r.svc, err = approval.NewService(cfg); err != nil {
		t.Fatal(err)
	}
	reg.SetApprover(r.svc)
	return r
}

// next returns the next event of type typ, failing after 10 s.
func (r *rig) next(t *testing.T, typ string) core.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-r.events:
			if e.Type == typ {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s event within 10s", typ)
		}
	}
}

func (r *rig) start(t *testing.T) string {
	t.Helper()
	id, err := r.runner.Start(context.Background(), agent.StartRequest{Prompt: "note the plan"})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// callEvents returns the types of the events from c1's tool/call to its
// tool/result, and the approval/decided and tool/result data.
func callEvents(t *testing.T, r *rig, id string) (types []string, decided core.ApprovalDecided, result core.ToolResultData, end core.TurnEnd) {
	t.Helper()
	sess, err := r.runner.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, e := range sess.Events() {
		switch e.Type {
		case core.EventToolCall:
			in = true
		case core.EventApprovalDecided:
			mustDecode(t, e, &decided)
		case core.EventToolResult:
			mustDecode(t, e, &result)
		case core.EventTurnEnd:
			mustDecode(t, e, &end)
		}
		if in {
			types = append(types, e.Type)
		}
		if e.Type == core.EventToolResult {
			in = false
		}
	}
	return types, decided, result, end
}

func mustDecode(t *testing.T, e core.Event, v any) {
	t.Helper()
	if err := json.Unmarshal(e.Data, v); err != nil {
		t.Fatalf("%s: %v", e.Type, err)
	}
}

// TestOutcomesThroughTheLoop is dsh's approval table (§2.6, the texts of
// §2.4) through the real agent loop on a scripted model: what the person
// (or the turn, the timeout, the policy, the server) does while the note
// call waits, the outcome logged, and what the model reads.
func TestOutcomesThroughTheLoop(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     approval.Config
		act     func(t *testing.T, r *rig, id string, p approval.Pending)
		waits   bool // the approval waits for a person
		outcome core.ApprovalOutcome
		by      string
		note    string
		reason  string
		text    string
		errInfo *core.ErrorInfo
		turnEnd string
	}{
		{
			name: "approved once: the call runs", waits: true,
			act: func(t *testing.T, r *rig, id string, p approval.Pending) {
				decide(t, r, id, p.ID, approval.Decision{Approve: true, By: "the owner", Note: "fine"})
			},
			outcome: core.ApprovalAllowedOnce, by: "the owner", note: "fine",
			text: "# Plan", turnEnd: core.TurnCompleted,
		},
		{
			name: "rejected", waits: true,
			act: func(t *testing.T, r *rig, id string, p approval.Pending) {
				decide(t, r, id, p.ID, approval.Decision{By: "a browser page"})
			},
			outcome: core.ApprovalRejected, by: "a browser page",
			text: `Error: the user rejected tool "note"`, turnEnd: core.TurnCompleted,
		},
		{
			name: "rejected with a note the model reads", waits: true,
			act: func(t *testing.T, r *rig, id string, p approval.Pending) {
				decide(t, r, id, p.ID, approval.Decision{By: "the owner", Note: "write it in the wiki"})
			},
			outcome: core.ApprovalRejected, by: "the owner", note: "write it in the wiki",
			text: `Error: the user rejected tool "note": write it in the wiki`, turnEnd: core.TurnCompleted,
		},
		{
			name: "the turn is cancelled while the call waits", waits: true,
			act: func(t *testing.T, r *rig, id string, _ approval.Pending) {
				if err := r.runner.Cancel(id); err != nil {
					t.Fatal(err)
				}
			},
			outcome: core.ApprovalCancelled, reason: approval.ReasonTurnCancelled,
			text: "Error: tool call aborted before dispatch", errInfo: &core.ErrorInfo{Name: "AbortError", Code: core.CodeAbortedBeforeDispatch},
			turnEnd: core.TurnAborted,
		},
		{
			name: "nobody decides in time", waits: true, cfg: approval.Config{Timeout: 40 * time.Millisecond},
			outcome: core.ApprovalCancelled, reason: "nobody decided within 40ms",
			text: `Error: approval for tool "note" was cancelled: nobody decided within 40ms`, turnEnd: core.TurnCompleted,
		},
		{
			name: "the channel closes while the call waits", waits: true,
			act:     func(_ *testing.T, r *rig, _ string, _ approval.Pending) { r.svc.Close() },
			outcome: core.ApprovalUnavailable, reason: approval.ReasonClosed,
			text:    `Error: tool "note" requires approval, but no approval channel is available: the server stopped taking decisions`,
			turnEnd: core.TurnCompleted,
		},
		{
			name: "session policy never", cfg: approval.Config{Policy: core.ApprovalPolicyNever},
			outcome: core.ApprovalRejected, reason: approval.ReasonPolicyNever,
			text: `Error: the user rejected tool "note": the session's approval policy is never`, turnEnd: core.TurnCompleted,
		},
	} {
		// In a synctest bubble: the timeout case's 40ms are the fake
		// clock's, so the call is still waiting when its Pending is read,
		// however loaded the machine.
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, tc.cfg, noteSteps)
				id := r.start(t)
				asked := r.next(t, core.EventApprovalAsked)
				var a core.ApprovalAsked
				mustDecode(t, asked, &a)
				if a.ToolName != "note" || a.CallID != "c1" || a.Reason != "note calls need approval" || a.ID == "" {
					t.Errorf("approval/asked = %+v", a)
				}
				if tc.waits {
					want := []approval.Pending{{ID: a.ID, SessionID: id, CallID: "c1", ToolName: "note", Reason: "note calls need approval",
						Arguments: `{"title":"Plan"}`, Seq: asked.Seq, AskedAt: asked.Time}}
					if diff := cmp.Diff(want, r.svc.Pending()); diff != "" {
						t.Errorf("Pending (-want +got):\n%s", diff)
					}
					if tc.act != nil {
						tc.act(t, r, id, want[0])
					}
				}
				r.next(t, core.EventTurnEnd)
				if p := r.svc.Pending(); len(p) != 0 {
					t.Errorf("still pending after the turn: %+v", p)
				}
				types, decided, result, end := callEvents(t, r, id)
				if diff := cmp.Diff([]string{core.EventToolCall, core.EventApprovalAsked, core.EventApprovalDecided, core.EventToolResult}, types); diff != "" {
					t.Errorf("the call's events (-want +got):\n%s", diff)
				}
				wantDecided := core.ApprovalDecided{ID: a.ID, Outcome: tc.outcome, By: tc.by, Note: tc.note, Reason: tc.reason}
				if decided != wantDecided {
					t.Errorf("approval/decided = %+v, want %+v", decided, wantDecided)
				}
				res := result.Projection()
				if got := res.Content.PlainText(); !strings.HasPrefix(got, tc.text) || (tc.outcome != core.ApprovalAllowedOnce && got != tc.text) {
					t.Errorf("tool result text = %q, want %q", got, tc.text)
				}
				if res.IsError != (tc.outcome != core.ApprovalAllowedOnce) {
					t.Errorf("isError = %v for %s", res.IsError, tc.outcome)
				}
				if diff := cmp.Diff(tc.errInfo, result.Error); diff != "" {
					t.Errorf("error identity (-want +got):\n%s", diff)
				}
				if end.Reason.Kind != tc.turnEnd {
					t.Errorf("turn ended %q, want %q", end.Reason.Kind, tc.turnEnd)
				}
			})
		})
	}
}

func decide(t *testing.T, r *rig, id, approvalID string, d approval.Decision) approval.Decided {
	t.Helper()
	got, err := r.svc.Decide(context.Background(), id, approvalID, d)
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	return got
}

// TestFirstDecisionWins: of many concurrent decisions exactly one is taken;
// every other one is refused with who decided first, and so is a late one.
func TestFirstDecisionWins(t *testing.T) {
	r := newRig(t, approval.Config{}, noteSteps)
	id := r.start(t)
	var a core.ApprovalAsked
	mustDecode(t, r.next(t, core.EventApprovalAsked), &a)

	const n = 8
	type res struct {
		d   approval.Decided
		err error
		by  string
	}
	out := make(chan res, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			by := "tab " + string(rune('A'+i))
			d, err := r.svc.Decide(context.Background(), id, a.ID, approval.Decision{Approve: i%2 == 0, By: by})
			out <- res{d, err, by}
		})
	}
	wg.Wait()
	close(out)
	var winner approval.Decided
	var refused []*approval.AlreadyDecidedError
	for x := range out {
		var already *approval.AlreadyDecidedError
		switch {
		case x.err == nil:
			if winner.ID != "" {
				t.Fatalf("two decisions taken: %+v and %+v", winner, x.d)
			}
			winner = x.d
			if winner.By != x.by {
				t.Errorf("the winner's record names %q, want %q", winner.By, x.by)
			}
		case errors.As(x.err, &already):
			refused = append(refused, already)
		default:
			t.Fatalf("Decide: %v", x.err)
		}
	}
	if winner.ID != a.ID || len(refused) != n-1 {
		t.Fatalf("winner %+v, %d refused; want one winner and %d refused", winner, len(refused), n-1)
	}
	for _, e := range refused {
		if e.Decided != winner {
			t.Errorf("refusal names %+v, want the winner %+v", e.Decided, winner)
		}
		if core.ErrorCode(e) != core.CodeConflict || !strings.Contains(e.Error(), "already decided") || !strings.Contains(e.Error(), "by "+winner.By) {
			t.Errorf("refusal = %q (%s)", e.Error(), core.ErrorCode(e))
		}
	}
	r.next(t, core.EventTurnEnd)
	// A late decision, after the call ran, is refused the same way.
	var already *approval.AlreadyDecidedError
	if _, err := r.svc.Decide(context.Background(), id, a.ID, approval.Decision{Approve: true, By: "late"}); !errors.As(err, &already) || already.Decided != winner {
		t.Errorf("late Decide = %v, want refused naming %+v", err, winner)
	}
	// The log holds one decision: the winner's.
	_, decided, _, _ := callEvents(t, r, id)
	if decided != winner.ApprovalDecided {
		t.Errorf("logged %+v, want %+v", decided, winner.ApprovalDecided)
	}
}

// TestDecideUnknown: an approval the service never saw waiting is not
// found, with the session and id named.
func TestDecideUnknown(t *testing.T) {
	r := newRig(t, approval.Config{}, noteSteps)
	_, err := r.svc.Decide(context.Background(), "s1", "a1", approval.Decision{Approve: true})
	if core.ErrorCode(err) != core.CodeNotFound || !strings.Contains(err.Error(), "s1") || !strings.Contains(err.Error(), "a1") {
		t.Errorf("Decide(unknown) = %v (%s)", err, core.ErrorCode(err))
	}
}

// TestPolicyEventOverridesTheDefault: the session's latest approval/policy
// event is its policy; the configured one applies only without one.
func TestPolicyEventOverridesTheDefault(t *testing.T) {
	steps := []model.Step{
		{Calls: []model.ScriptCall{{ID: "c1", Name: "note", Arguments: `{"title":"One"}`}}},
		{Calls: []model.ScriptCall{{ID: "c2", Name: "note", Arguments: `{"title":"Two"}`}}},
		{Text: "Done."},
	}
	r := newRig(t, approval.Config{}, steps)
	id := r.start(t)
	var a core.ApprovalAsked
	mustDecode(t, r.next(t, core.EventApprovalAsked), &a)
	sess, err := r.runner.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Append(context.Background(), core.EventApprovalPolicy, core.ApprovalPolicyData{Policy: core.ApprovalPolicyNever}, core.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	decide(t, r, id, a.ID, approval.Decision{Approve: true, By: "the owner"})
	var second core.ApprovalDecided
	mustDecode(t, r.next(t, core.EventApprovalDecided), &second) // the first decision
	mustDecode(t, r.next(t, core.EventApprovalDecided), &second)
	if second.Outcome != core.ApprovalRejected || second.Reason != approval.ReasonPolicyNever {
		t.Errorf("second call's decision = %+v, want rejected by the policy", second)
	}
	r.next(t, core.EventTurnEnd)
}

// TestApproveOutsideATurn: the service refuses to ask for a session it
// does not know or whose turn is closed; the call then fails without
// running.
func TestApproveOutsideATurn(t *testing.T) {
	r := newRig(t, approval.Config{}, []model.Step{{Text: "hi"}})
	_, err := r.svc.Approve(context.Background(), core.ApprovalRequest{SessionID: "nope", ToolName: "note"})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Approve(unknown session) = %v", err)
	}
	id := r.start(t)
	r.next(t, core.EventTurnEnd)
	_, err = r.svc.Approve(context.Background(), core.ApprovalRequest{SessionID: id, ToolName: "note"})
	if err == nil || !strings.Contains(err.Error(), "no open turn") {
		t.Errorf("Approve(closed turn) = %v", err)
	}
}

func TestNewServiceRefusesBadConfig(t *testing.T) {
	r := newRig(t, approval.Config{}, nil)
	for _, cfg := range []approval.Config{{}, {Sessions: r.runner, Policy: "sometimes"}, {Sessions: r.runner, Timeout: -time.Second}} {
		if _, err := approval.NewService(cfg); err == nil {
			t.Errorf("NewService(%+v) accepted", cfg)
		}
	}
}
