package search

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"prism/core"
)

// Query bounds: a longer query is refused with a message saying so.
const (
	MaxQueryBytes = 1024
	MaxTerms      = 32
)

// Field says what a Term matches.
type Field string

// Term fields: text, or one of the operators.
const (
	FieldText    Field = ""
	FieldTool    Field = "tool"
	FieldError   Field = "error"
	FieldStatus  Field = "status"
	FieldSession Field = "session"
	FieldKind    Field = "kind"
	FieldAfter   Field = "after"
	FieldBefore  Field = "before"
	// FieldLabel matches what a person labelled (a note of kind label,
	// kept beside the log): label:wrong; FieldHas what has one — has:label,
	// has:comment (a label with note text). A session's label matches
	// every hit of its session, a call's label its card.
	FieldLabel Field = "label"
	FieldHas   Field = "has"
)

// What has: takes.
const (
	HasLabel   = "label"
	HasComment = "comment"
)

// Kinds of hits (what a document is, kind:…).
const (
	KindSession   = "session"   // a session's title and working directory
	KindUser      = "user"      // a user message
	KindContext   = "context"   // a message a plugin or hook added for the model
	KindAssistant = "assistant" // an assistant message: its text and reasoning
	KindCall      = "call"      // a tool call and its result: one card
	KindTitle     = "title"     // a session/title event
	KindEvent     = "event"     // any other event shown as a row (a turn's failure, a model-only replacement, a second result)
)

var kinds = []string{KindUser, KindContext, KindAssistant, KindCall, KindTitle, KindSession, KindEvent}

var statuses = []string{core.StatusRunning, core.StatusIdle, core.StatusEnded, core.StatusInterrupted}

// Query is a parsed search: every clause must hold.
type Query struct {
	Clauses []Clause
}

// Clause holds when any of its terms matches (terms joined by OR), or, when
// Not is set, when none does.
type Clause struct {
	Not   bool
	Terms []Term
}

// Term is one word, phrase or operator.
type Term struct {
	Field Field
	// Words are a text term's terms, in order: one word, or a phrase whose
	// words must appear next to each other in that order.
	Words []string
	// Prefix: the last word (text), or Value (tool:, error:), is a prefix.
	Prefix bool
	// Value is an operator's value: the tool name, the error code ("" for
	// any error), the status, the session id or its start, the kind.
	Value string
	// Time is after:/before:'s instant, in epoch milliseconds.
	Time int64
	// Text is the term as typed.
	Text string
}

// QueryError is a query that cannot be run, with a message that says why
// and what would work. It is coded core.CodeInvalid (HTTP 400).
type QueryError struct {
	Msg string
	// Pos is the byte offset of the trouble in the query (-1 when none).
	Pos int
}

func (e *QueryError) Error() string { return e.Msg }

// ErrorName returns "QueryError".
func (e *QueryError) ErrorName() string { return "QueryError" }

// ErrorCode returns core.CodeInvalid.
func (e *QueryError) ErrorCode() string { return core.CodeInvalid }

func errorf(pos int, format string, args ...any) error {
	return &QueryError{Msg: fmt.Sprintf(format, args...), Pos: pos}
}

// item is one lexed piece of the query.
type item struct {
	pos    int
	text   string // as typed (without a leading -)
	neg    bool
	or     bool   // the OR keyword
	quoted bool   // a "phrase"
	body   string // a phrase's inside, or the word
	op     Field  // an operator's field (FieldText for none)
	value  string // an operator's value (unquoted)
}

// Parse parses a query (see the package documentation for the language);
// now anchors relative times (after:7d). A query that cannot be run is a
// *QueryError.
func Parse(q string, now time.Time) (*Query, error) {
	if len(q) > MaxQueryBytes {
		return nil, errorf(-1, "the query is %d bytes long; at most %d are searched — search for a distinctive part of it", len(q), MaxQueryBytes)
	}
	if !utf8.ValidString(q) {
		return nil, errorf(-1, "the query is not valid UTF-8")
	}
	items, err := lex(q)
	if err != nil {
		return nil, err
	}
	var out Query
	var dropped []string // text that holds nothing searchable
	terms := 0
	for i := 0; i < len(items); i++ {
		it := items[i]
		if it.or {
			return nil, errorf(it.pos, "OR needs a term on each side, e.g. grep OR glob")
		}
		group := []item{it}
		for i+1 < len(items) && items[i+1].or {
			if i+2 >= len(items) || items[i+2].or {
				return nil, errorf(items[i+1].pos, "OR needs a term on each side, e.g. grep OR glob")
			}
			group = append(group, items[i+2])
			i += 2
		}
		var c Clause
		for _, g := range group {
			if g.neg && len(group) > 1 {
				return nil, errorf(g.pos, "an excluded term (-%s) cannot be joined with OR", g.text)
			}
			c.Not = g.neg
			t, ok, err := termOf(g, now)
			if err != nil {
				return nil, err
			}
			if !ok {
				dropped = append(dropped, g.text)
				continue
			}
			c.Terms = append(c.Terms, t)
			terms++
		}
		if len(c.Terms) == 0 {
			continue
		}
		out.Clauses = append(out.Clauses, c)
	}
	if terms > MaxTerms {
		return nil, errorf(-1, "the query has %d terms; at most %d are searched", terms, MaxTerms)
	}
	positive := false
	for _, c := range out.Clauses {
		if !c.Not {
			positive = true
		}
	}
	switch {
	case positive:
		return &out, nil
	case len(out.Clauses) > 0:
		return nil, errorf(-1, "the query only excludes (%s): add a word or a filter to search for, e.g. tool:bash -rm", out.Clauses[0].Terms[0].String(true))
	case len(dropped) > 0:
		return nil, errorf(-1, "%s has no letters or digits to search for (punctuation is not indexed)", quoteList(dropped))
	}
	return nil, errorf(-1, "the query is empty: type words to search for, or a filter such as tool:grep or error:")
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}

// opName matches the operator prefix of an item.
var opName = regexp.MustCompile(`^(?i)(tool|error|status|session|kind|after|before|label|has):`)

func lex(q string) ([]item, error) {
	var items []item
	i := 0
	for i < len(q) {
		r, size := utf8.DecodeRuneInString(q[i:])
		if unicode.IsSpace(r) {
			i += size
			continue
		}
		it := item{pos: i}
		if q[i] == '-' && i+1 < len(q) && q[i+1] != '-' {
			if r, _ := utf8.DecodeRuneInString(q[i+1:]); !unicode.IsSpace(r) {
				it.neg = true
				i++
			}
		}
		start := i
		switch {
		case q[i] == '"':
			end := strings.IndexByte(q[i+1:], '"')
			if end < 0 {
				return nil, errorf(i, "unclosed quote: %s needs a closing \"", clip(q[i:]))
			}
			it.quoted, it.body = true, q[i+1:i+1+end]
			i += end + 2
		case opName.MatchString(q[i:]):
			colon := strings.IndexByte(q[i:], ':')
			it.op = Field(strings.ToLower(q[i : i+colon]))
			i += colon + 1
			if i < len(q) && q[i] == '"' {
				end := strings.IndexByte(q[i+1:], '"')
				if end < 0 {
					return nil, errorf(i, "unclosed quote in %s: add a closing \"", strconv.Quote(clip(q[start:])))
				}
				it.value = q[i+1 : i+1+end]
				i += end + 2
			} else {
				j := i
				for j < len(q) {
					r, size := utf8.DecodeRuneInString(q[j:])
					if unicode.IsSpace(r) {
						break
					}
					j += size
				}
				it.value, i = q[i:j], j
			}
		default:
			j := i
			for j < len(q) && q[j] != '"' {
				r, size := utf8.DecodeRuneInString(q[j:])
				if unicode.IsSpace(r) {
					break
				}
				j += size
			}
			it.body, i = q[i:j], j
			if !it.neg && it.body == "OR" {
				it.or = true
			}
		}
		it.text = q[start:i]
		items = append(items, it)
	}
	return items, nil
}

func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	i := 40
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// termOf turns an item into a term; ok is false for text without anything
// searchable.
func termOf(it item, now time.Time) (Term, bool, error) {
	t := Term{Field: it.op, Text: it.text}
	switch it.op {
	case FieldText:
		body := it.body
		if !it.quoted {
			trimmed := strings.TrimRight(body, "*")
			switch {
			case trimmed == "":
				return t, false, errorf(it.pos, "* alone searches for nothing: put it at the end of a word to find words that start with it, e.g. conf*")
			case strings.HasPrefix(trimmed, "*"):
				return t, false, errorf(it.pos, "%s: a * goes at the end of a word (conf* finds words that start with conf)", strconv.Quote(it.text))
			}
			t.Prefix = trimmed != body
			body = trimmed
		}
		EachToken(body, func(tok Token) bool {
			t.Words = append(t.Words, tok.Term)
			return true
		})
		if len(t.Words) == 0 {
			return t, false, nil
		}
		if t.Prefix && len(t.Words) == 1 && utf8.RuneCountInString(t.Words[0]) < 2 && !isSoloWord(t.Words[0]) {
			return t, false, errorf(it.pos, "%s: a prefix needs at least 2 characters before the *", strconv.Quote(it.text))
		}
		return t, true, nil
	case FieldTool, FieldError:
		v := it.value
		if strings.HasSuffix(v, "*") {
			v = strings.TrimRight(v, "*")
			t.Prefix = true
			if v == "" {
				return t, false, errorf(it.pos, "%s: put the start of a name before the *", it.text)
			}
		}
		if v == "" && it.op == FieldTool {
			return t, false, errorf(it.pos, "tool: needs a tool name, e.g. tool:grep")
		}
		t.Value = v
	case FieldStatus:
		v := strings.ToLower(it.value)
		if !contains(statuses, v) {
			return t, false, errorf(it.pos, "status:%s is not a session status; use one of %s", it.value, strings.Join(statuses, ", "))
		}
		t.Value = v
	case FieldKind:
		v := strings.ToLower(it.value)
		if !contains(kinds, v) {
			return t, false, errorf(it.pos, "kind:%s is not a kind of hit; use one of %s", it.value, strings.Join(kinds, ", "))
		}
		t.Value = v
	case FieldSession:
		if it.value == "" {
			return t, false, errorf(it.pos, "session: needs a session id (or its first characters)")
		}
		t.Value = it.value
	case FieldLabel:
		v := strings.ToLower(strings.TrimSpace(it.value))
		if v == "" {
			return t, false, errorf(it.pos, "label: needs a label, e.g. label:wrong (label:\"two words\" for one with spaces)")
		}
		t.Value = v
	case FieldHas:
		v := strings.ToLower(it.value)
		if v != HasLabel && v != HasComment {
			return t, false, errorf(it.pos, "has:%s is not something a hit has; use has:label or has:comment", it.value)
		}
		t.Value = v
	case FieldAfter, FieldBefore:
		if it.neg {
			other := FieldBefore
			if it.op == FieldBefore {
				other = FieldAfter
			}
			return t, false, errorf(it.pos, "-%s: cannot be excluded; use %s: instead", it.op, other)
		}
		ms, err := parseWhen(it.value, now)
		if err != nil {
			return t, false, errorf(it.pos, "%s:%s: %v", it.op, it.value, err)
		}
		t.Value, t.Time = it.value, ms
	}
	return t, true, nil
}

func isSoloWord(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return isSolo(r)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

var spanRE = regexp.MustCompile(`^(\d{1,6})(m|h|d|w)$`)

// parseWhen reads a day (UTC), an RFC 3339 time, a minute (UTC) or a span
// back from now.
func parseWhen(v string, now time.Time) (int64, error) {
	if m := spanRE.FindStringSubmatch(v); m != nil {
		n, _ := strconv.Atoi(m[1])
		unit := map[string]time.Duration{"m": time.Minute, "h": time.Hour, "d": 24 * time.Hour, "w": 7 * 24 * time.Hour}[m[2]]
		return now.Add(-time.Duration(n) * unit).UnixMilli(), nil
	}
	for _, layout := range []string{"2006-01-02", time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("want a day like 2026-11-01, a time like 2026-11-01T09:30:00Z, or a span back from now like 30m, 12h, 7d or 2w")
}

// String writes the query in canonical form: terms as typed, clauses in
// order. Parsing it again gives the same query.
func (q *Query) String() string {
	var b strings.Builder
	for i, c := range q.Clauses {
		if i > 0 {
			b.WriteByte(' ')
		}
		for j, t := range c.Terms {
			if j > 0 {
				b.WriteString(" OR ")
			}
			b.WriteString(t.String(c.Not))
		}
	}
	return b.String()
}

// String writes the term as typed, with a leading - when not is set.
func (t Term) String(not bool) string {
	if not {
		return "-" + t.Text
	}
	return t.Text
}

// HasText reports whether the query matches words (not only operators).
func (q *Query) HasText() bool {
	for _, c := range q.Clauses {
		for _, t := range c.Terms {
			if t.Field == FieldText && !c.Not {
				return true
			}
		}
	}
	return false
}

// Highlights returns the text terms a hit's snippet marks: those of the
// clauses that are not excluded.
func (q *Query) Highlights() []Term {
	var out []Term
	for _, c := range q.Clauses {
		if c.Not {
			continue
		}
		for _, t := range c.Terms {
			if t.Field == FieldText {
				out = append(out, t)
			}
		}
	}
	return out
}
