package attention_test

import (
	"strings"
	"testing"
	"time"

	"prism/core"
	"prism/core/attention"
	"prism/core/coretest"
)

const good = `
[[rule]]
name = "stuck"
when = "pending"
for = "2m"
tools = ["bash"]
actions = ["badge", "webhook"]

[[rule]]
name = "repeat"
when = "loop"
count = 3

[[rule]]
name = "spend"
when = "budget"
tokens = 5000
per = "turn"
actions = ["cancel"]

[[rule]]
name = "rm"
when = "query"
query = 'tool:bash "rm -rf"'

[webhook]
url = "http://127.0.0.1:9999/hook"
secret = "s3cret"
`

func TestParseGood(t *testing.T) {
	rs, err := attention.Parse("rules.toml", []byte(good), attention.Options{ListenAddr: "127.0.0.1:8080"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Rules) != 4 || rs.Webhook == nil || rs.Webhook.Secret != "s3cret" {
		t.Fatalf("rules %+v webhook %+v", rs.Rules, rs.Webhook)
	}
	r := rs.Rules[0]
	if r.For != 2*time.Minute || r.Line != 2 || !r.Has(attention.ActionWebhook) || !r.Has(attention.ActionBadge) {
		t.Errorf("stuck = %+v", r)
	}
	if rs.Rules[2].Per != attention.PerTurn || rs.Rules[3].Parsed == nil {
		t.Errorf("spend/rm = %+v %+v", rs.Rules[2], rs.Rules[3])
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	cases := []struct {
		name, file, want string
		line             int
		prices           bool
	}{
		{"unknown kind", "[[rule]]\nname = \"a\"\nwhen = \"slow\"\n", `unknown kind "slow"`, 3, false},
		{"unknown action", "[[rule]]\nname = \"a\"\nwhen = \"loop\"\ncount = 2\nactions = [\"page\"]\n", `unknown action "page"`, 5, false},
		{"bad duration", "[[rule]]\nname = \"a\"\nwhen = \"pending\"\nfor = \"2 minutes\"\n", `bad duration "2 minutes"`, 4, false},
		{"query does not parse", "[[rule]]\nname = \"a\"\nwhen = \"query\"\nquery = 'tool:'\n", `does not parse`, 4, false},
		{"session operator", "[[rule]]\nname = \"a\"\nwhen = \"query\"\nquery = 'status:running rm'\n", `status: is about a whole session`, 4, false},
		{"note operator", "\n\n[[rule]]\nname = \"a\"\nwhen = \"query\"\nquery = 'label:wrong'\n", `label: reads notes`, 6, false},
		{"usd without prices", "[[rule]]\nname = \"a\"\nwhen = \"budget\"\nusd = 2.0\n", `needs a price table (--prices)`, 4, false},
		{"webhook not http", "[[rule]]\nname = \"a\"\nwhen = \"loop\"\ncount = 2\nactions=[\"webhook\"]\n[webhook]\nurl = \"ftp://x/y\"\n", `must be an http(s) URL`, 7, false},
		{"webhook is prism", "[[rule]]\nname = \"a\"\nwhen = \"loop\"\ncount = 2\n[webhook]\nurl = \"http://localhost:8080/x\"\n", `prism's own listen address`, 6, false},
		{"unknown key", "[[rule]]\nname = \"a\"\nwhen = \"loop\"\ncount = 2\nfour = 4\n", `unknown key "rule.four"`, 5, false},
		{"toml syntax", "[[rule]]\nname = \"a\nwhen = \"loop\"\n", ``, 2, false},
		{"webhook action without table", "[[rule]]\nname = \"a\"\nwhen = \"loop\"\ncount = 2\nactions = [\"webhook\"]\n", `needs a [webhook] table`, 5, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := attention.Parse("r.toml", []byte(c.file), attention.Options{ListenAddr: "127.0.0.1:8080", Prices: c.prices})
			var e *attention.Error
			if err == nil {
				t.Fatal("no error")
			}
			if !asError(err, &e) {
				t.Fatalf("error %T %v is not an *attention.Error", err, err)
			}
			if e.Line != c.line || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q (line %d), want line %d containing %q", err, e.Line, c.line, c.want)
			}
		})
	}
	// Another loopback port (a local relay) is fine.
	if _, err := attention.Parse("r.toml", []byte("[webhook]\nurl = \"http://127.0.0.1:9000/x\"\n"), attention.Options{ListenAddr: "127.0.0.1:8080"}); err != nil {
		t.Errorf("a relay on another loopback port: %v", err)
	}
}

func asError(err error, e **attention.Error) bool {
	x, ok := err.(*attention.Error)
	*e = x
	return ok
}

func rules(t *testing.T, text string) []attention.Rule {
	t.Helper()
	rs, err := attention.Parse("r.toml", []byte(text), attention.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rs.Rules
}

func TestLoopFiresOnceOnTheCountthSameCall(t *testing.T) {
	ev := attention.NewEvaluator(rules(t, "[[rule]]\nname = \"repeat\"\nwhen = \"loop\"\ncount = 3\n"), nil)
	b := coretest.NewBuilder(0).TurnStart().StepStart()
	b.Call("c1", "read", `{"path":"a","limit":1}`).Result("c1", "x", false, nil, nil)
	b.Call("c2", "read", `{"limit":1, "path":"a"}`).Result("c2", "x", false, nil, nil)
	b.Call("c3", "read", `{"path":"b"}`).Result("c3", "x", false, nil, nil)
	now := time.Unix(1000, 0)
	if out := ev.Observe("s", b.Events, now); len(out.Fired) != 0 {
		t.Fatalf("fired after two same calls: %+v", out.Fired)
	}
	n := len(b.Events)
	b.Call("c4", "read", `{ "path": "a", "limit": 1 }`).Result("c4", "x", false, nil, nil)
	b.Call("c5", "read", `{"path":"a","limit":1}`)
	out := ev.Observe("s", b.Events[n:], now)
	if len(out.Fired) != 1 || out.Fired[0].CallID != "c4" || out.Fired[0].Rule != "repeat" || out.Fired[0].Seq != b.Events[n].Seq {
		t.Fatalf("fired %+v, want one on c4", out.Fired)
	}
	// The same events again (a replay) raise nothing.
	if out := ev.Observe("s", b.Events, now); len(out.Fired) != 0 {
		t.Fatalf("a replay fired again: %+v", out.Fired)
	}
}

func TestErrorStreakFiresAndClears(t *testing.T) {
	ev := attention.NewEvaluator(rules(t, "[[rule]]\nname = \"fails\"\nwhen = \"error-streak\"\ncount = 2\n"), nil)
	b := coretest.NewBuilder(0).TurnStart().StepStart()
	b.Call("c1", "bash", `{}`).Result("c1", "boom", true, nil, nil)
	b.Call("c2", "bash", `{}`).Result("c2", "ok", false, nil, nil)
	b.Call("c3", "bash", `{}`).Result("c3", "boom", true, nil, nil)
	now := time.Unix(0, 0)
	if out := ev.Observe("s", b.Events, now); len(out.Fired) != 0 {
		t.Fatalf("errors not in a row fired: %+v", out.Fired)
	}
	n := len(b.Events)
	b.Call("c4", "bash", `{}`).Result("c4", "boom", true, nil, nil)
	out := ev.Observe("s", b.Events[n:], now)
	if len(out.Fired) != 1 || out.Fired[0].CallID != "c4" || !strings.Contains(out.Fired[0].Reason, "2 failed calls in a row") {
		t.Fatalf("fired %+v", out.Fired)
	}
	n = len(b.Events)
	b.Call("c5", "bash", `{}`).Result("c5", "ok", false, nil, nil)
	out = ev.Observe("s", b.Events[n:], now)
	if len(out.Cleared) != 1 || out.Cleared[0].Key != "fails|streak:7" || out.Cleared[0].Seq != b.Events[len(b.Events)-1].Seq {
		t.Fatalf("a success did not clear the streak: %+v", out)
	}
}

func TestPendingFiresOnTheClockAndClearsOnResult(t *testing.T) {
	ev := attention.NewEvaluator(rules(t, "[[rule]]\nname = \"stuck\"\nwhen = \"pending\"\nfor = \"2m\"\ntools = [\"bash\"]\n"), nil)
	b := coretest.NewBuilder(0).TurnStart().StepStart()
	b.Call("c1", "bash", `{"cmd":"sleep 600"}`).Call("c2", "read", `{"path":"a"}`)
	t0 := time.Unix(5000, 0)
	ev.Observe("s", b.Events, t0)
	if out := ev.Tick(t0.Add(119 * time.Second)); len(out.Fired) != 0 {
		t.Fatalf("fired before 2m: %+v", out.Fired)
	}
	out := ev.Tick(t0.Add(2 * time.Minute))
	if len(out.Fired) != 1 || out.Fired[0].CallID != "c1" || out.Fired[0].Seq != 2 || !strings.Contains(out.Fired[0].Reason, "bash pending for 2m0s") {
		t.Fatalf("fired %+v, want c1 (bash only)", out.Fired)
	}
	if out := ev.Tick(t0.Add(time.Hour)); len(out.Fired) != 0 {
		t.Fatalf("fired twice: %+v", out.Fired)
	}
	n := len(b.Events)
	b.Result("c1", "done", false, nil, nil)
	out = ev.Observe("s", b.Events[n:], t0.Add(time.Hour))
	if len(out.Cleared) != 1 || out.Cleared[0].Key != "stuck|call:c1" {
		t.Fatalf("cleared %+v", out.Cleared)
	}
}

func TestIdleAndApprovalWaiting(t *testing.T) {
	ev := attention.NewEvaluator(rules(t, "[[rule]]\nname = \"quiet\"\nwhen = \"idle\"\nfor = \"1m\"\n[[rule]]\nname = \"ask\"\nwhen = \"approval-waiting\"\nfor = \"30s\"\n"), nil)
	b := coretest.NewBuilder(0).TurnStart().StepStart()
	b.Call("c1", "bash", `{}`)
	b.Add(core.EventApprovalAsked, core.ApprovalAsked{ID: "a1", ToolName: "bash", CallID: "c1"}, nil)
	t0 := time.Unix(0, 0)
	ev.Observe("s", b.Events, t0)
	out := ev.Tick(t0.Add(time.Minute))
	if len(out.Fired) != 2 {
		t.Fatalf("fired %+v, want idle and approval", out.Fired)
	}
	n := len(b.Events)
	b.Add(core.EventApprovalDecided, core.ApprovalDecided{ID: "a1", Outcome: core.ApprovalOutcome("approved")}, nil)
	out = ev.Observe("s", b.Events[n:], t0.Add(time.Minute))
	if len(out.Cleared) != 2 {
		t.Fatalf("a decision (an event) should clear both: %+v", out.Cleared)
	}
}

func TestBudgetPerTurn(t *testing.T) {
	ev := attention.NewEvaluator(rules(t, "[[rule]]\nname = \"spend\"\nwhen = \"budget\"\ntokens = 2000\nper = \"turn\"\n"), nil)
	b := coretest.NewBuilder(0).TurnStart().StepStart().Assistant("a") // 1285 tokens
	now := time.Unix(0, 0)
	if out := ev.Observe("s", b.Events, now); len(out.Fired) != 0 {
		t.Fatalf("fired under budget: %+v", out.Fired)
	}
	n := len(b.Events)
	b.Assistant("b")
	out := ev.Observe("s", b.Events[n:], now)
	if len(out.Fired) != 1 || !strings.Contains(out.Fired[0].Reason, "2570 tokens in turn 1, over 2000") {
		t.Fatalf("fired %+v", out.Fired)
	}
	n = len(b.Events)
	b.StepEnd().TurnEnd(core.TurnCompleted).TurnStart().StepStart().Assistant("c")
	out = ev.Observe("s", b.Events[n:], now)
	if len(out.Fired) != 0 || len(out.Cleared) != 1 {
		t.Fatalf("a new turn starts from zero and the old turn's firing clears: %+v", out)
	}
}

func TestQueryRuleOnNewAndCompletedCards(t *testing.T) {
	ev := attention.NewEvaluator(rules(t, "[[rule]]\nname = \"rm\"\nwhen = \"query\"\nquery = 'tool:bash \"rm -rf\"'\n[[rule]]\nname = \"denied\"\nwhen = \"query\"\nquery = 'error: permission'\n"), nil)
	b := coretest.NewBuilder(0).TurnStart().StepStart()
	b.Call("c1", "bash", `{"command":"rm -rf /tmp/x"}`).Call("c2", "grep", `{"pattern":"rm -rf"}`).Call("c3", "bash", `{"command":"ls"}`)
	b.Result("c3", "Permission denied", true, nil, nil).Result("c1", "ok", false, nil, nil)
	out := ev.Observe("s", b.Events, time.Unix(0, 0))
	var got []string
	for _, f := range out.Fired {
		got = append(got, f.Rule+":"+f.CallID)
	}
	if strings.Join(got, ",") != "rm:c1,denied:c3" {
		t.Fatalf("fired %v, want rm:c1,denied:c3", got)
	}
}

func TestBudgetInUSD(t *testing.T) {
	rs, err := attention.Parse("r.toml", []byte("[[rule]]\nname = \"spend\"\nwhen = \"budget\"\nusd = 0.01\n"), attention.Options{Prices: true})
	if err != nil {
		t.Fatal(err)
	}
	// $5 per million tokens of any model.
	cost := func(models []core.ModelUsage) float64 {
		var n int64
		for _, m := range models {
			n += m.InputTokens + m.OutputTokens
		}
		return float64(n) * 5 / 1e6
	}
	ev := attention.NewEvaluator(rs.Rules, cost)
	b := coretest.NewBuilder(0).TurnStart().StepStart().Assistant("a") // 1285 tokens: $0.0064
	if out := ev.Observe("s", b.Events, time.Unix(0, 0)); len(out.Fired) != 0 {
		t.Fatalf("fired under budget: %+v", out.Fired)
	}
	n := len(b.Events)
	b.Assistant("b") // 2570 tokens: $0.0129
	out := ev.Observe("s", b.Events[n:], time.Unix(0, 0))
	if len(out.Fired) != 1 || out.Fired[0].Reason != "$0.0129 this session, over $0.0100" {
		t.Fatalf("fired %+v", out.Fired)
	}
}
