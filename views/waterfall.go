package views

import "strconv"

// The waterfall of a turn: one row per tool call on the turn's time axis,
// from the call to its result, so calls that ran in parallel overlap — the
// timeline users know from tracing tools. Bars are SVG geometry (no inline
// style: the CSP allows none).

// waterfallWidth is the axis length in SVG user units.
const waterfallWidth = 1000

// minBar is the narrowest bar drawn, in user units, so an instant call
// still shows.
const minBar = 3

// waterfallView is a turn's waterfall.
type waterfallView struct {
	Span string // the turn's duration
	Rows []waterfallRow
	// Parallel is how many calls overlapped another call.
	Parallel int
}

// waterfallRow is one call: its bar from X to X+W (user units) and labels.
type waterfallRow struct {
	CardID      string
	Tool, Title string
	State       string
	X, W        int
	Offset      string // start relative to the turn, "+120 ms"
	Dur         string // "" when the call never finished
}

// Href links the row to its card on the page.
func (r waterfallRow) Href() string { return "#" + r.CardID }

// XAttr and WAttr are the bar's SVG attributes.
func (r waterfallRow) XAttr() string { return strconv.Itoa(r.X) }

// WAttr is the bar's width attribute.
func (r waterfallRow) WAttr() string { return strconv.Itoa(r.W) }

// newWaterfall returns the waterfall of an ended turn with tool calls, else
// nil (a running turn's calls are still moving; its cards tell).
func newWaterfall(t *TurnRow) *waterfallView {
	if !t.Ended || len(t.cards) == 0 {
		return nil
	}
	t0, t1 := t.Time, t.EndTime
	type span struct{ from, to int64 }
	spans := make([]span, len(t.cards))
	for i, c := range t.cards {
		from := c.CallTime
		if !c.HasCall {
			from = c.ResultTime
		}
		to := t1
		if c.Result != nil {
			to = c.ResultTime
		}
		from, to = min(max(from, t0), t1), min(max(to, from), t1)
		spans[i] = span{from, to}
	}
	total := max(t1-t0, 1)
	w := &waterfallView{Span: duration(t1 - t0)}
	for i, c := range t.cards {
		s := spans[i]
		x := int((s.from - t0) * waterfallWidth / total)
		bw := max(int((s.to-s.from)*waterfallWidth/total), minBar)
		if x+bw > waterfallWidth {
			x = waterfallWidth - bw
		}
		row := waterfallRow{
			CardID: c.ID, Tool: firstLine(clean(c.Name), 80), Title: cardTitle(c, c.Views()),
			State: c.State(), X: x, W: bw, Offset: "+" + duration(s.from-t0),
		}
		if c.Result != nil {
			row.Dur = duration(s.to - s.from)
		}
		for j, o := range spans {
			if j != i && o.from < s.to && s.from < o.to {
				w.Parallel++
				break
			}
		}
		w.Rows = append(w.Rows, row)
	}
	return w
}
