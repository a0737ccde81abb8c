package web

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"prism/views"
)

// boardCells keeps each board row's HTML between renders (GET /board's
// and the board hub's), so a render writes again only the rows that
// changed: a row's HTML is a function of what it shows (boardCellKey),
// rendered once and served to every paint and viewer while that stays
// the same. A commit that changes what a row shows (its call in flight,
// the age of it, its title, status, tokens or cost) changes its key, so
// the row is rendered anew; rows waiting for a person (an approval, an
// attention) are rendered every time. It keeps the rows of the latest
// render only: a session no longer shown (stopped, deleted) drops its
// cell.
type boardCells struct {
	mu   sync.Mutex
	cell map[string]boardCell
}

// boardCell is a row's key and its rendered HTML.
type boardCell struct {
	key  boardCellKey
	html string
}

// boardCellKey is all a row without approvals or attention shows.
type boardCellKey struct {
	title, status, url, tokens, cost, call, age string
}

func newBoardCells() *boardCells { return &boardCells{cell: map[string]boardCell{}} }

// cached reports whether r's HTML can be kept: it waits for no person.
func cached(r *views.BoardRow) bool { return len(r.Approvals) == 0 && len(r.Attention) == 0 }

func keyOf(r *views.BoardRow) boardCellKey {
	return boardCellKey{title: r.Title, status: r.Status, url: r.URL, tokens: r.Tokens, cost: r.Cost, call: r.Call, age: r.Age}
}

// fill sets each row's Rendered: the kept HTML of a row whose key did not
// change, else rendered now and kept. rows are the whole board: cells of
// rows not among them are dropped.
func (c *boardCells) fill(ctx context.Context, rows []*views.BoardRow) error {
	var todo []*views.BoardRow
	keep := 0 // rows whose HTML is kept
	c.mu.Lock()
	for _, r := range rows {
		if !cached(r) {
			continue
		}
		keep++
		if cell, ok := c.cell[r.ID]; ok && cell.key == keyOf(r) {
			r.Rendered = cell.html
		} else {
			todo = append(todo, r)
		}
	}
	c.mu.Unlock()
	var b bytes.Buffer
	for _, r := range todo {
		b.Reset()
		if err := views.BoardRowView(r).Render(ctx, &b); err != nil {
			return fmt.Errorf("board row of session %s: %w", r.ID, err)
		}
		r.Rendered = b.String() // a copy: a kept cell holds its own bytes only
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range todo {
		c.cell[r.ID] = boardCell{key: keyOf(r), html: r.Rendered}
	}
	if len(c.cell) > keep {
		shown := make(map[string]bool, keep)
		for _, r := range rows {
			if cached(r) {
				shown[r.ID] = true
			}
		}
		for id := range c.cell {
			if !shown[id] {
				delete(c.cell, id)
			}
		}
	}
	return nil
}
