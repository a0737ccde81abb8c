package core

// EventTexts are the words of an appended event as a decode of its data
// would give them (invalid UTF-8 already U+FFFD): what a search index
// files. A Session computes them from the appended value and hands them to
// a CheckedStore inside the event's facts (EventFacts.Texts), so the index
// does not decode the data again.
type EventTexts struct {
	// Blocks are the message's content: user/message, assistant/message
	// and tool/result.
	Blocks []TextsBlock
	// SourceKind is a user/message's source kind.
	SourceKind string
	// CallID, Name and Arguments are a tool/call's.
	CallID, Name, Arguments string
	// ResultCallID is a tool/result's message source call id.
	ResultCallID string
	// Error is a tool/result's error (nil: none).
	Error *ErrorInfo
	// Title is a session/title's.
	Title string
	// Failure is the model failure of a turn/end that ended in error.
	Failure *LLMFailure
}

// TextsBlock is one content block as EventTexts keep it: its type, the
// text of a text or reasoning block, and a tool-result block's isError
// and blocks.
// Its JSON names are the blocks' own, so an encoded block decodes into it.
type TextsBlock struct {
	Type    string       `json:"type"`
	Text    string       `json:"text"`
	IsError bool         `json:"isError"`
	Content []TextsBlock `json:"content"`
}

// Texts returns the event's words when the session knew them from the
// appended value, nil otherwise (the data must then be decoded).
func (f *EventFacts) Texts() *EventTexts { return f.texts }

// WithTexts returns f holding t as its event's words (Texts): a caller
// that decoded them itself (an import, core/search.DecodeTexts) hands them
// to the search index with the facts, so the data is not decoded again.
func (f EventFacts) WithTexts(t *EventTexts) EventFacts {
	f.texts = t
	return f
}

// appendedTexts returns the texts of appended data d (the pointer forms
// appendedFacts switches on), or nil when only the encoding can tell (a
// block whose JSON is its own raw bytes, a nil block).
func appendedTexts(d any) *EventTexts {
	switch d := d.(type) {
	case *TurnEnd:
		t := &EventTexts{}
		if e := d.Reason.Error; e != nil {
			t.Failure = &LLMFailure{Message: jsonText(e.Message), Code: jsonText(e.Code)}
		}
		return t
	case *SessionTitle:
		return &EventTexts{Title: jsonText(d.Title)}
	case *Message:
		blocks, ok := textsBlocks(d.Content)
		if !ok {
			return nil
		}
		return &EventTexts{Blocks: blocks, SourceKind: jsonText(d.Source.Kind)}
	case *ToolCall:
		return &EventTexts{CallID: jsonText(d.CallID), Name: jsonText(d.Name), Arguments: jsonText(d.Arguments)}
	case *ToolResultData:
		blocks, ok := textsBlocks(d.Message.Content)
		if !ok {
			return nil
		}
		t := &EventTexts{Blocks: blocks, ResultCallID: jsonText(d.Message.Source.CallID)}
		if d.Error != nil {
			t.Error = &ErrorInfo{Name: jsonText(d.Error.Name), Code: jsonText(d.Error.Code)}
		}
		return t
	case *AssistantMessage:
		blocks, ok := textsBlocks(d.Message.Content)
		if !ok {
			return nil
		}
		return &EventTexts{Blocks: blocks}
	}
	return nil
}

// textsBlocks converts content to TextsBlocks; ok is false for a block only
// its encoding tells (unknown, or nil).
func textsBlocks(c Content) ([]TextsBlock, bool) {
	if c == nil {
		return nil, true
	}
	out := make([]TextsBlock, len(c))
	for i, b := range c {
		switch b := b.(type) {
		case *TextBlock:
			if b == nil {
				return nil, false
			}
			out[i] = TextsBlock{Type: BlockText, Text: jsonText(b.Text)}
		case *ReasoningBlock:
			if b == nil {
				return nil, false
			}
			out[i] = TextsBlock{Type: BlockReasoning, Text: jsonText(b.Text)}
		case *ToolResultBlock:
			if b == nil {
				return nil, false
			}
			inner, ok := textsBlocks(b.Content)
			if !ok {
				return nil, false
			}
			out[i] = TextsBlock{Type: BlockToolResult, IsError: b.IsError, Content: inner}
		case *ImageBlock, *ToolCallBlock:
			out[i] = TextsBlock{Type: b.BlockType()}
		default:
			return nil, false
		}
	}
	return out, true
}
