// Package attend runs attention rules in the server: it feeds the commit
// feed and a clock to a core/attention.Evaluator, writes each firing as a
// note of kind attention (never a log event, so imported, watched and
// remote-owned sessions are watched too), raises it once (the notes table
// remembers it across reconnects, replays and restarts), clears it when
// its condition ends or a person acknowledges it, and runs its actions:
// a signed webhook POST (Hooks) and the cancel of the session's running
// turn with the rule as dsh's hook cause.
package attend

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"prism/core"
	"prism/core/attention"
	"prism/core/logkey"
	"prism/core/notes"
	"prism/store"
	"prism/views"
)

// Store is what the service reads and writes: either engine's store.
type Store interface {
	EventsAfter(ctx context.Context, id string, afterSeq int64) ([]core.Event, error)
	// ListSessions lists the running sessions at start: the duration
	// rules' timers are seeded from their stored logs.
	ListSessions(ctx context.Context, o store.ListOptions) (store.SessionPage, error)
	Notes(ctx context.Context, session string, q notes.Query) ([]notes.Note, error)
	PutNote(ctx context.Context, in notes.Input) (notes.Note, error)
	RemoveNote(ctx context.Context, session, id string) (notes.Note, error)
	OpenNotes(ctx context.Context, kind string) ([]notes.Note, error)
}

// Canceller cancels a running turn with a cause (*agent.Runner).
type Canceller interface {
	CancelWith(id string, cause core.CancelCause) error
}

// CauseHook is the cancel cause kind a rule's cancel records (dsh's).
const CauseHook = "hook"

// Options configure a Service.
type Options struct {
	Store Store
	// Rules are the rules in force (nil: none); File names their file.
	Rules *attention.Rules
	File  string
	// Cost prices budgets in usd (nil without --prices).
	Cost attention.CostFunc
	// Cancel cancels the turns of sessions this server runs (nil: the
	// cancel action only marks).
	Cancel Canceller
	Log    *slog.Logger
	// Now is the clock (default time.Now); Every is how often Run checks
	// the duration rules (default 1s; a negative Every: only Tick does).
	Now   func() time.Time
	Every time.Duration
	// SessionURL is a session page's absolute URL, for webhooks.
	SessionURL func(id string) string
	// Evaluates says whether this node evaluates a session (nil: every
	// session): with several nodes on one database, one node does.
	Evaluates func(session string) bool
	// Hooks tune the webhook deliverer.
	Hooks HookOptions
}

// Service is the attention rules of one server.
type Service struct {
	o Options

	mu        sync.Mutex
	queue     []item
	rules     *attention.Rules
	loadedAt  time.Time
	loadErr   string
	pending   *attention.Rules // a reload Run applies
	hooks     *Hooks
	stopHooks context.CancelFunc
	last      map[string]lastFiring
	wake      chan struct{}
	hooksCtx  context.Context

	// Owned by Run.
	ev     *attention.Evaluator
	seeded map[string]bool
	open   map[string]map[string]string // session → key → note id
}

type item struct {
	tick    time.Time
	session string
	events  []core.Event
	replace bool
	done    chan struct{}
}

type lastFiring struct {
	n       int
	at      time.Time
	session string
	reason  string
}

// New returns a service; Run runs it.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Every == 0 {
		o.Every = time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Rules == nil {
		o.Rules = &attention.Rules{}
	}
	s := &Service{o: o, rules: o.Rules, loadedAt: o.Now(), last: map[string]lastFiring{}, wake: make(chan struct{}, 1),
		seeded: map[string]bool{}, open: map[string]map[string]string{}}
	s.ev = attention.NewEvaluator(o.Rules.Rules, o.Cost)
	return s
}

// Observe is the commit feed's OnCommit function: it queues the events
// and returns at once (it never waits for the rules).
func (s *Service) Observe(session string, events []core.Event) {
	s.push(item{session: session, events: events})
}

// Replaced is the commit feed's OnReplace function: the session's state
// is read again from its new log.
func (s *Service) Replaced(session string) { s.push(item{session: session, replace: true}) }

func (s *Service) push(it item) {
	s.mu.Lock()
	s.queue = append(s.queue, it)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Tick queues a check of the duration rules at now, after what is queued.
func (s *Service) Tick(now time.Time) { s.push(item{tick: now}) }

// Sync returns once everything queued before it was evaluated (tests,
// and the page that must show a firing it just caused).
func (s *Service) Sync(ctx context.Context) error {
	done := make(chan struct{})
	s.push(item{done: done})
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Reload replaces the rules (SIGHUP): rules is the new file's, err why it
// could not be read (then the old rules stay, and /rules shows err).
func (s *Service) Reload(rules *attention.Rules, err error) {
	s.mu.Lock()
	if err != nil {
		s.loadErr = err.Error()
		s.mu.Unlock()
		s.o.Log.Error("attention rules not reloaded: the old rules stay", logkey.File, s.o.File, logkey.Err, err)
		return
	}
	s.pending, s.loadErr = rules, ""
	s.mu.Unlock()
	s.push(item{})
	s.o.Log.Info("attention rules reloaded", logkey.File, s.o.File, logkey.Rules, len(rules.Rules))
}

// Run evaluates until ctx is done.
func (s *Service) Run(ctx context.Context) {
	s.mu.Lock()
	s.hooksCtx = ctx
	s.startHooks(s.rules)
	s.mu.Unlock()
	s.reconcile(ctx)
	var ticks <-chan time.Time
	if s.o.Every > 0 {
		t := time.NewTicker(s.o.Every)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
			s.drain(ctx)
		case <-ticks:
			s.Tick(s.o.Now())
		}
	}
}

// startHooks starts the deliverer of rules' webhook (s.mu held).
func (s *Service) startHooks(rules *attention.Rules) {
	if s.stopHooks != nil {
		s.stopHooks()
		s.stopHooks, s.hooks = nil, nil
	}
	if rules.Webhook == nil || s.hooksCtx == nil {
		return
	}
	h := NewHooks(*rules.Webhook, s.o.Log, s.o.Hooks)
	ctx, cancel := context.WithCancel(s.hooksCtx)
	s.hooks, s.stopHooks = h, cancel
	go h.Run(ctx)
}

func (s *Service) drain(ctx context.Context) {
	for {
		s.mu.Lock()
		if r := s.pending; r != nil {
			s.pending, s.rules, s.loadedAt = nil, r, s.o.Now()
			s.startHooks(r)
			s.ev = attention.NewEvaluator(r.Rules, s.o.Cost)
			s.seeded = map[string]bool{}
			s.open = map[string]map[string]string{}
		}
		q := s.queue
		s.queue = nil
		s.mu.Unlock()
		if len(q) == 0 {
			return
		}
		for _, it := range q {
			switch {
			case it.done != nil:
				close(it.done)
			case !it.tick.IsZero():
				s.handle(ctx, s.ev.Tick(it.tick))
			case it.replace:
				s.ev.Forget(it.session)
				delete(s.seeded, it.session)
				delete(s.open, it.session)
			case it.session != "":
				s.observe(ctx, it.session, it.events)
			}
		}
	}
}

func (s *Service) observe(ctx context.Context, session string, events []core.Event) {
	if len(s.ev.Rules()) == 0 || (s.o.Evaluates != nil && !s.o.Evaluates(session)) {
		return
	}
	now := s.o.Now()
	if !s.seeded[session] {
		s.seeded[session] = true
		if err := s.seed(ctx, session, now); err != nil {
			s.o.Log.Warn("attention: read the notes of a session", logkey.SessionID, session, logkey.Err, err)
		}
		if len(events) == 0 || events[0].Seq > 0 {
			// The log before these events (all of it for a session
			// seen first without events: a restart's reconcile).
			before, err := s.o.Store.EventsAfter(ctx, session, -1)
			if err != nil {
				s.o.Log.Warn("attention: read a session's log", logkey.SessionID, session, logkey.Err, err)
			} else {
				if len(events) > 0 {
					first := events[0].Seq
					before = slices.DeleteFunc(before, func(e core.Event) bool { return e.Seq >= first })
				}
				s.handle(ctx, s.ev.ObserveStored(session, before, now))
			}
		}
	}
	s.handle(ctx, s.ev.Observe(session, events, now))
}

// reconcile reads again, at start, the sessions with an open firing — a
// condition that ended while no server watched (a call closed by crash
// repair, a turn ended at shutdown) clears its firing — and, when a rule
// counts time, the running sessions: their calls pending, approvals
// waiting and idle spells are timed from their stored events, so those
// rules fire after a restart without waiting for the session's next
// commit.
func (s *Service) reconcile(ctx context.Context) {
	if len(s.ev.Rules()) == 0 {
		return
	}
	open, err := s.o.Store.OpenNotes(ctx, notes.KindAttention)
	if err != nil {
		s.o.Log.Warn("attention: read the open firings", logkey.Err, err)
	}
	for _, n := range open {
		if !s.seeded[n.Session] {
			s.observe(ctx, n.Session, nil)
		}
	}
	if !s.ev.Timed() {
		return
	}
	o := store.ListOptions{Status: core.StatusRunning, Limit: 1000}
	for {
		page, err := s.o.Store.ListSessions(ctx, o)
		if err != nil {
			s.o.Log.Warn("attention: list the running sessions", logkey.Err, err)
			return
		}
		for _, info := range page.Sessions {
			if !s.seeded[info.ID] {
				s.observe(ctx, info.ID, nil)
			}
		}
		if page.NextCursor == "" || ctx.Err() != nil {
			return
		}
		o.Cursor = page.NextCursor
	}
}

// seed marks what the notes table says already fired on session, so it
// is not raised again (a restart, a reload).
func (s *Service) seed(ctx context.Context, session string, now time.Time) error {
	ns, err := s.o.Store.Notes(ctx, session, notes.Query{Kind: notes.KindAttention, Removed: true})
	if err != nil {
		return err
	}
	for _, n := range ns {
		var d notes.AttentionData
		if json.Unmarshal(n.Data, &d) != nil || d.Key == "" {
			continue
		}
		when := ""
		for _, r := range s.ev.Rules() {
			if r.Name == d.Rule {
				when = r.When
				if r.When == attention.WhenBudget {
					when += "/" + r.Per
				}
			}
		}
		open := n.RemovedAtSeq == nil
		s.ev.MarkFired(session, d.Key, when, open && when != "", now)
		if open {
			s.remember(session, d.Key, n.ID)
		}
	}
	return nil
}

func (s *Service) remember(session, key, id string) {
	m := s.open[session]
	if m == nil {
		m = map[string]string{}
		s.open[session] = m
	}
	m[key] = id
}

func (s *Service) rule(name string) *attention.Rule {
	rs := s.ev.Rules()
	for i := range rs {
		if rs[i].Name == name {
			return &rs[i]
		}
	}
	return nil
}

// handle writes firings and clearings and runs the firings' actions.
func (s *Service) handle(ctx context.Context, out attention.Output) {
	for _, f := range out.Fired {
		s.fire(ctx, f)
	}
	for _, c := range out.Cleared {
		id, ok := s.open[c.Session][c.Key]
		if !ok {
			continue
		}
		delete(s.open[c.Session], c.Key)
		if _, err := s.o.Store.RemoveNote(ctx, c.Session, id); err != nil && core.ErrorCode(err) != core.CodeNotFound {
			s.o.Log.Warn("attention: clear a firing", logkey.SessionID, c.Session, logkey.NoteID, id, logkey.Err, err)
		}
	}
}

func (s *Service) fire(ctx context.Context, f attention.Firing) {
	r := s.rule(f.Rule)
	if r == nil {
		return
	}
	data, err := json.Marshal(notes.AttentionData{Rule: f.Rule, Reason: f.Reason, Key: f.Key})
	if err != nil {
		return
	}
	seq := f.Seq
	in := notes.Input{Session: f.Session, Kind: notes.KindAttention, CallID: f.CallID, Author: "rule " + f.Rule, AtSeq: &seq, Data: data, Once: true}
	n, err := s.o.Store.PutNote(ctx, in)
	if err != nil && in.CallID != "" && core.ErrorCode(err) == core.CodeNotFound {
		// The call is not in the stored log (a result without its call):
		// the firing is about the session.
		in.CallID = ""
		n, err = s.o.Store.PutNote(ctx, in)
	}
	if core.ErrorCode(err) == core.CodeConflict {
		// Raised already (by another node watching the same session, or
		// a run whose state this one did not read): its actions ran there.
		s.adopt(ctx, f.Session, f.Key)
		return
	}
	if err != nil {
		s.o.Log.Warn("attention: record a firing", logkey.Rule, f.Rule, logkey.SessionID, f.Session, logkey.Err, err)
		return
	}
	s.remember(f.Session, f.Key, n.ID)
	s.o.Log.Info("attention rule fired", logkey.Rule, f.Rule, logkey.SessionID, f.Session, logkey.CallID, f.CallID, logkey.Reason, f.Reason)
	s.mu.Lock()
	l := s.last[f.Rule]
	s.last[f.Rule] = lastFiring{n: l.n + 1, at: s.o.Now(), session: f.Session, reason: f.Reason}
	hooks := s.hooks
	s.mu.Unlock()
	if r.Has(attention.ActionWebhook) && hooks != nil {
		url := ""
		if s.o.SessionURL != nil {
			url = s.o.SessionURL(f.Session)
		}
		hooks.Enqueue(Payload{ID: n.ID, Rule: f.Rule, Reason: f.Reason, Session: f.Session, CallID: n.CallID, Seq: f.Seq, URL: url})
	}
	if r.Has(attention.ActionCancel) && s.o.Cancel != nil {
		cause := core.CancelCause{Kind: CauseHook, Reason: fmt.Sprintf("rule %s: %s", f.Rule, f.Reason)}
		if err := s.o.Cancel.CancelWith(f.Session, cause); err != nil {
			s.o.Log.Info("attention: cancel skipped (a session this server does not run)", logkey.Rule, f.Rule, logkey.SessionID, f.Session, logkey.Err, err)
		}
	}
}

// adopt remembers the open note of a firing another writer raised, so
// its condition ending clears it here too.
func (s *Service) adopt(ctx context.Context, session, key string) {
	ns, err := s.o.Store.Notes(ctx, session, notes.Query{Kind: notes.KindAttention})
	if err != nil {
		return
	}
	for _, n := range ns {
		if notes.OnceKey(n.Data) == key {
			s.remember(session, key, n.ID)
		}
	}
}

// Open returns the open firings across sessions, oldest first.
func (s *Service) Open(ctx context.Context) ([]notes.Note, error) {
	return s.o.Store.OpenNotes(ctx, notes.KindAttention)
}

// Ack clears an open firing by a person: its data records who (by) and
// when, and the note is removed at the session's last seq. An unknown or
// already cleared firing is core.CodeNotFound.
func (s *Service) Ack(ctx context.Context, id, by string) (notes.Note, error) {
	open, err := s.Open(ctx)
	if err != nil {
		return notes.Note{}, err
	}
	i := slices.IndexFunc(open, func(n notes.Note) bool { return n.ID == id })
	if i < 0 {
		return notes.Note{}, core.Errorf(core.CodeNotFound, "attention %s not found or already cleared", id)
	}
	n := open[i]
	var d notes.AttentionData
	if err := json.Unmarshal(n.Data, &d); err != nil {
		return notes.Note{}, fmt.Errorf("attention %s: data: %w", id, err)
	}
	d.ClearedAt, d.ClearedBy = s.o.Now().UnixMilli(), by
	data, err := json.Marshal(d)
	if err != nil {
		return notes.Note{}, err
	}
	if _, err := s.o.Store.PutNote(ctx, notes.Input{ID: id, Session: n.Session, Kind: notes.KindAttention, Author: n.Author, Data: data}); err != nil {
		return notes.Note{}, fmt.Errorf("acknowledge attention %s: %w", id, err)
	}
	out, err := s.o.Store.RemoveNote(ctx, n.Session, id)
	if err != nil {
		return notes.Note{}, fmt.Errorf("acknowledge attention %s: %w", id, err)
	}
	return out, nil
}

// Page returns the /rules page's model (never the webhook's secret).
func (s *Service) Page() views.RulesPage {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := views.RulesPage{File: s.o.File, LoadedAt: s.loadedAt.UnixMilli(), LoadError: s.loadErr}
	for _, r := range s.rules.Rules {
		l := s.last[r.Name]
		row := views.RuleRow{Name: r.Name, When: r.When, Detail: detail(r), Actions: r.Actions, Line: r.Line, Fired: l.n, LastSession: l.session, LastReason: l.reason}
		if !l.at.IsZero() {
			row.LastAt = l.at.UnixMilli()
		}
		p.Rules = append(p.Rules, row)
	}
	if s.rules.Webhook != nil {
		p.WebhookURL = s.rules.Webhook.URL
	}
	if h := s.hooks; h != nil {
		p.Dropped, p.Queued = h.Dropped(), h.Queued()
		for _, d := range h.Recent() {
			p.Deliveries = append(p.Deliveries, views.DeliveryRow{ID: d.ID, Rule: d.Rule, Session: d.Session, Attempts: d.Attempts, Status: d.Status, OK: d.OK, Error: d.Error, At: d.At.UnixMilli()})
		}
	}
	return p
}

// detail is a rule's parameters as one line.
func detail(r attention.Rule) string {
	var parts []string
	if r.For > 0 {
		parts = append(parts, "for "+r.For.String())
	}
	if len(r.Tools) > 0 {
		parts = append(parts, "tools "+strings.Join(r.Tools, ", "))
	}
	if r.Count > 0 {
		parts = append(parts, fmt.Sprintf("count %d", r.Count))
	}
	if r.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens per %s", r.Tokens, r.Per))
	}
	if r.USD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f per %s", r.USD, r.Per))
	}
	if r.Query != "" {
		parts = append(parts, "query "+r.Query)
	}
	return strings.Join(parts, " · ")
}
