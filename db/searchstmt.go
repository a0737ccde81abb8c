package db

import (
	"strings"
	"sync"
)

// plainStmtCap bounds how many statement texts a plainStmts keeps: the
// operator-only queries a server sees are a few shapes (tool:, error:,
// kind:, with and without a cursor, a few page sizes); a shape beyond
// the bound has its text built for each search, as every one had before.
const plainStmtCap = 64

// plainStmtKey is the shape of newestPlainPage's statement: its
// conditions (at most two kept in the key; a query with more is not
// cached), whether it joins the sessions, whether it continues after a
// cursor, and how many rows it reads. The conditions are the SQL of
// filterSQL (constant texts whose values are bound), so the key is built
// without allocating.
type plainStmtKey struct {
	where    [2]string
	nWhere   int
	sessions bool
	cursor   bool
	n        int
}

// plainStmts keeps the text of newestPlainPage's statement by its shape
// (plainStmtKey), so that a search does not build its ~1 KB again: each
// search of tool: or error: built it (about a tenth of the bytes it
// allocated), garbage that brought the next collection nearer. A Store
// owns one; it is safe for concurrent use.
type plainStmts struct {
	mu    sync.Mutex
	texts map[plainStmtKey]string
}

// text returns the statement for s and extra (cursorConds') reading n
// rows: plainPageSelect, newestTop and plainPageFrom, built once per shape.
func (c *plainStmts) text(s searchSQL, extra []string, n int) string {
	key, ok := plainKey(s, extra, n)
	if ok {
		c.mu.Lock()
		t, hit := c.texts[key]
		c.mu.Unlock()
		if hit {
			return t
		}
	}
	top := newestTop(s, extra, n)
	var sb strings.Builder
	sb.Grow(len(plainPageSelect) + len(top) + len(plainPageFrom))
	sb.WriteString(plainPageSelect)
	sb.WriteString(top)
	sb.WriteString(plainPageFrom)
	t := sb.String()
	if ok {
		c.mu.Lock()
		if c.texts == nil {
			c.texts = make(map[plainStmtKey]string)
		}
		if len(c.texts) < plainStmtCap {
			c.texts[key] = t
		}
		c.mu.Unlock()
	}
	return t
}

// len returns how many statement texts c keeps.
func (c *plainStmts) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.texts)
}

// plainKey returns the shape of the statement for s and extra reading n
// rows; ok is false when it has more conditions than a key holds.
// extra is either empty or cursorConds' two conditions, always the same
// texts.
func plainKey(s searchSQL, extra []string, n int) (plainStmtKey, bool) {
	if len(s.where) > len(plainStmtKey{}.where) {
		return plainStmtKey{}, false
	}
	k := plainStmtKey{nWhere: len(s.where), sessions: s.sessions, cursor: len(extra) > 0, n: n}
	copy(k.where[:], s.where)
	return k, true
}
