package web

import (
	"context"
	"strings"
	"testing"

	"prism/views"
)

func boardRowsFixture() []*views.BoardRow {
	return []*views.BoardRow{
		{ID: "a", Title: "fix <b>it</b>", Status: "running", URL: "/sessions/a", Call: "bash", Age: "3s", Tokens: "1k / 2", Cost: "$1.00"},
		{ID: "b", Title: "b", Status: "running", URL: "/sessions/b", Tokens: "0 / 0",
			Approvals: []views.BoardApproval{{Tool: "bash", Reason: "asks", DecideURL: "/sessions/b/approvals/x"}}},
		{ID: "c", Title: "c", Status: "running", URL: "/sessions/c", Tokens: "0 / 0", Call: "read", Age: "1m02s"},
	}
}

func renderRows(t *testing.T, rows []*views.BoardRow) string {
	t.Helper()
	html, err := views.Render(context.Background(), views.BoardRows(&views.BoardView{Rows: rows}))
	if err != nil {
		t.Fatal(err)
	}
	return html
}

// TestBoardCells: the board's rows written from kept cells are the bytes
// a render without them writes; a row whose key did not change is not
// rendered again, one whose call or age changed is; a row waiting for a
// person is never kept; a row no longer on the board drops its cell.
func TestBoardCells(t *testing.T) {
	ctx := context.Background()
	c := newBoardCells()
	want := renderRows(t, boardRowsFixture())
	rows := boardRowsFixture()
	if err := c.fill(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if got := renderRows(t, rows); got != want {
		t.Fatalf("rows from cells:\n%s\nwant the render without them:\n%s", got, want)
	}
	if _, ok := c.cell["b"]; ok || len(c.cell) != 2 {
		t.Errorf("cells kept for %v, want a and c (b waits for a person)", c.cell)
	}

	// Mark the kept cells: a fill that renders anew does not show the mark.
	for id, cell := range c.cell {
		cell.html = "<!--kept " + id + "-->"
		c.cell[id] = cell
	}
	rows = boardRowsFixture()
	rows[2].Call, rows[2].Age = "grep", "0s"
	if err := c.fill(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if rows[0].Rendered != "<!--kept a-->" {
		t.Errorf("row a, unchanged, was rendered again: %q", rows[0].Rendered)
	}
	if !strings.Contains(rows[2].Rendered, "<code>grep</code>") || strings.Contains(rows[2].Rendered, "kept") {
		t.Errorf("row c, its call changed, was not rendered anew: %q", rows[2].Rendered)
	}
	if rows[1].Rendered != "" {
		t.Errorf("row b, waiting for a person, was given kept HTML %q", rows[1].Rendered)
	}
	rows = boardRowsFixture()
	rows[0].Age = "4s"
	if err := c.fill(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rows[0].Rendered, ">4s<") {
		t.Errorf("row a, its age moved, was not rendered anew: %q", rows[0].Rendered)
	}
	// An approval on a kept row: rendered with it, not from the cell.
	rows = boardRowsFixture()
	rows[0].Approvals = []views.BoardApproval{{Tool: "edit", DecideURL: "/sessions/a/approvals/y"}}
	if err := c.fill(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if html := renderRows(t, rows); !strings.Contains(html, "/sessions/a/approvals/y") {
		t.Error("an approval on a row that had a kept cell is not shown")
	}

	if err := c.fill(ctx, boardRowsFixture()[2:]); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.cell["a"]; ok || len(c.cell) != 1 {
		t.Errorf("after a left the board, cells kept for %v, want c only", c.cell)
	}
}
