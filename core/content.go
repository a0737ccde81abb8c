package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Content block types.
const (
	BlockText       = "text"
	BlockReasoning  = "reasoning"
	BlockImage      = "image"
	BlockToolCall   = "tool-call"
	BlockToolResult = "tool-result"
)

// ContentBlock is one block of message or tool-result content: *TextBlock,
// *ReasoningBlock, *ImageBlock, *ToolCallBlock, *ToolResultBlock, or
// *UnknownBlock for a type prism does not know (kept verbatim, never dropped).
type ContentBlock interface {
	// BlockType returns the block's "type" discriminant.
	BlockType() string
	isContentBlock()
}

// TextBlock is plain text.
type TextBlock struct {
	Text string `json:"text"`
}

// ReasoningBlock is model reasoning text.
type ReasoningBlock struct {
	Text string `json:"text"`
}

// ImageBlock references an image held in an attachment store; tool results
// never embed image bytes.
type ImageBlock struct {
	Attachment ImageAttachmentRef `json:"attachment"`
}

// ImageAttachmentRef identifies an attachment and describes its image.
type ImageAttachmentRef struct {
	AttachmentID       string          `json:"attachmentId"`
	MediaType          string          `json:"mediaType"`
	Bytes              int64           `json:"bytes"`
	Width              int             `json:"width"`
	Height             int             `json:"height"`
	Name               string          `json:"name,omitempty"`
	OriginalDimensions *ImageDimension `json:"originalDimensions,omitempty"`
}

// ImageDimension is a width and height in pixels.
type ImageDimension struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// ToolCallBlock is one tool invocation requested by the model, with its raw
// argument string exactly as the model produced it.
type ToolCallBlock struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolResultBlock carries a tool's model-facing result inside a
// ToolResultMessage.
type ToolResultBlock struct {
	ToolCallID string  `json:"toolCallId"`
	Content    Content `json:"content"`
	IsError    bool    `json:"isError"`
}

// UnknownBlock is a block of a type prism does not know; Raw is the whole
// block's JSON, kept verbatim.
type UnknownBlock struct {
	Type string
	Raw  json.RawMessage
}

// BlockType implements ContentBlock.
func (*TextBlock) BlockType() string { return BlockText }

// BlockType implements ContentBlock.
func (*ReasoningBlock) BlockType() string { return BlockReasoning }

// BlockType implements ContentBlock.
func (*ImageBlock) BlockType() string { return BlockImage }

// BlockType implements ContentBlock.
func (*ToolCallBlock) BlockType() string { return BlockToolCall }

// BlockType implements ContentBlock.
func (*ToolResultBlock) BlockType() string { return BlockToolResult }

// BlockType implements ContentBlock.
func (b *UnknownBlock) BlockType() string { return b.Type }

func (*TextBlock) isContentBlock()       {}
func (*ReasoningBlock) isContentBlock()  {}
func (*ImageBlock) isContentBlock()      {}
func (*ToolCallBlock) isContentBlock()   {}
func (*ToolResultBlock) isContentBlock() {}
func (*UnknownBlock) isContentBlock()    {}

// MarshalJSON writes {"type":"text","text":…}.
func (b *TextBlock) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	err := appendTextJSON(&buf, BlockText, b.Text)
	return buf.Bytes(), err
}

// MarshalJSON writes {"type":"reasoning","text":…}.
func (b *ReasoningBlock) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	err := appendTextJSON(&buf, BlockReasoning, b.Text)
	return buf.Bytes(), err
}

// MarshalJSON writes {"type":"image","attachment":…}.
func (b *ImageBlock) MarshalJSON() ([]byte, error) {
	type plain ImageBlock
	return marshalTagged(BlockImage, (*plain)(b))
}

// MarshalJSON writes {"type":"tool-call","id":…,"name":…,"arguments":…}.
func (b *ToolCallBlock) MarshalJSON() ([]byte, error) {
	type plain ToolCallBlock
	return marshalTagged(BlockToolCall, (*plain)(b))
}

// MarshalJSON writes {"type":"tool-result","toolCallId":…,"content":[…],"isError":…}.
func (b *ToolResultBlock) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	err := b.appendJSON(&buf)
	return buf.Bytes(), err
}

// appendJSON writes what MarshalJSON returns into buf.
func (b *ToolResultBlock) appendJSON(buf *bytes.Buffer) error {
	buf.WriteString(`{"type":"` + BlockToolResult + `","toolCallId":`)
	if err := appendJSONString(buf, b.ToolCallID); err != nil {
		return err
	}
	buf.WriteString(`,"content":`)
	if err := b.Content.appendJSON(buf); err != nil {
		return err
	}
	if b.IsError {
		buf.WriteString(`,"isError":true}`)
	} else {
		buf.WriteString(`,"isError":false}`)
	}
	return nil
}

// appendTextJSON writes {"type":tag,"text":text}: the JSON of a text or
// reasoning block, written straight into buf — a tool's output is most of
// an event's bytes, and each layer of encoding/json Marshalers would copy
// and re-check it.
func appendTextJSON(buf *bytes.Buffer, tag, text string) error {
	buf.WriteString(`{"type":"` + tag + `","text":`)
	if err := appendJSONString(buf, text); err != nil {
		return err
	}
	buf.WriteByte('}')
	return nil
}

// appendJSONString writes s as encoding/json writes a string without HTML
// escaping (MarshalNoEscape's form), straight into buf: '"', '\\' and
// control bytes escaped (\b \f \n \r \t by name, the rest as \u00XX),
// each invalid UTF-8 byte as \ufffd, U+2028 and U+2029 as \u2028 and
// \u2029, everything else as it is. Tests hold it to encoding/json's
// output (TestAppendJSONStringMatchesEncodingJSON, FuzzAppendJSONString).
// It never fails; the error keeps the writers' signatures uniform.
func appendJSONString(buf *bytes.Buffer, s string) error {
	const hex = "0123456789abcdef"
	buf.Grow(len(s) + 2)
	buf.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf.WriteString(s[start:i])
			switch c {
			case '"', '\\':
				buf.WriteByte('\\')
				buf.WriteByte(c)
			case '\b':
				buf.WriteString(`\b`)
			case '\f':
				buf.WriteString(`\f`)
			case '\n':
				buf.WriteString(`\n`)
			case '\r':
				buf.WriteString(`\r`)
			case '\t':
				buf.WriteString(`\t`)
			default:
				buf.WriteString(`\u00`)
				buf.WriteByte(hex[c>>4])
				buf.WriteByte(hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			buf.WriteString(s[start:i])
			buf.WriteString(`\ufffd`)
		case r == '\u2028' || r == '\u2029':
			buf.WriteString(s[start:i])
			buf.WriteString(`\u202`)
			buf.WriteByte(hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	buf.WriteString(s[start:])
	buf.WriteByte('"')
	return nil
}

// MarshalJSON writes the block's original JSON.
func (b *UnknownBlock) MarshalJSON() ([]byte, error) { return b.Raw, nil }

// marshalTagged writes {"type":tag, …fields of v}.
func marshalTagged(tag string, v any) ([]byte, error) { return marshalKeyed("type", tag, v) }

// Content is an ordered list of content blocks. Its JSON form is an array of
// type-tagged objects; unknown types decode to *UnknownBlock.
type Content []ContentBlock

// Text returns a content of one text block.
func Text(s string) Content { return Content{&TextBlock{Text: s}} }

// MarshalJSON writes the blocks as a JSON array ([] for nil).
func (c Content) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	err := c.appendJSON(&buf)
	return buf.Bytes(), err
}

// appendJSON writes what MarshalJSON returns into buf. Text, reasoning and
// tool-result blocks write their compact JSON straight in; any other block
// goes through MarshalNoEscape (which checks and compacts what it writes,
// an UnknownBlock's raw JSON included).
func (c Content) appendJSON(buf *bytes.Buffer) error {
	buf.WriteByte('[')
	for i, b := range c {
		if i > 0 {
			buf.WriteByte(',')
		}
		if b == nil {
			return fmt.Errorf("content block %d is nil", i)
		}
		var err error
		switch x := b.(type) {
		case *TextBlock:
			if x == nil {
				buf.WriteString("null")
				continue
			}
			err = appendTextJSON(buf, BlockText, x.Text)
		case *ReasoningBlock:
			if x == nil {
				buf.WriteString("null")
				continue
			}
			err = appendTextJSON(buf, BlockReasoning, x.Text)
		case *ToolResultBlock:
			if x == nil {
				buf.WriteString("null")
				continue
			}
			err = x.appendJSON(buf)
		default:
			var data []byte
			if data, err = MarshalNoEscape(b); err == nil {
				buf.Write(data)
			}
		}
		if err != nil {
			return fmt.Errorf("content block %d: %w", i, err)
		}
	}
	buf.WriteByte(']')
	return nil
}

// UnmarshalJSON decodes an array of type-tagged blocks.
func (c *Content) UnmarshalJSON(data []byte) error {
	if out, ok := decodeKnownBlocks(data); ok {
		*c = out
		return nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return fmt.Errorf("content: %w", err)
	}
	out := make(Content, 0, len(raws))
	for i, raw := range raws {
		b, err := DecodeBlock(raw)
		if err != nil {
			return fmt.Errorf("content block %d: %w", i, err)
		}
		out = append(out, b)
	}
	*c = out
	return nil
}

// anyBlock holds the fields of every known block type, so an array of
// blocks decodes in one pass instead of one per block and field set.
type anyBlock struct {
	Type       *string             `json:"type"`
	Text       string              `json:"text"`
	Attachment *ImageAttachmentRef `json:"attachment"`
	ID         string              `json:"id"`
	Name       string              `json:"name"`
	Arguments  string              `json:"arguments"`
	ToolCallID string              `json:"toolCallId"`
	Content    Content             `json:"content"` // absent: nil; null: empty, as ToolResultBlock
	IsError    bool                `json:"isError"`
}

// decodeKnownBlocks decodes an array of blocks of known types in one pass.
// ok is false when that cannot give what DecodeBlock gives block by block —
// an unknown type (whose raw JSON is kept), a missing type, a field of
// another block type that does not fit — and the caller decodes block by
// block instead.
func decodeKnownBlocks(data []byte) (Content, bool) {
	var blocks []anyBlock
	if json.Unmarshal(data, &blocks) != nil || blocks == nil {
		return nil, false
	}
	out := make(Content, len(blocks))
	for i := range blocks {
		a := &blocks[i]
		if a.Type == nil {
			return nil, false
		}
		switch *a.Type {
		case BlockText:
			out[i] = &TextBlock{Text: a.Text}
		case BlockReasoning:
			out[i] = &ReasoningBlock{Text: a.Text}
		case BlockImage:
			b := &ImageBlock{}
			if a.Attachment != nil {
				b.Attachment = *a.Attachment
			}
			out[i] = b
		case BlockToolCall:
			out[i] = &ToolCallBlock{ID: a.ID, Name: a.Name, Arguments: a.Arguments}
		case BlockToolResult:
			out[i] = &ToolResultBlock{ToolCallID: a.ToolCallID, Content: a.Content, IsError: a.IsError}
		default:
			return nil, false
		}
	}
	return out, true
}

// DecodeBlock decodes one type-tagged content block. A block of an unknown
// type is returned as *UnknownBlock holding the raw JSON.
func DecodeBlock(raw json.RawMessage) (ContentBlock, error) {
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	if head.Type == nil {
		return nil, fmt.Errorf(`block has no "type"`)
	}
	var b ContentBlock
	switch *head.Type {
	case BlockText:
		b = new(TextBlock)
	case BlockReasoning:
		b = new(ReasoningBlock)
	case BlockImage:
		b = new(ImageBlock)
	case BlockToolCall:
		b = new(ToolCallBlock)
	case BlockToolResult:
		b = new(ToolResultBlock)
	default:
		return &UnknownBlock{Type: *head.Type, Raw: append(json.RawMessage(nil), raw...)}, nil
	}
	if err := json.Unmarshal(raw, b); err != nil {
		return nil, fmt.Errorf("%s block: %w", *head.Type, err)
	}
	return b, nil
}

// PlainText joins the text of c the way dsh's web client flattens a result:
// text blocks verbatim, any other block as indented JSON, joined by "\n".
func (c Content) PlainText() string {
	var sb strings.Builder
	for i, b := range c {
		if i > 0 {
			sb.WriteByte('\n')
		}
		switch x := b.(type) {
		case *TextBlock:
			sb.WriteString(x.Text)
		default:
			data, err := json.MarshalIndent(b, "", "  ")
			if err != nil {
				sb.WriteString("[" + b.BlockType() + " content]")
				continue
			}
			sb.Write(data)
		}
	}
	return sb.String()
}
