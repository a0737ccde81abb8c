package views

import (
	"encoding/json"
	"fmt"
	"strings"

	"prism/core"
)

// ModelView is what the model received from a call: exactly the content
// blocks of the tool/result message that went into the transcript (the
// card shows the UI's projection of the same result), and the truncation
// the tool applied before the model saw it.
type ModelView struct {
	Blocks []ModelBlock
	// Lines counts the lines of the content's text blocks.
	Lines int
	// IsError is the block's isError flag.
	IsError bool
	// Truncation says what the tool cut before the model saw the result
	// (empty: nothing, as far as the result tells).
	Truncation []string
}

// ModelBlock is one content block: text (bounded, as a card's text is) or
// another block shown as its JSON.
type ModelBlock struct {
	Kind string // text | image | other
	Text Clip
	ID   string // the element id its copy button copies
}

// newModelView builds the model view of a completed card; nil while the
// model has received nothing.
func newModelView(c *Card, result core.ResultView) *ModelView {
	if c.Result == nil {
		return nil
	}
	res := c.Result.Projection()
	m := &ModelView{IsError: res.IsError}
	var texts strings.Builder
	for i, b := range res.Content {
		mb := ModelBlock{ID: fmt.Sprintf("%s-model-%d", c.ID, i)}
		switch x := b.(type) {
		case *core.TextBlock:
			mb.Kind = "text"
			mb.Text = newClip(x.Text, maxLines)
			m.Lines += mb.Text.Total
			texts.WriteString(x.Text)
			texts.WriteByte('\n')
		case *core.ImageBlock:
			mb.Kind = "image"
			mb.Text = newClip(fmt.Sprintf("image %s %s %d×%d (%s)", x.Attachment.Name, x.Attachment.MediaType,
				x.Attachment.Width, x.Attachment.Height, Bytes(x.Attachment.Bytes)), 1)
		default:
			mb.Kind = "other"
			raw, _ := json.MarshalIndent(b, "", "  ")
			mb.Text = newClip(string(raw), maxLines)
		}
		m.Blocks = append(m.Blocks, mb)
	}
	m.Truncation = toolTruncation(result, texts.String())
	return m
}

// truncationNotes are the notices the built-in tools (dsh's texts) write
// into the model's content when they cut it.
var truncationNotes = []struct{ marker, note string }{
	{"[output truncated", "the command's output was cut to its tail"},
	{"(line truncated", "long lines were cut"},
	{"(Output capped.", "the read was capped by size"},
}

// toolTruncation lists what the tool cut before the model saw its result:
// from the structured result view where it says so (its row of
// resultKinds), and from the notices the tools write into the content.
func toolTruncation(rv core.ResultView, text string) []string {
	var out []string
	for _, k := range resultKinds {
		if k.cut != nil {
			out = append(out, k.cut(rv)...)
		}
	}
	for _, t := range truncationNotes {
		if strings.Contains(text, t.marker) {
			out = append(out, t.note)
		}
	}
	return out
}

// modelSummary is the model view's toggle label: what the model received.
func modelSummary(m *ModelView) string {
	var kinds []string
	counts := map[string]int{}
	for _, b := range m.Blocks {
		if counts[b.Kind] == 0 {
			kinds = append(kinds, b.Kind)
		}
		counts[b.Kind]++
	}
	if len(kinds) == 0 {
		return "no content"
	}
	parts := make([]string, 0, len(kinds)+1)
	for _, k := range kinds {
		parts = append(parts, plural(counts[k], k+" block", k+" blocks"))
	}
	if m.Lines > 0 {
		parts = append(parts, plural(m.Lines, "line", "lines"))
	}
	return strings.Join(parts, " · ")
}
