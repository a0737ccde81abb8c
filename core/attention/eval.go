package attention

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"prism/core"
	"prism/core/search"
)

// Firing is a rule that fired on a session: the server writes it as a
// note of kind attention (AtSeq = Seq) and runs the rule's actions.
type Firing struct {
	Rule    string
	Session string
	// CallID is the call it is about ("" = the session).
	CallID string
	// Seq is the event that raised it.
	Seq int64
	// Key identifies the firing within its session, so it is raised once
	// (a reconnect, a replay or a restart never raises it again).
	Key string
	// Reason is what a person reads on the badge.
	Reason string
}

// Clearing says that the condition of a firing ended (its call completed,
// its approval was decided, a new event ended an idle spell, …).
type Clearing struct {
	Session string
	Key     string
	// Seq is the event that ended it (-1 when no event did).
	Seq int64
}

// Output is what one Observe or Tick raised and cleared.
type Output struct {
	Fired   []Firing
	Cleared []Clearing
}

func (o *Output) fire(f Firing) { o.Fired = append(o.Fired, f) }
func (o *Output) clear(session, key string, seq int64) {
	o.Cleared = append(o.Cleared, Clearing{Session: session, Key: key, Seq: seq})
}

// CostFunc prices a summary's token usage by model (nil: no prices).
type CostFunc func(models []core.ModelUsage) float64

// Evaluator turns a stream of committed events and the passing of time
// into firings and clearings. It keeps a little state per session (its
// core.Summary, open calls and approvals, repeated call keys, the error
// streak). It is not safe for concurrent use: one goroutine feeds it.
type Evaluator struct {
	rules    []Rule
	queries  bool // a query rule: cards' documents are built
	cost     CostFunc
	sessions map[string]*sessionState
}

type openCall struct {
	tool  string
	seq   int64
	since time.Time
	doc   *Doc
}

type openApproval struct {
	callID string
	tool   string
	seq    int64
	since  time.Time
}

type sessionState struct {
	sum       core.Summary
	calls     map[string]*openCall
	approvals map[string]*openApproval
	loops     map[string]int // CallKey → times seen
	streak    int            // errors in a row
	streakSeq int64          // the first error of the streak
	turn      int
	turnToks  int64   // tokens at the turn's start
	turnCost  float64 // cost at the turn's start
	lastEvent time.Time
	// raised are the keys of firings whose condition may still end by
	// itself, with the rule's kind (cleared when it does).
	raised map[string]string
	fired  map[string]bool
}

// NewEvaluator returns an evaluator of rules; cost prices budgets in usd.
func NewEvaluator(rules []Rule, cost CostFunc) *Evaluator {
	ev := &Evaluator{rules: rules, cost: cost, sessions: map[string]*sessionState{}}
	for _, r := range rules {
		ev.queries = ev.queries || r.When == WhenQuery
	}
	return ev
}

// Rules returns the rules it evaluates.
func (ev *Evaluator) Rules() []Rule { return ev.rules }

// Known reports whether the evaluator has seen the session.
func (ev *Evaluator) Known(session string) bool { return ev.sessions[session] != nil }

// Forget drops a session's state (deleted, or its log replaced: feed the
// new log from seq 0).
func (ev *Evaluator) Forget(session string) { delete(ev.sessions, session) }

func (ev *Evaluator) state(session string, now time.Time) *sessionState {
	s := ev.sessions[session]
	if s == nil {
		s = &sessionState{sum: core.NewSummary(), calls: map[string]*openCall{}, approvals: map[string]*openApproval{},
			loops: map[string]int{}, raised: map[string]string{}, fired: map[string]bool{}, lastEvent: now}
		ev.sessions[session] = s
	}
	return s
}

func key(rule, what string) string { return rule + "|" + what }

// Observe feeds a session's committed events, in seq order, seen at now.
func (ev *Evaluator) Observe(session string, events []core.Event, now time.Time) Output {
	var out Output
	s := ev.state(session, now)
	for i := range events {
		e := &events[i]
		if e.Seq <= s.sum.LastSeq {
			continue // already seen (a catch-up that overlaps)
		}
		ev.observe(session, s, e, now, &out)
	}
	return out
}

// ObserveStored feeds a session's events read back from its stored log
// (a restart, a session first seen mid-log), in seq order: each is taken
// as seen at its own time (never after now), so the duration rules count
// from when a call started or the session last moved, not from when the
// evaluator read them.
func (ev *Evaluator) ObserveStored(session string, events []core.Event, now time.Time) Output {
	var out Output
	s := ev.state(session, now)
	for i := range events {
		e := &events[i]
		if e.Seq <= s.sum.LastSeq {
			continue
		}
		at := now
		if t := time.UnixMilli(e.Time); e.Time > 0 && t.Before(now) {
			at = t
		}
		ev.observe(session, s, e, at, &out)
	}
	return out
}

// Timed reports whether a rule counts time (pending, approval-waiting,
// idle): a session's state must be known for Tick to fire it.
func (ev *Evaluator) Timed() bool {
	for _, r := range ev.rules {
		switch r.When {
		case WhenPending, WhenApprovalWaiting, WhenIdle:
			return true
		}
	}
	return false
}

func (ev *Evaluator) observe(session string, s *sessionState, e *core.Event, now time.Time, out *Output) {
	errorsBefore, resultsBefore := s.sum.Errors, s.sum.Results
	facts := core.FactsOf(e)
	s.sum.ApplyFacts(e, &facts)
	s.lastEvent = now
	// A new event ends every idle spell.
	for k, when := range s.raised {
		if when == WhenIdle {
			delete(s.raised, k)
			out.clear(session, k, e.Seq)
		}
	}
	switch e.Type {
	case core.EventTurnStart:
		s.turn++
		s.turnToks = s.sum.InputTokens + s.sum.OutputTokens
		if ev.cost != nil {
			s.turnCost = ev.cost(s.sum.Models)
		}
	case core.EventTurnEnd:
		for k, when := range s.raised {
			if when == WhenBudget+"/"+PerTurn {
				delete(s.raised, k)
				out.clear(session, k, e.Seq)
			}
		}
	case core.EventToolCall:
		var c core.ToolCall
		if json.Unmarshal(e.Data, &c) != nil || c.CallID == "" {
			break
		}
		oc := &openCall{tool: c.Name, seq: e.Seq, since: now}
		if ev.queries {
			oc.doc = NewDoc(search.KindCall, c.Name, false, "", search.Extract(e).Sections)
		}
		s.calls[c.CallID] = oc
		ck := core.CallKey(c.Name, c.Arguments)
		s.loops[ck]++
		n := s.loops[ck]
		for i := range ev.rules {
			r := &ev.rules[i]
			switch r.When {
			case WhenLoop:
				if n == r.Count && r.appliesTo(c.Name) {
					sum := sha256.Sum256([]byte(ck))
					ev.raise(s, out, r, Firing{Session: session, CallID: c.CallID, Seq: e.Seq, Key: key(r.Name, "loop:"+hex.EncodeToString(sum[:8])),
						Reason: fmt.Sprintf("%s called %d times with the same arguments", c.Name, n)})
				}
			case WhenQuery:
				if Match(r.Parsed, oc.doc) {
					ev.raise(s, out, r, Firing{Session: session, CallID: c.CallID, Seq: e.Seq, Key: key(r.Name, "card:"+c.CallID),
						Reason: fmt.Sprintf("%s call matches %s", c.Name, r.Query)})
				}
			}
		}
	case core.EventToolResult:
		callID := facts.CallID()
		if oc, ok := s.calls[callID]; ok {
			delete(s.calls, callID)
			for _, r := range ev.rules {
				if r.When == WhenPending {
					ev.settle(s, out, session, key(r.Name, "call:"+callID), e.Seq)
				}
			}
			var p search.Part
			if oc.doc != nil {
				p = search.Extract(e)
			}
			if p.Role == search.RoleResult {
				oc.doc.IsError, oc.doc.Code = p.IsError, p.Code
				oc.doc.Add(p.Sections)
				for i := range ev.rules {
					r := &ev.rules[i]
					if r.When == WhenQuery && Match(r.Parsed, oc.doc) {
						ev.raise(s, out, r, Firing{Session: session, CallID: callID, Seq: e.Seq, Key: key(r.Name, "card:"+callID),
							Reason: fmt.Sprintf("%s card matches %s", oc.tool, r.Query)})
					}
				}
			}
		}
		if s.sum.Results > resultsBefore {
			if s.sum.Errors > errorsBefore {
				if s.streak == 0 {
					s.streakSeq = e.Seq
				}
				s.streak++
				for i := range ev.rules {
					r := &ev.rules[i]
					if r.When == WhenErrorStreak && s.streak == r.Count {
						ev.raise(s, out, r, Firing{Session: session, CallID: callID, Seq: e.Seq, Key: key(r.Name, fmt.Sprintf("streak:%d", s.streakSeq)),
							Reason: fmt.Sprintf("%d failed calls in a row", s.streak)})
					}
				}
			} else {
				s.streak = 0
				for k, when := range s.raised {
					if when == WhenErrorStreak {
						delete(s.raised, k)
						out.clear(session, k, e.Seq)
					}
				}
			}
		}
	case core.EventApprovalAsked:
		var a core.ApprovalAsked
		if json.Unmarshal(e.Data, &a) == nil && a.ID != "" {
			s.approvals[a.ID] = &openApproval{callID: a.CallID, tool: a.ToolName, seq: e.Seq, since: now}
		}
	case core.EventApprovalDecided:
		var d core.ApprovalDecided
		if json.Unmarshal(e.Data, &d) == nil {
			if _, ok := s.approvals[d.ID]; ok {
				delete(s.approvals, d.ID)
				for _, r := range ev.rules {
					if r.When == WhenApprovalWaiting {
						ev.settle(s, out, session, key(r.Name, "approval:"+d.ID), e.Seq)
					}
				}
			}
		}
	}
	if s.sum.Status != core.StatusRunning {
		// A turn that ended leaves nothing pending: its calls were
		// answered or closed by crash repair.
		if len(s.calls) > 0 && (e.Type == core.EventTurnEnd) {
			for id := range s.calls {
				delete(s.calls, id)
				for _, r := range ev.rules {
					if r.When == WhenPending {
						ev.settle(s, out, session, key(r.Name, "call:"+id), e.Seq)
					}
				}
			}
		}
	}
	ev.budgets(session, s, e.Seq, out)
}

// budgets fires the budget rules a session's usage has passed (keys and
// reasons are built only then: this runs on every event).
func (ev *Evaluator) budgets(session string, s *sessionState, seq int64, out *Output) {
	for i := range ev.rules {
		r := &ev.rules[i]
		if r.When != WhenBudget {
			continue
		}
		toks := s.sum.InputTokens + s.sum.OutputTokens
		if r.Per == PerTurn {
			toks -= s.turnToks
		}
		var usd float64
		switch {
		case r.Tokens > 0:
			if toks <= r.Tokens {
				continue
			}
		case r.USD > 0 && ev.cost != nil:
			usd = ev.cost(s.sum.Models)
			if r.Per == PerTurn {
				usd -= s.turnCost
			}
			if usd <= r.USD {
				continue
			}
		default:
			continue
		}
		scope, k := "this session", key(r.Name, "budget")
		if r.Per == PerTurn {
			scope, k = fmt.Sprintf("in turn %d", s.turn), key(r.Name, fmt.Sprintf("budget:turn:%d", s.turn))
		}
		if s.fired[k] {
			continue
		}
		reason := fmt.Sprintf("%d tokens %s, over %d", toks, scope, r.Tokens)
		if r.USD > 0 {
			reason = fmt.Sprintf("%s %s, over %s", dollars(usd), scope, dollars(r.USD))
		}
		ev.raise(s, out, r, Firing{Session: session, Seq: seq, Key: k, Reason: reason})
	}
}

// raise records a firing once per key.
func (ev *Evaluator) raise(s *sessionState, out *Output, r *Rule, f Firing) {
	if s.fired[f.Key] {
		return
	}
	s.fired[f.Key] = true
	f.Rule = r.Name
	when := r.When
	if r.When == WhenBudget {
		when = WhenBudget + "/" + r.Per
	}
	switch r.When {
	case WhenPending, WhenApprovalWaiting, WhenIdle, WhenErrorStreak:
		s.raised[f.Key] = when
	case WhenBudget:
		if r.Per == PerTurn {
			s.raised[f.Key] = when
		}
	}
	out.fire(f)
}

// settle clears a raised firing whose condition ended.
func (ev *Evaluator) settle(s *sessionState, out *Output, session, k string, seq int64) {
	if _, ok := s.raised[k]; ok {
		delete(s.raised, k)
		out.clear(session, k, seq)
	}
}

// Tick fires the rules on durations whose time came by now: calls pending
// and approvals waiting longer than their rule's for, running sessions
// idle that long.
func (ev *Evaluator) Tick(now time.Time) Output {
	var out Output
	for session, s := range ev.sessions {
		for i := range ev.rules {
			r := &ev.rules[i]
			switch r.When {
			case WhenPending:
				for id, c := range s.calls {
					if r.appliesTo(c.tool) && now.Sub(c.since) >= r.For {
						ev.raise(s, &out, r, Firing{Session: session, CallID: id, Seq: c.seq, Key: key(r.Name, "call:"+id),
							Reason: fmt.Sprintf("%s pending for %s", c.tool, now.Sub(c.since).Round(time.Second))})
					}
				}
			case WhenApprovalWaiting:
				for id, a := range s.approvals {
					if now.Sub(a.since) >= r.For {
						ev.raise(s, &out, r, Firing{Session: session, CallID: a.callID, Seq: a.seq, Key: key(r.Name, "approval:"+id),
							Reason: fmt.Sprintf("approval of %s waiting for %s", a.tool, now.Sub(a.since).Round(time.Second))})
					}
				}
			case WhenIdle:
				if s.sum.Status == core.StatusRunning && now.Sub(s.lastEvent) >= r.For {
					ev.raise(s, &out, r, Firing{Session: session, Seq: s.sum.LastSeq, Key: key(r.Name, fmt.Sprintf("idle:%d", s.sum.LastSeq)),
						Reason: fmt.Sprintf("no event for %s", now.Sub(s.lastEvent).Round(time.Second))})
				}
			}
		}
	}
	return out
}

// MarkFired records that a firing was raised before (a durable note read
// at startup), so it is not raised again; open says its note is not
// cleared, so its condition ending clears it.
func (ev *Evaluator) MarkFired(session, k, when string, open bool, now time.Time) {
	s := ev.state(session, now)
	s.fired[k] = true
	if open {
		s.raised[k] = when
	}
}

// Summary returns the session's summary as the evaluator folded it.
func (ev *Evaluator) Summary(session string) (core.Summary, bool) {
	s := ev.sessions[session]
	if s == nil {
		return core.Summary{}, false
	}
	return s.sum, true
}

// dollars formats an amount: cents above a dollar, four decimals under.
func dollars(usd float64) string {
	if usd >= 1 {
		return fmt.Sprintf("$%.2f", usd)
	}
	return fmt.Sprintf("$%.4f", usd)
}
