package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"prism/core"
	"prism/core/notes"
	"prism/sources/dsh"
)

// LabelRow is one line of the labels dataset (prism export --labels): a
// labelled call with what it was asked and answered and the person's
// label. Every line carries Dataset (dsh.LabelsDataset), which tells the
// file apart from a session log.
type LabelRow struct {
	Dataset string `json:"dataset"`
	Session string `json:"session"`
	Call    string `json:"call"`
	Tool    string `json:"tool"`
	// Arguments is the raw argument string the call was logged with.
	Arguments string `json:"arguments"`
	// Result is the content of the call's latest result (null: none yet);
	// IsError says it failed.
	Result  core.Content `json:"result"`
	IsError bool         `json:"isError"`
	Label   string       `json:"label"`
	Score   *json.Number `json:"score,omitempty"`
	Note    string       `json:"note,omitempty"`
	Author  string       `json:"author,omitempty"`
	// Time is when the label was made or last edited (epoch ms).
	Time int64 `json:"time"`
}

// LabelSource is what ExportLabels reads of a store (every Store is one).
type LabelSource interface {
	ListSessions(ctx context.Context, o ListOptions) (SessionPage, error)
	LoadSession(ctx context.Context, id string) (*SessionLog, error)
	Notes(ctx context.Context, session string, q notes.Query) ([]notes.Note, error)
}

// ExportLabels writes the labels dataset: one LabelRow per label (not
// removed) on a call, of every session, sessions oldest first and each
// session's labels in their order. A label on a whole session has no call
// and is left out. It returns how many rows it wrote.
func ExportLabels(ctx context.Context, st LabelSource, w io.Writer) (int, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	rows := 0
	o := ListOptions{Sort: SortCreated, Limit: 1000}
	var ids []string
	for {
		page, err := st.ListSessions(ctx, o)
		if err != nil {
			return rows, fmt.Errorf("export labels: list sessions: %w", err)
		}
		for _, s := range page.Sessions {
			ids = append(ids, s.ID)
		}
		if page.NextCursor == "" {
			break
		}
		o.Cursor = page.NextCursor
	}
	for i := len(ids) - 1; i >= 0; i-- { // the list is newest first
		id := ids[i]
		ns, err := st.Notes(ctx, id, notes.Query{Kind: notes.KindLabel})
		if err != nil {
			return rows, fmt.Errorf("export labels: notes of session %s: %w", id, err)
		}
		var labelled []notes.Note
		for _, n := range ns {
			if n.CallID != "" {
				labelled = append(labelled, n)
			}
		}
		if len(labelled) == 0 {
			continue
		}
		l, err := st.LoadSession(ctx, id)
		if err != nil {
			return rows, fmt.Errorf("export labels: session %s: %w", id, err)
		}
		calls := callsOf(l.Events)
		for _, n := range labelled {
			var d notes.LabelData
			dec := json.NewDecoder(bytes.NewReader(n.Data))
			dec.UseNumber()
			if err := dec.Decode(&d); err != nil {
				return rows, fmt.Errorf("export labels: note %s of session %s: %w", n.ID, id, err)
			}
			c := calls[n.CallID]
			row := LabelRow{Dataset: dsh.LabelsDataset, Session: id, Call: n.CallID, Tool: c.name, Arguments: c.args,
				Result: c.result.Content, IsError: c.result.IsError, Label: d.Label, Score: d.Score, Note: d.Note, Author: n.Author, Time: n.Time}
			if err := enc.Encode(row); err != nil {
				return rows, fmt.Errorf("export labels: note %s of session %s: %w", n.ID, id, err)
			}
			rows++
		}
	}
	return rows, bw.Flush()
}

// loggedCall is what the labels dataset shows of a call: its latest
// tool/call and the latest result that answered it.
type loggedCall struct {
	name, args string
	result     core.ToolResult
}

// callsOf indexes a log's calls by call id.
func callsOf(events []core.Event) map[string]loggedCall {
	out := map[string]loggedCall{}
	for _, ev := range events {
		switch ev.Type {
		case core.EventToolCall:
			var d core.ToolCall
			if json.Unmarshal(ev.Data, &d) == nil && d.CallID != "" {
				out[d.CallID] = loggedCall{name: d.Name, args: d.Arguments}
			}
		case core.EventToolResult:
			var d core.ToolResultData
			if json.Unmarshal(ev.Data, &d) == nil && d.CallID() != "" {
				c := out[d.CallID()]
				c.result = d.Projection()
				out[d.CallID()] = c
			}
		}
	}
	return out
}
