package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"prism/core"
)

// WcArgs are the wc tool's arguments.
type WcArgs struct {
	Text string `json:"text"`
}

// WcValue is the wc tool's canonical value: the text's counts.
type WcValue struct {
	Lines int `json:"lines"`
	Words int `json:"words"`
	Chars int `json:"chars"`
}

func wcDefinition() core.Definition[WcArgs, WcValue] {
	return core.Definition[WcArgs, WcValue]{
		Name:        "wc",
		Description: "Count the lines, words and characters of a text.",
		Parameters:  `{"text": {"type": "string", "required": true, "description": "The text to count"}}`,
		Output: core.Output[WcArgs, WcValue]{
			Schema: `{"type": "object", "additionalProperties": false, "properties": {
				"lines": {"type": "integer", "required": true},
				"words": {"type": "integer", "required": true},
				"chars": {"type": "integer", "required": true}}}`,
			Render: func(_ WcArgs, v WcValue) (core.Content, error) {
				return core.Text(fmt.Sprintf("%d lines, %d words, %d characters", v.Lines, v.Words, v.Chars)), nil
			},
			PresentationMeta: func(_ WcArgs, v WcValue) (any, error) { return v, nil },
		},
		Execute: func(_ context.Context, a WcArgs, _ *core.Run) (WcValue, error) {
			return WcValue{Lines: strings.Count(a.Text, "\n") + 1, Words: len(strings.Fields(a.Text)), Chars: utf8.RuneCountInString(a.Text)}, nil
		},
		PresentCall: func(a WcArgs) core.CallView {
			return &core.GenericCallView{Title: "Count", Kind: core.KindOther}
		},
		PresentResult: func(_ WcArgs, r core.ToolResult) core.ResultView {
			var v WcValue
			if json.Unmarshal(r.Meta, &v) != nil {
				return nil
			}
			return &core.CountView{Title: "Counted", Lines: v.Lines, Words: v.Words, Chars: v.Chars}
		},
	}
}
