package prismtest

import (
	"context"
	"sync"
	"testing"

	"prism/core"
)

// Gate holds the calls of one tool before their body runs, so a test sees
// their pending card live — on a stream, on a page — before it lets them
// complete. Build it with Hold.
type Gate struct {
	tool    string
	release chan struct{}
	once    sync.Once
	held    chan string // call ids as they reach the gate
}

// Hold installs, on reg, execute middleware that makes every call of tool
// wait at the gate once its tool/call is logged and its arguments are
// accepted, until Release (or the turn is cancelled). Install it on a
// registry of your own test: middleware cannot be removed. The gate is
// released when the test ends.
func Hold(t testing.TB, reg *core.Registry, tool string) *Gate {
	g := &Gate{tool: tool, release: make(chan struct{}), held: make(chan string, 64)}
	reg.UseExecute(func(ctx context.Context, exec *core.Execution, next func(context.Context) core.Result) (core.Result, error) {
		if exec.Name != g.tool {
			return next(ctx), nil
		}
		select {
		case g.held <- exec.CallID:
		default:
		}
		select {
		case <-g.release:
		case <-ctx.Done():
		}
		return next(ctx), nil
	})
	t.Cleanup(g.Release)
	return g
}

// Held returns the ids of the calls as they reach the gate (the first 64
// are kept): a test can wait for a call to be running before it looks.
func (g *Gate) Held() <-chan string { return g.held }

// Release lets every held call, and every later one, run.
func (g *Gate) Release() { g.once.Do(func() { close(g.release) }) }
