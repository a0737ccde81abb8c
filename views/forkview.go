package views

import (
	"encoding/json"

	"prism/core/notes"
)

// ReplayedView marks a fork's call answered with its source's recorded
// result (a KindReplayed note): the card says "replayed from <source>
// #seq", linking the source's call.
type ReplayedView struct {
	Source, Short string
	Seq           int64
	URL           string
}

// replayedView returns the replayed mark of call callID as the page at
// r.Seq shows it (nil when the call ran, or the page shows no notes).
func replayedView(callID string, r R) *ReplayedView {
	if callID == "" {
		return nil
	}
	for _, n := range r.Notes {
		if n.Kind != notes.KindReplayed || n.CallID != callID || !n.AppliesAt(r.Seq) {
			continue
		}
		var d notes.ReplayedData
		if json.Unmarshal(n.Data, &d) != nil || d.SourceSession == "" {
			continue
		}
		return &ReplayedView{Source: clean(d.SourceSession), Short: shortID(clean(d.SourceSession)), Seq: d.SourceSeq,
			URL: SessionEventURL(d.SourceSession, d.SourceSeq)}
	}
	return nil
}
