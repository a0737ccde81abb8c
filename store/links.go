package store

import (
	"context"
	"fmt"

	"prism/core/notes"
)

// NoteWriter is what writing inferred links needs of a store.
type NoteWriter interface {
	Notes(ctx context.Context, session string, q notes.Query) ([]notes.Note, error)
	PutNote(ctx context.Context, in notes.Input) (notes.Note, error)
}

// WriteInferredLinks writes the link notes an imported file implies: each
// child (origin "subagent") whose parent is in the same file is matched to
// its spawning call (notes.InferLinks). A call that already has a link
// note is left alone, so importing the file again adds none. It returns
// how many notes it wrote.
func WriteInferredLinks(ctx context.Context, st NoteWriter, preps []Prepared) (int, error) {
	byID := map[string]*Prepared{}
	children := map[string][]notes.ChildFacts{}
	var parents []string
	for i := range preps {
		p := &preps[i]
		byID[p.Log.Header.ID] = p
	}
	for i := range preps {
		h := preps[i].Log.Header
		parent := h.ChildOf()
		if parent == "" || byID[parent] == nil {
			continue
		}
		if children[parent] == nil {
			parents = append(parents, parent)
		}
		children[parent] = append(children[parent], notes.ChildFactsOf(h, preps[i].Events))
	}
	wrote := 0
	for _, parent := range parents {
		links := notes.InferLinks(parent, byID[parent].Events, children[parent])
		if len(links) == 0 {
			continue
		}
		have, err := st.Notes(ctx, parent, notes.Query{Kind: notes.KindLink})
		if err != nil {
			return wrote, fmt.Errorf("inferred links of session %s: %w", parent, err)
		}
		linked := map[string]bool{}
		for _, n := range have {
			linked[n.CallID] = true
		}
		for _, in := range links {
			if linked[in.CallID] {
				continue
			}
			if _, err := st.PutNote(ctx, in); err != nil {
				return wrote, fmt.Errorf("inferred link of session %s call %s: %w", parent, in.CallID, err)
			}
			wrote++
		}
	}
	return wrote, nil
}
