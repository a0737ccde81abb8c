package agenttest_test

import (
	"strings"
	"testing"

	"prism/core"
	"prism/core/agent/agenttest"
)

// TestDemoLog: the demo log is complete, valid, the same on every call,
// and free of the temporary workspace path.
func TestDemoLog(t *testing.T) {
	h, a := agenttest.DemoLog(t, 1000)
	_, b := agenttest.DemoLog(t, 1000)
	if h.Cwd != agenttest.DemoWorkspace || h.CreatedAt != 1000 {
		t.Errorf("header %+v", h)
	}
	if err := core.ValidateLog(h, a); err != nil {
		t.Fatal(err)
	}
	if len(a) < 50 || a[len(a)-1].Type != core.EventTurnEnd {
		t.Fatalf("%d events, last %s", len(a), a[len(a)-1].Type)
	}
	for i := range a {
		if string(a[i].Data) != string(b[i].Data) || a[i].Time != 1000+10*a[i].Seq {
			t.Fatalf("event %d differs between calls or has time %d", i, a[i].Time)
		}
		if strings.Contains(string(a[i].Data), "prism-demo-") {
			t.Fatalf("event %d keeps the temporary workspace: %.200s", i, a[i].Data)
		}
	}
	a[0].Data[0] = 'x'
	if _, c := agenttest.DemoLog(t, 1000); c[0].Data[0] == 'x' {
		t.Error("DemoLog hands out shared data")
	}
}
