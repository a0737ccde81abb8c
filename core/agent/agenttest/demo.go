// Package agenttest gives tests the log of prism's scripted demo, played
// through the real agent loop and tools. It is for tests only; production
// code never imports it (TestImportDirections holds that).
package agenttest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"prism/core"
	"prism/core/agent"
	"prism/core/model"
	"prism/core/tools"
)

// DemoWorkspace replaces the demo's temporary workspace path in DemoLog.
const DemoWorkspace = "/work/demo"

// DemoPrompt is the prompt DemoLog starts the demo with (the server's).
const DemoPrompt = model.DemoPrompt

var demo struct {
	once   sync.Once
	header core.SessionHeader
	events []core.Event
	err    error
}

// DemoLog returns the header and log of prism's scripted demo session
// (model.NewDemo without pacing) played through the real agent loop and the
// built-in tools, bash included, in a freshly seeded workspace: the session
// a newcomer sees on an empty database, every card kind and failure class
// in it. The log is the same on every run: event times are t0 plus 10 ms a
// seq, the header's CreatedAt is t0, the workspace path is DemoWorkspace,
// session and message ids are 00000000-0000-4000-8000-00000000000N, call ids
// call_demo_N, and each step's token usage is fixed. The demo is played once per test binary; each call gets
// its own copy.
func DemoLog(tb testing.TB, t0 int64) (core.SessionHeader, []core.Event) {
	tb.Helper()
	demo.once.Do(func() { demo.header, demo.events, demo.err = play() })
	if demo.err != nil {
		tb.Fatalf("play the demo: %v", demo.err)
	}
	h := demo.header
	h.CreatedAt = t0
	events := make([]core.Event, len(demo.events))
	for i, e := range demo.events {
		e.Time = t0 + 10*e.Seq
		e.Data = append([]byte(nil), e.Data...)
		events[i] = e
	}
	return h, events
}

func play() (core.SessionHeader, []core.Event, error) {
	builtins, err := tools.Builtins(tools.Options{AllowBash: true})
	if err != nil {
		return core.SessionHeader{}, nil, err
	}
	log := slog.New(slog.DiscardHandler)
	reg := core.NewRegistry(log)
	if err := reg.Register(builtins...); err != nil {
		return core.SessionHeader{}, nil, err
	}
	root, err := os.MkdirTemp("", "prism-demo-")
	if err != nil {
		return core.SessionHeader{}, nil, err
	}
	defer os.RemoveAll(root)
	ended := make(chan string, 64) // the sessions whose turn ended: the demo's and its subagent's
	r, err := agent.NewRunner(agent.RunnerConfig{
		Tools:         reg,
		WorkspaceRoot: root,
		Models:        demoModels{},
		Logger:        log,
		OnEvent: func(id string, e core.Event) {
			if e.Type == core.EventTurnEnd {
				select {
				case ended <- id:
				default:
				}
			}
		},
	})
	if err != nil {
		return core.SessionHeader{}, nil, err
	}
	defer r.Close()
	if err := reg.Register(r.SubagentTool()); err != nil {
		return core.SessionHeader{}, nil, err
	}
	ctx := context.Background()
	id, err := r.Start(ctx, agent.StartRequest{Prompt: DemoPrompt, Model: model.DemoModelName})
	if err != nil {
		return core.SessionHeader{}, nil, err
	}
	timeout := time.After(2 * time.Minute) // a failure guard, not synchronization
	for done := false; !done; {
		select {
		case s := <-ended:
			done = s == id
		case <-timeout:
			return core.SessionHeader{}, nil, context.DeadlineExceeded
		}
	}
	s, err := r.Session(id)
	if err != nil {
		return core.SessionHeader{}, nil, err
	}
	st, err := r.Status(id)
	if err != nil {
		return core.SessionHeader{}, nil, err
	}
	h := s.Header()
	events := slices.Clone(s.Events()) // the session's own log is read-only
	// The workspace path appears in the header, the system prompt and
	// the file tools' results; JSON writes it unescaped (no quote,
	// backslash or control character in a temp path).
	paths := [][]byte{[]byte(st.Workspace)}
	if real, err := filepath.EvalSymlinks(st.Workspace); err == nil && real != st.Workspace {
		paths = append(paths, []byte(real))
	}
	ids := map[string]string{}
	stable := func(id []byte) []byte {
		s, ok := ids[string(id)]
		if !ok {
			s = fmt.Sprintf("00000000-0000-4000-8000-%012d", len(ids)+1)
			ids[string(id)] = s
		}
		return []byte(s)
	}
	h.ID = string(stable([]byte(h.ID)))
	for i := range events {
		d := events[i].Data
		for _, p := range paths {
			d = bytes.ReplaceAll(d, p, []byte(DemoWorkspace))
		}
		// Message and session ids (random UUIDs) become stable ones.
		events[i].Data = uuidRE.ReplaceAllFunc(d, stable)
	}
	h.Cwd = DemoWorkspace
	return h, events, nil
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// demoModels serves the demo model (model.DemoScript in its seeded
// workspace) with what would vary between runs fixed: call ids
// call_demo_N, and each step's usage (the scripted model would estimate it
// from the request, which holds the temporary workspace path).
type demoModels struct{}

func (demoModels) New(string) (model.Model, error) {
	script := model.DemoScript()
	n := 0
	for i := range script.Steps {
		st := &script.Steps[i]
		st.Usage = &core.TokenUsage{InputTokens: int64(1200 + 250*i), OutputTokens: int64(60 + 10*i)}
		for j := range st.Calls {
			n++
			st.Calls[j].ID = fmt.Sprintf("call_demo_%d", n)
		}
	}
	return &model.Demo{Scripted: model.NewScripted(model.ScriptedConfig{Script: script, Provider: "scripted", Model: "demo"})}, nil
}

func (demoModels) Default() string { return model.DemoModelName }
