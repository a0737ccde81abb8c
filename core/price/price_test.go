package price

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in, wantErr string
	}{
		{`{"m": {"input": 0.27, "output": 1.1}}`, ""},
		{`{"m": {"input": 0.27, "output": 1.1, "cacheRead": 0.07}}`, ""},
		{`{}`, "names no model"},
		{`{"m": {"input": -1, "output": 1}}`, `model "m": input must be a number ≥ 0, got -1`},
		{`{"m": {"input": 1, "output": 1, "cached": 1}}`, `unknown field "cached"`},
		{`{"m": {"input": 1, "output": 1}} {}`, "trailing data"},
		{`{" ": {"input": 1, "output": 1}}`, "a model name is empty"},
		{`[1]`, "want {"},
		{`{"m": {"input": 1e400, "output": 1}}`, "want {"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.in))
		if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Parse(%s) = %v, want error containing %q", tt.in, err, tt.wantErr)
		}
	}
}

func TestCost(t *testing.T) {
	tab, err := Parse([]byte(`{"a": {"input": 2, "output": 10}, "b": {"input": 1, "output": 4, "cacheRead": 0.1}}`))
	if err != nil {
		t.Fatal(err)
	}
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-12 }
	if c, ok := tab.Cost("a", core.TokenUsage{InputTokens: 1_000_000, OutputTokens: 500_000}); !ok || !near(c, 2+5) {
		t.Errorf("Cost(a) = %v %v, want 7", c, ok)
	}
	// b: 600k uncached at 1, 400k cached at 0.1, 1M out at 4.
	if c, ok := tab.Cost("b", core.TokenUsage{InputTokens: 1_000_000, CacheReadTokens: 400_000, OutputTokens: 1_000_000}); !ok || !near(c, 0.6+0.04+4) {
		t.Errorf("Cost(b) = %v %v, want 4.64", c, ok)
	}
	if _, ok := tab.Cost("c", core.TokenUsage{InputTokens: 1}); ok {
		t.Error("an unpriced model has a cost")
	}
	total, complete := tab.Sum(map[string]core.TokenUsage{"a": {InputTokens: 1_000_000}, "c": {InputTokens: 5}})
	if !near(total, 2) || complete {
		t.Errorf("Sum with an unpriced model = %v %v, want 2, incomplete", total, complete)
	}
	for usd, want := range map[float64]string{0: "$0", 0.00001: "<$0.0001", 0.01234: "$0.0123", 12.345: "$12.35"} {
		if got := Format(usd); got != want {
			t.Errorf("Format(%v) = %q, want %q", usd, got, want)
		}
	}
}

func TestLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(p, []byte(`{"m": {"input": 1, "output": "x"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("Load of a bad file = %v, want an error naming it", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"m": {"input": 0.27, "output": 1.1, "cacheRead": 0.07}}`))
	f.Add([]byte(`{"m": {"input": -0, "output": 1e308}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := Parse(data)
		if err != nil {
			return
		}
		for m := range tab {
			c, ok := tab.Cost(m, core.TokenUsage{InputTokens: 1 << 40, OutputTokens: 1 << 40, CacheReadTokens: 1 << 39})
			if !ok || math.IsNaN(c) || c < 0 {
				t.Fatalf("Cost(%q) = %v %v for a parsed table", m, c, ok)
			}
		}
	})
}
