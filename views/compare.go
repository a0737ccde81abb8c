package views

import (
	"bytes"
	"encoding/json"
	"strconv"

	"prism/core"
	"prism/core/compare"
	"prism/core/price"
)

// CompareSide lists the tool calls of a session's fold for core/compare,
// in log order, with the session's totals: the calls are the fold's cards
// (the page's own pairing of calls and results), so a comparison reads
// each log exactly as its page shows it. Prices, when set, give the cost
// (SessionCost).
func CompareSide(id string, t *Timeline, prices price.Table) compare.Side {
	sum := t.Summary()
	s := compare.Side{ID: id, Title: t.Title(), Calls: make([]compare.Call, 0, len(t.cards))}
	s.Summary = compare.Summary{
		Calls: sum.Calls, Errors: sum.Errors,
		InputTokens: sum.InputTokens, OutputTokens: sum.OutputTokens,
		FilesWritten: []string{},
	}
	if sum.LastTime > sum.FirstTime {
		s.Summary.DurationMS = sum.LastTime - sum.FirstTime
	}
	s.Summary.Cost, _ = SessionCost(&sum, prices)
	written := map[string]bool{}
	for _, c := range t.cards {
		cc := compare.Call{ID: c.ID, CallID: c.CallID, Tool: c.Name, Args: c.Args, Turn: -1, Step: -1, CallSeq: -1, ResultSeq: -1}
		if c.HasCall {
			cc.CallSeq = c.CallSeq
		}
		switch {
		case c.Step != nil:
			cc.Turn, cc.Step = c.Step.TurnNo, c.Step.StepNo
		case c.Turn != nil:
			cc.Turn = c.Turn.Turn
		}
		cc.Stopped = c.Result == nil && c.Stopped
		if c.Result != nil {
			res := c.Result.Projection()
			cc.HasResult, cc.ResultSeq = true, c.ResultSeq
			cc.Result, cc.IsError = res.Content.PlainText(), res.IsError
			if c.Result.Error != nil {
				cc.ErrorCode = c.Result.Error.Code
			}
			if !res.IsError {
				// The result view alone (no call view): a diff names
				// the files the call changed.
				if d, ok := safeResultView(c.p(), c.Name, c.Args, res).(*core.DiffResultView); ok {
					for _, f := range d.Diffs {
						if !written[f.Path] {
							written[f.Path] = true
							s.Summary.FilesWritten = append(s.Summary.FilesWritten, f.Path)
						}
					}
				}
			}
		}
		s.Calls = append(s.Calls, cc)
	}
	return s
}

// ComparePageView is the page of two sessions compared call by call.
type ComparePageView struct {
	Meta PageMeta
	// A and B are the two sessions' heads and totals.
	A, B CompareHead
	// Self: a session compared with itself.
	Self bool
	// Rows are the alignment's pairs, in order; Blocks the same rows as
	// the page lays them out: a long run of same rows folds into one.
	Rows   []CompareRow
	Blocks []CompareBlock
	// Differences counts the rows that differ; Counts the rows by mark.
	Differences int
	Counts      []CompareCount
	Notes       []string
	// StreamURL, when set, keeps the comparison live.
	StreamURL string
	// SwapURL compares the two the other way round.
	SwapURL string
}

// CompareHead is one side's identity and totals.
type CompareHead struct {
	ID, Title, URL, Status string
	Calls, Errors          string
	Tokens, Cost, Duration string
	FilesWritten           int
	FilesTitle             string
}

// CompareBlock is one row, or a folded run of rows that are the same.
type CompareBlock struct {
	Row  *CompareRow
	Fold []CompareRow
}

// foldEdge is how many same rows stay shown at each end of a folded run;
// a run folds when it hides more than foldEdge rows.
const foldEdge = 2

// compareBlocks lays rows out: each run of same rows longer than
// 3×foldEdge keeps foldEdge rows shown at each end and folds the rest.
func compareBlocks(rows []CompareRow) []CompareBlock {
	var out []CompareBlock
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Mark == string(compare.Same) {
			j++
		}
		if j-i > 3*foldEdge {
			for k := i; k < i+foldEdge; k++ {
				out = append(out, CompareBlock{Row: &rows[k]})
			}
			out = append(out, CompareBlock{Fold: rows[i+foldEdge : j-foldEdge]})
			i = j - foldEdge
		}
		if i == j {
			out = append(out, CompareBlock{Row: &rows[i]})
			i++
			continue
		}
		for ; i < j; i++ {
			out = append(out, CompareBlock{Row: &rows[i]})
		}
	}
	return out
}

// CompareCount is how many rows have a mark.
type CompareCount struct {
	Mark  string
	Class string
	N     int
}

// CompareRow is one aligned pair.
type CompareRow struct {
	ID      string // the row's element id: "cmp-N"
	Mark    string
	Class   string // the mark as a CSS class suffix
	Differs bool
	// ByPlace: paired by place within the step, not by identity.
	ByPlace bool
	A, B    *CompareCell
	// ArgsDiff, ResultDiff and ErrorDiff are the differing fields, A → B.
	ArgsDiff, ResultDiff []DiffLine
	ErrorDiff            string
}

// CompareCell is one side's call in a row.
type CompareCell struct {
	Tool, Args string // the tool and its arguments on one line, cut
	Where      string // "turn 1 · step 2"
	State      string // ok, error, pending
	ErrorCode  string
	URL        string // the call's card on its session page
}

// compareArgRunes bounds a cell's one-line arguments.
const compareArgRunes = 140

// NewComparePage builds the page of a comparison; the rows link each call
// to its card on its session's page.
func NewComparePage(meta PageMeta, c *compare.Comparison, statusA, statusB string) *ComparePageView {
	v := &ComparePageView{
		Meta: meta, Self: c.A.ID == c.B.ID, Differences: c.Differences, Notes: c.Notes,
		A: newCompareHead(&c.A, statusA), B: newCompareHead(&c.B, statusB),
		SwapURL: CompareURL(c.B.ID, c.A.ID),
	}
	counts := map[compare.Mark]int{}
	for i := range c.Pairs {
		p := &c.Pairs[i]
		counts[p.Mark]++
		r := CompareRow{ID: "cmp-" + strconv.Itoa(i+1), Mark: string(p.Mark), Class: markClass(p.Mark), Differs: p.Mark.Differs(), ByPlace: p.Positional}
		if p.A != nil {
			r.A = newCompareCell(c.A.ID, p.A)
		}
		if p.B != nil {
			r.B = newCompareCell(c.B.ID, p.B)
		}
		switch p.Mark {
		case compare.ArgsDiffer:
			r.ArgsDiff = diffLines(prettyArgs(p.A.Args), prettyArgs(p.B.Args))
			if p.A.HasResult && p.B.HasResult && p.A.Result != p.B.Result {
				r.ResultDiff = diffLines(clean(p.A.Result), clean(p.B.Result))
			}
		case compare.ResultDiffers:
			r.ResultDiff = diffLines(clean(p.A.Result), clean(p.B.Result))
		case compare.ErrorDiffers:
			r.ErrorDiff = errorText(p.A) + " → " + errorText(p.B)
			if p.A.Result != p.B.Result {
				r.ResultDiff = diffLines(clean(p.A.Result), clean(p.B.Result))
			}
		}
		v.Rows = append(v.Rows, r)
	}
	v.Blocks = compareBlocks(v.Rows)
	for _, m := range []compare.Mark{compare.Same, compare.ArgsDiffer, compare.ResultDiffers, compare.ErrorDiffers, compare.Inserted, compare.Deleted, compare.Pending} {
		if counts[m] > 0 {
			v.Counts = append(v.Counts, CompareCount{Mark: string(m), Class: markClass(m), N: counts[m]})
		}
	}
	return v
}

func newCompareHead(s *compare.Side, status string) CompareHead {
	m := &s.Summary
	h := CompareHead{
		ID: s.ID, Title: s.Title, URL: SessionURL(s.ID), Status: status,
		Calls: Count(int(m.Calls)), Errors: Count(int(m.Errors)),
		Tokens:       CompactCount(m.InputTokens) + " / " + CompactCount(m.OutputTokens),
		Cost:         m.Cost,
		Duration:     duration(m.DurationMS),
		FilesWritten: len(m.FilesWritten),
	}
	if h.Title == "" {
		h.Title = s.ID
	}
	for i, f := range m.FilesWritten {
		if i == 20 {
			h.FilesTitle += "\n…"
			break
		}
		if i > 0 {
			h.FilesTitle += "\n"
		}
		h.FilesTitle += firstLine(clean(f), 300)
	}
	return h
}

func newCompareCell(sessionID string, c *compare.Call) *CompareCell {
	x := &CompareCell{Tool: firstLine(clean(c.Tool), 200), Args: clean(compare.ShortArgs(c, compareArgRunes)), State: StateOK, ErrorCode: c.ErrorCode, URL: CardURL(sessionID, c.ID)}
	switch {
	case c.Stopped:
		x.State = StateStopped
	case !c.HasResult:
		x.State = StatePending
	case c.IsError:
		x.State = StateError
	}
	switch {
	case c.Turn >= 0 && c.Step >= 0:
		x.Where = "turn " + strconv.Itoa(c.Turn) + " · step " + strconv.Itoa(c.Step)
	case c.Turn >= 0:
		x.Where = "turn " + strconv.Itoa(c.Turn)
	}
	return x
}

// markClass is a mark as a CSS class suffix.
func markClass(m compare.Mark) string {
	switch m {
	case compare.ArgsDiffer:
		return "args"
	case compare.ResultDiffers:
		return "result"
	case compare.ErrorDiffers:
		return "error"
	}
	return string(m)
}

// errorText names a call's failure: its code, "error", "no error" or
// "pending".
func errorText(c *compare.Call) string {
	switch {
	case c.Stopped:
		return "interrupted (no result)"
	case !c.HasResult:
		return "pending"
	case c.ErrorCode != "":
		return c.ErrorCode
	case c.IsError:
		return "error"
	}
	return "no error"
}

// prettyArgs is raw arguments indented for a line diff: canonical JSON
// (keys sorted) indented by two spaces, or the raw text when it is not
// JSON.
func prettyArgs(raw string) string {
	canon := core.CanonicalJSON([]byte(raw))
	var b bytes.Buffer
	if json.Indent(&b, canon, "", "  ") != nil {
		return clean(raw)
	}
	return clean(b.String())
}

// ComparePickView is the page that picks a session to compare A with.
type ComparePickView struct {
	Meta       PageMeta
	A, Title   string
	Candidates []*SessionRowView
}
