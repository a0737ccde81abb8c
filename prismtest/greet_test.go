package prismtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"prism/core"
)

// The tool these tests and examples define, as a tool author would: greet
// answers "Hello, NAME!" and fails for "nobody" (a body error).

type greetArgs struct {
	Name string `json:"name"`
}

type greeting struct {
	Text string `json:"text"`
}

func greetTool() *core.Tool {
	return core.MustDefine(core.Definition[greetArgs, greeting]{
		Name:        "greet",
		Description: "Greet someone by name.",
		Parameters:  `{"name": {"type": "string", "required": true, "description": "Who to greet"}}`,
		Output: core.Output[greetArgs, greeting]{
			Schema: `{"type":"object","additionalProperties":false,"properties":{"text":{"type":"string","required":true}}}`,
			Render: func(_ greetArgs, v greeting) (core.Content, error) { return core.Text(v.Text), nil },
			PresentationMeta: func(_ greetArgs, v greeting) (any, error) {
				return map[string]int{"length": len(v.Text)}, nil
			},
		},
		Execute: func(_ context.Context, a greetArgs, _ *core.Run) (greeting, error) {
			if a.Name == "nobody" {
				return greeting{}, errors.New("there is nobody to greet")
			}
			return greeting{Text: "Hello, " + a.Name + "!"}, nil
		},
		PresentCall: func(a greetArgs) core.CallView { return &core.GenericCallView{Title: "Greet " + a.Name} },
		PresentResult: func(a greetArgs, r core.ToolResult) core.ResultView {
			title := "Greeted " + a.Name
			if r.IsError {
				title = "Could not greet " + a.Name
			}
			return &core.GenericResultView{Title: title, Content: r.Content}
		},
	})
}

// greetRegistry returns a registry holding greet.
func greetRegistry() *core.Registry {
	reg := core.NewRegistry(nil)
	reg.MustRegister(greetTool())
	return reg
}

// exampleT is the testing.TB the examples pass where a test passes its t:
// go test runs examples without one. It keeps temporary directories and
// cleanups until done, and a failure ends the example with a panic that
// names it. In a test, pass the test's t.
type exampleT struct {
	testing.TB // nil: a method prismtest does not call panics

	mu       sync.Mutex
	ctx      context.Context
	cancel   context.CancelFunc
	cleanups []func()
	failed   bool
}

func newExampleT() *exampleT {
	ctx, cancel := context.WithCancel(context.Background())
	return &exampleT{ctx: ctx, cancel: cancel}
}

func (t *exampleT) Helper()                  {}
func (t *exampleT) Name() string             { return "Example" }
func (t *exampleT) Context() context.Context { return t.ctx }
func (t *exampleT) Log(args ...any)          {}
func (t *exampleT) Logf(string, ...any)      {}
func (t *exampleT) Deadline() (time.Time, bool) {
	return time.Time{}, false
}

func (t *exampleT) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *exampleT) Errorf(format string, args ...any) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	fmt.Printf("FAIL: "+format+"\n", args...)
}

func (t *exampleT) Error(args ...any) { t.Errorf("%s", fmt.Sprint(args...)) }

func (t *exampleT) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("example failed: "+format, args...))
}

func (t *exampleT) Fatal(args ...any) { t.Fatalf("%s", fmt.Sprint(args...)) }

func (t *exampleT) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "prismtest-example-")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// done cancels the example's context and runs its cleanups, last first.
func (t *exampleT) done() {
	t.cancel()
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// squash collapses runs of white space, for printing a card's text.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
