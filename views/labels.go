package views

import (
	"bytes"
	"context"
	"encoding/json"

	"prism/core/notes"
)

// DefaultLabels returns the labels the card's form suggests (free text
// is allowed too).
func DefaultLabels() []string { return []string{"wrong", "slow", "good", "flaky"} }

// LabelView is one label chip on a card: a person's label, its score and
// its note (markdown, sanitized), who made it and when.
type LabelView struct {
	ID, Label, Score string
	// NoteHTML is the note rendered through the page's markdown
	// sanitizer (safe to embed); Note the source, for the edit form.
	NoteHTML, Note string
	Author         string
	When, WhenISO  string
	// EditURL is where the chip's edit form posts (RemoveURL removes
	// it); "" when the page offers no label form.
	EditURL, RemoveURL string
	// TestURL downloads the labelled call saved as a test (CallTestURL,
	// "save as test" in the chip's menu): set on the owner's pages for a
	// completed call's label, never for a label on the whole session.
	TestURL string
}

// LabelForm is a card's form for a new label.
type LabelForm struct {
	URL, CallID string
	// ListID is the id of the form's list of suggested labels.
	ListID  string
	Choices []string
}

// labelViews returns the chips of the labels on call callID ("": on the
// session) that apply at the seq the page shows, and the form for a new
// one (nil when the page offers none).
func labelViews(callID, elemID string, r R) ([]LabelView, *LabelForm) {
	var out []LabelView
	for _, n := range r.Notes {
		if n.Kind != notes.KindLabel || n.CallID != callID || !n.AppliesAt(r.Seq) {
			continue
		}
		var d notes.LabelData
		dec := json.NewDecoder(bytes.NewReader(n.Data))
		dec.UseNumber()
		if dec.Decode(&d) != nil {
			continue
		}
		v := LabelView{ID: n.ID, Label: clean(d.Label), Note: d.Note, Author: clean(n.Author)}
		if d.Score != nil {
			v.Score = d.Score.String()
		}
		if d.Note != "" {
			v.NoteHTML = markdown(d.Note)
		}
		v.When, v.WhenISO = clock(n.Time)
		if r.Labels {
			v.EditURL = LabelURL(r.SessionID, n.ID)
			v.RemoveURL = LabelURL(r.SessionID, n.ID) + "?remove=1"
		}
		out = append(out, v)
	}
	if !r.Labels {
		return out, nil
	}
	return out, &LabelForm{URL: LabelsURL(r.SessionID), CallID: callID, ListID: "labels-" + elemID, Choices: labelChoices(r)}
}

// labelChoices are the labels r's forms suggest (Reader.LabelChoices, or
// DefaultLabels).
func labelChoices(r R) []string {
	if len(r.LabelChoices) == 0 {
		return DefaultLabels()
	}
	return r.LabelChoices
}

// SessionLabelsID is the id of the session header's labels.
const SessionLabelsID = "session-labels"

// RenderSessionLabelsFor renders the session header's labels as t's
// reader sees them (ok false when the page shows none).
func RenderSessionLabelsFor(ctx context.Context, t *Timeline, l Links) (p Patch, ok bool, err error) {
	r := NewR(t, l)
	ls, form := labelViews("", SessionLabelsID, r)
	if !r.Labels && len(ls) == 0 {
		return Patch{}, false, nil
	}
	html, err := Render(ctx, labelsBlock(SessionLabelsID, ls, form, SessionLabelsID, labelChoices(r)))
	if err != nil {
		return Patch{}, false, err
	}
	return Patch{Mode: "outer", HTML: html}, true, nil
}
