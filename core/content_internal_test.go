package core

import (
	"bytes"
	"testing"
)

// oldBlockJSON is how blocks were encoded before they wrote their own JSON:
// through marshalTagged and MarshalNoEscape at every level. It is the
// oracle the direct writers must match byte for byte (the log's bytes).
func oldBlockJSON(b ContentBlock) ([]byte, error) {
	switch x := b.(type) {
	case *TextBlock:
		return marshalTagged(BlockText, struct {
			Text string `json:"text"`
		}{x.Text})
	case *ReasoningBlock:
		return marshalTagged(BlockReasoning, struct {
			Text string `json:"text"`
		}{x.Text})
	case *ToolResultBlock:
		inner, err := oldContentJSON(x.Content)
		if err != nil {
			return nil, err
		}
		return marshalTagged(BlockToolResult, struct {
			ToolCallID string   `json:"toolCallId"`
			Content    rawValue `json:"content"`
			IsError    bool     `json:"isError"`
		}{x.ToolCallID, rawValue(inner), x.IsError})
	}
	return MarshalNoEscape(b)
}

type rawValue []byte

func (r rawValue) MarshalJSON() ([]byte, error) { return r, nil }

func oldContentJSON(c Content) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, b := range c {
		if i > 0 {
			buf.WriteByte(',')
		}
		data, err := oldBlockJSON(b)
		if err != nil {
			return nil, err
		}
		buf.Write(data)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

// FuzzContentJSON: content writes exactly the bytes encoding/json wrote
// through the tagged-struct path — escapes, invalid UTF-8, U+2028, HTML
// characters left unescaped, nested tool results, unknown blocks.
func FuzzContentJSON(f *testing.F) {
	f.Add("plain", "id-1", true, []byte(`{"type":"x","a" : 1}`))
	f.Add("<a href=\"x\">&amp;</a>\n\t\x00\x1f\u2028\u2029\xff\xfe é", "\"\\", false, []byte(`{"type":"y"}`))
	f.Fuzz(func(t *testing.T, text, id string, isError bool, raw []byte) {
		c := Content{
			&TextBlock{Text: text},
			&ReasoningBlock{Text: id + text},
			&ToolResultBlock{ToolCallID: id, Content: Content{&TextBlock{Text: text}, &ToolResultBlock{ToolCallID: text}}, IsError: isError},
			&ToolResultBlock{ToolCallID: id},
			&ToolCallBlock{ID: id, Name: text, Arguments: text},
		}
		if CheckJSON(raw) == nil && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			c = append(c, &UnknownBlock{Type: "u", Raw: raw})
		}
		got, err := c.MarshalJSON()
		want, werr := oldContentJSON(c)
		if (err == nil) != (werr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("direct %q (%v)\nold    %q (%v)", got, err, want, werr)
		}
		snap, err := Snapshot(c)
		if err != nil || !bytes.Equal(snap, want) {
			t.Fatalf("Snapshot %q (%v), want %q", snap, err, want)
		}
	})
}
