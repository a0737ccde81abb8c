package core

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// ReservedToolName is dsh's Code Mode transport name; no tool may take it.
const ReservedToolName = "run_code"

// Registry holds tools and the hooks of the execution pipeline. It is safe
// for concurrent use; registration may happen while calls run (a running
// call keeps the hooks it started with).
type Registry struct {
	logger *slog.Logger

	mu        sync.RWMutex
	tools     map[string]*Tool
	order     []string
	pre       []PreExecuteHook
	wrap      []ExecuteHook
	post      []PostExecuteHook
	guards    []Guard
	observers []ResultObserver
	approver  Approver
}

// NewRegistry returns an empty registry that logs contained failures
// (panicking observers) to logger; a nil logger discards them.
func NewRegistry(logger *slog.Logger) *Registry {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Registry{logger: logger, tools: make(map[string]*Tool)}
}

// Register adds tools. A duplicate or reserved name is refused and nothing
// of that call is registered.
func (r *Registry) Register(tools ...*Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, t := range tools {
		switch {
		case t == nil:
			return fmt.Errorf("register: nil tool")
		case t.name == ReservedToolName:
			return fmt.Errorf("tool name %q is reserved for the Code Mode presentation transport and cannot be registered or shadowed", ReservedToolName)
		case r.tools[t.name] != nil || seen[t.name]:
			return fmt.Errorf("tool %q is already registered", t.name)
		}
		seen[t.name] = true
	}
	for _, t := range tools {
		r.tools[t.name] = t
		r.order = append(r.order, t.name)
	}
	return nil
}

// MustRegister is Register that panics, for wiring fixed tool sets.
func (r *Registry) MustRegister(tools ...*Tool) {
	if err := r.Register(tools...); err != nil {
		panic(err)
	}
}

// Get returns the tool registered under name.
func (r *Registry) Get(name string) (*Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// Schemas returns the model-visible schemas of every tool in registration
// order — the only part of a tool the model sees.
func (r *Registry) Schemas() []ToolSchema {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]ToolSchema, 0, len(r.order))
	for _, name := range r.order {
		out = append(out, r.tools[name].Schema())
	}
	return out
}

// UsePreExecute adds pre-execute middleware; the first added is outermost.
func (r *Registry) UsePreExecute(h PreExecuteHook) { r.mutate(func() { r.pre = appendCopy(r.pre, h) }) }

// UseExecute adds around-dispatch middleware; the first added is outermost.
func (r *Registry) UseExecute(h ExecuteHook) { r.mutate(func() { r.wrap = appendCopy(r.wrap, h) }) }

// UsePostExecute adds post-execute middleware; the first added is outermost.
func (r *Registry) UsePostExecute(h PostExecuteHook) {
	r.mutate(func() { r.post = appendCopy(r.post, h) })
}

// AddGuard adds a monotonic guard; guards run in the order added and the
// first denial wins.
func (r *Registry) AddGuard(g Guard) { r.mutate(func() { r.guards = appendCopy(r.guards, g) }) }

// OnResult adds an observer of final results.
func (r *Registry) OnResult(o ResultObserver) {
	r.mutate(func() { r.observers = appendCopy(r.observers, o) })
}

// SetApprover installs the service that answers "ask" decisions.
func (r *Registry) SetApprover(a Approver) { r.mutate(func() { r.approver = a }) }

func (r *Registry) mutate(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

// appendCopy appends without sharing the backing array, so a snapshot taken
// by a running call never sees later registrations.
func appendCopy[T any](s []T, v T) []T {
	return append(slices.Clip(s), v)
}

// hooks is an immutable snapshot of the pipeline's middleware.
type hooks struct {
	pre       []PreExecuteHook
	wrap      []ExecuteHook
	post      []PostExecuteHook
	guards    []Guard
	observers []ResultObserver
	approver  Approver
}

// snapshot returns the hooks a call starts with and the FinalizeContent of
// the tool it names (nil when there is none, or no such tool).
func (r *Registry) snapshot(name string) (hooks, FinalizeFunc) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var finalize FinalizeFunc
	if t := r.tools[name]; t != nil {
		finalize = t.finalize
	}
	return hooks{r.pre, r.wrap, r.post, r.guards, r.observers, r.approver}, finalize
}

// Mode is a call's scheduling mode.
type Mode int

// Scheduling modes: parallel calls may overlap; an exclusive call runs alone
// and is an ordering barrier.
const (
	Exclusive Mode = iota
	Parallel
)

// ExecutionMode classifies a call: Parallel only when its tool's
// IsConcurrencySafe returns true for valid arguments; unknown tools,
// invalid arguments and panics are Exclusive.
func (r *Registry) ExecutionMode(name string, args any) Mode {
	t, ok := r.Get(name)
	if !ok || !t.impl.concurrencySafe(args) {
		return Exclusive
	}
	return Parallel
}

// PresentCall returns the pending card's view for a logged call. It never
// fails: an unknown tool, invalid arguments, a missing, panicking or invalid
// presenter all give the generic view (title = tool name, the arguments as
// input).
func (r *Registry) PresentCall(name, rawArgs string) CallView {
	tree := ParseArguments(rawArgs)
	if t, ok := r.Get(name); ok {
		if v := t.impl.presentCall(tree); v != nil && v.Validate() == nil {
			return v
		}
	}
	// The generic card shows the parsed arguments when they are lossless
	// JSON; arguments that parse only lossily (a number overflowing to
	// ±Inf, like 1e400) are shown as the raw text the model sent.
	v := &GenericCallView{Title: name, RawInput: tree}
	if v.Validate() != nil {
		v.RawInput = rawArgs
	}
	return v
}

// PresentResult returns the completed card's view from a logged call and its
// durable result. It never fails: without a valid tool view it returns the
// generic view of the raw content (keeping the pending title).
func (r *Registry) PresentResult(name, rawArgs string, res ToolResult) ResultView {
	if t, ok := r.Get(name); ok {
		if v := t.impl.presentResult(ParseArguments(rawArgs), res); v != nil && v.Validate() == nil {
			return v
		}
	}
	return &GenericResultView{Content: res.Content}
}

// Subset returns a registry holding only the named tools of r (in r's
// order) with r's hooks, guards, observers and approver as they are now
// (a subagent limited to some of its parent's tools). A name r does not
// hold is an error naming it; no names gives an empty registry.
func (r *Registry) Subset(names []string) (*Registry, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	want := map[string]bool{}
	for _, n := range names {
		if r.tools[n] == nil {
			return nil, fmt.Errorf("tool %q is not one of the available tools (%s)", n, strings.Join(r.order, ", "))
		}
		want[n] = true
	}
	s := &Registry{logger: r.logger, tools: map[string]*Tool{}, pre: r.pre, wrap: r.wrap, post: r.post,
		guards: r.guards, observers: r.observers, approver: r.approver}
	for _, n := range r.order {
		if want[n] {
			s.tools[n] = r.tools[n]
			s.order = append(s.order, n)
		}
	}
	return s, nil
}
