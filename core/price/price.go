// Package price is a table of model prices, per million tokens, and the cost
// of token usage under it (prism serve --prices FILE).
//
// The file is JSON: model name → {"input": USD, "output": USD} per 1M
// tokens, optionally "cacheRead" (input tokens read from the provider's
// cache, billed instead of "input" for those tokens):
//
//	{"deepseek-chat": {"input": 0.27, "output": 1.10, "cacheRead": 0.07}}
//
// A model missing from the table has no cost (not zero): pages then say
// the cost is unknown for it rather than show a wrong sum.
package price

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"prism/core"
)

// Price is one model's price in USD per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	// CacheRead prices input tokens served from the cache; nil bills them
	// as Input.
	CacheRead *float64 `json:"cacheRead,omitempty"`
}

// Table maps model names to prices. The nil Table prices nothing.
type Table map[string]Price

// Load reads a price table file.
func Load(path string) (Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("price table %s: %w", path, err)
	}
	return t, nil
}

// Parse reads a price table; every field must be known, every price a
// finite number ≥ 0, and the table must name at least one model.
func Parse(data []byte) (Table, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var t Table
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("want {\"MODEL\": {\"input\": USD per 1M tokens, \"output\": USD per 1M tokens}, …}: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the table")
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("the table names no model")
	}
	names := make([]string, 0, len(t))
	for name := range t {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := t[name]
		if strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("a model name is empty")
		}
		check := func(field string, v float64) error {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fmt.Errorf("model %q: %s must be a number ≥ 0, got %v", name, field, v)
			}
			return nil
		}
		if err := check("input", p.Input); err != nil {
			return nil, err
		}
		if err := check("output", p.Output); err != nil {
			return nil, err
		}
		if p.CacheRead != nil {
			if err := check("cacheRead", *p.CacheRead); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// Cost is the price of u on model in USD, and whether the table prices the
// model.
func (t Table) Cost(model string, u core.TokenUsage) (float64, bool) {
	p, ok := t[model]
	if !ok {
		return 0, false
	}
	in := float64(u.InputTokens)
	cost := float64(u.OutputTokens) * p.Output
	if p.CacheRead != nil && u.CacheReadTokens > 0 && u.CacheReadTokens <= u.InputTokens {
		cached := float64(u.CacheReadTokens)
		cost += (in-cached)*p.Input + cached**p.CacheRead
	} else {
		cost += in * p.Input
	}
	return cost / 1e6, true
}

// Sum is the cost of usage per model: the total over the priced models,
// and whether every model with usage was priced.
func (t Table) Sum(byModel map[string]core.TokenUsage) (total float64, complete bool) {
	complete = true
	for model, u := range byModel {
		c, ok := t.Cost(model, u)
		if !ok {
			complete = false
			continue
		}
		total += c
	}
	return total, complete
}

// Format writes a cost for people: "$0.0123", "$1.23", "<$0.0001".
func Format(usd float64) string {
	switch {
	case usd == 0:
		return "$0"
	case usd < 0.0001:
		return "<$0.0001"
	case usd < 1:
		return fmt.Sprintf("$%.4f", usd)
	}
	return fmt.Sprintf("$%.2f", usd)
}
