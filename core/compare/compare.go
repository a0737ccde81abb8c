// Package compare aligns the tool calls of two sessions, call by call: the
// longest common subsequence of their calls' identities (core.CallKey: the
// tool and its canonical arguments), then, between two aligned calls, the
// calls left over paired by position within the same step and tool. Each
// pair is marked same, arguments differ, result differs or error differs;
// a call without a partner is deleted (only in A) or inserted (only in B).
//
// The alignment reads calls, not events: a 100k-event session is compared
// by its calls alone, and the LCS is bounded (Options.MaxCells); past the
// bound the calls are paired by position within their steps, and
// Result.Notes says so. The package is pure: the caller lists each side's
// calls (views does it from the page's fold).
package compare

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"prism/core"
)

// Call is one tool call of a session as the comparison reads it.
type Call struct {
	// ID is the call's card element id in its session's page (unique in
	// the session); CallID the id the log gives the call.
	ID     string `json:"id"`
	CallID string `json:"callId"`
	// Tool is the tool's name, Args the raw argument string the model
	// sent.
	Tool string `json:"tool"`
	Args string `json:"args"`
	// Result is the result's model content as text; HasResult is false
	// while the call waits for its result (or never got one).
	Result    string `json:"result,omitempty"`
	HasResult bool   `json:"hasResult"`
	// Stopped: the call's step or turn ended without its result (an
	// interrupted call); it waits no more.
	Stopped bool `json:"stopped,omitempty"`
	// IsError is the result's isError; ErrorCode its error code, if any.
	IsError   bool   `json:"isError,omitempty"`
	ErrorCode string `json:"errorCode,omitempty"`
	// Turn and Step are the turn and step numbers the call was made in
	// (-1 outside any).
	Turn int `json:"turn"`
	Step int `json:"step"`
	// CallSeq and ResultSeq are the seqs of its tool/call and tool/result
	// (-1: none).
	CallSeq   int64 `json:"callSeq"`
	ResultSeq int64 `json:"resultSeq"`

	key string
}

// Key is the call's identity for the alignment: core.CallKey of its tool
// and arguments.
func (c *Call) Key() string {
	if c.key == "" {
		c.key = core.CallKey(c.Tool, c.Args)
	}
	return c.key
}

// Mark says how the two calls of a pair differ.
type Mark string

// The marks of a pair.
const (
	// Same: the same tool, canonical arguments, result and error.
	Same Mark = "same"
	// ArgsDiffer: the same tool at the same place in the same step, with
	// other arguments.
	ArgsDiffer Mark = "arguments differ"
	// ResultDiffers: the same call whose result content differs.
	ResultDiffers Mark = "result differs"
	// ErrorDiffers: the same call that failed on one side only, or with
	// another error code.
	ErrorDiffers Mark = "error differs"
	// Pending: the same call still waiting for its result on at least
	// one side; not (yet) a difference. (A call interrupted on one side
	// and answered on the other is an error difference; interrupted on
	// both, the same.)
	Pending Mark = "pending"
	// Deleted: a call of A that B does not make.
	Deleted Mark = "deleted"
	// Inserted: a call of B that A does not make.
	Inserted Mark = "inserted"
)

// Differs reports whether the mark is a difference.
func (m Mark) Differs() bool { return m != Same && m != Pending }

// Pair is one row of the alignment: A's call, B's call or both.
type Pair struct {
	Mark Mark  `json:"mark"`
	A    *Call `json:"a,omitempty"`
	B    *Call `json:"b,omitempty"`
	// Positional: the calls were paired by their place in the step, not
	// by the LCS of their identities.
	Positional bool `json:"positional,omitempty"`
}

// Tool names the pair's tool (A's, else B's).
func (p *Pair) Tool() string {
	if p.A != nil {
		return p.A.Tool
	}
	return p.B.Tool
}

// Options bound an alignment.
type Options struct {
	// MaxCells bounds the LCS table (calls of A × calls of B, once equal
	// heads and tails are set aside); 0 is DefaultMaxCells. Past it the
	// calls are paired by position within their steps.
	MaxCells int
}

// DefaultMaxCells bounds the LCS at 5,000 × 5,000 differing calls: about
// 6 MiB of table and well under a second.
const DefaultMaxCells = 5000 * 5000

// Result is an alignment.
type Result struct {
	Pairs []Pair `json:"pairs"`
	// Differences counts the pairs whose mark Differs.
	Differences int `json:"differences"`
	// Notes say what the alignment did not do as asked (the LCS bound).
	Notes []string `json:"notes,omitempty"`
}

// Align aligns the calls of a and b (each in log order). It does not
// change the calls; the pairs point into the slices.
func Align(a, b []Call, o Options) Result {
	maxCells := o.MaxCells
	if maxCells <= 0 {
		maxCells = DefaultMaxCells
	}
	ka, kb := intern(a, b)
	// Equal heads and tails align as they are.
	pre := 0
	for pre < len(ka) && pre < len(kb) && ka[pre] == kb[pre] {
		pre++
	}
	suf := 0
	for suf < len(ka)-pre && suf < len(kb)-pre && ka[len(ka)-1-suf] == kb[len(kb)-1-suf] {
		suf++
	}
	var r Result
	matches := make([][2]int, 0, pre+suf)
	for i := range pre {
		matches = append(matches, [2]int{i, i})
	}
	ma, mb := ka[pre:len(ka)-suf], kb[pre:len(kb)-suf]
	if cells := len(ma) * len(mb); cells > maxCells {
		r.Notes = append(r.Notes, fmt.Sprintf("%d × %d calls differ, past the alignment's bound of %d cells: "+
			"those calls are paired by their place in each step, not by the longest common subsequence",
			len(ma), len(mb), maxCells))
	} else {
		for _, m := range lcs(ma, mb) {
			matches = append(matches, [2]int{m[0] + pre, m[1] + pre})
		}
	}
	for i := range suf {
		matches = append(matches, [2]int{len(ka) - suf + i, len(kb) - suf + i})
	}
	// Walk the anchors; between two, pair what is left by step.
	ia, ib := 0, 0
	for _, m := range append(matches, [2]int{len(a), len(b)}) {
		r.gap(a[ia:m[0]], b[ib:m[1]])
		if m[0] == len(a) && m[1] == len(b) {
			break
		}
		r.add(Pair{Mark: markOf(&a[m[0]], &b[m[1]]), A: &a[m[0]], B: &b[m[1]]})
		ia, ib = m[0]+1, m[1]+1
	}
	return r
}

func (r *Result) add(p Pair) {
	if p.Mark.Differs() {
		r.Differences++
	}
	r.Pairs = append(r.Pairs, p)
}

// intern numbers the calls' keys: equal keys, equal numbers.
func intern(a, b []Call) (ka, kb []int32) {
	ids := make(map[string]int32, len(a))
	num := func(cs []Call) []int32 {
		out := make([]int32, len(cs))
		for i := range cs {
			k := cs[i].Key()
			n, ok := ids[k]
			if !ok {
				n = int32(len(ids))
				ids[k] = n
			}
			out[i] = n
		}
		return out
	}
	return num(a), num(b)
}

// lcs returns the index pairs of a longest common subsequence of a and b,
// in order: the classic table, filled from the ends, keeping only each
// cell's choice (2 bits) and two rows of lengths.
func lcs(a, b []int32) [][2]int {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return nil
	}
	const (
		diag = 1
		down = 2 // skip a[i]
		// 0: skip b[j]
	)
	choice := make([]byte, (n*m+3)/4)
	set := func(i, j int, v byte) {
		k := i*m + j
		choice[k>>2] |= v << ((k & 3) * 2)
	}
	get := func(i, j int) byte {
		k := i*m + j
		return choice[k>>2] >> ((k & 3) * 2) & 3
	}
	next := make([]int32, m+1) // row i+1
	cur := make([]int32, m+1)  // row i
	for i := n - 1; i >= 0; i-- {
		cur[m] = 0
		for j := m - 1; j >= 0; j-- {
			switch {
			case a[i] == b[j]:
				cur[j] = next[j+1] + 1
				set(i, j, diag)
			case next[j] >= cur[j+1]:
				cur[j] = next[j]
				set(i, j, down)
			default:
				cur[j] = cur[j+1]
			}
		}
		next, cur = cur, next
	}
	out := make([][2]int, 0, next[0])
	for i, j := 0, 0; i < n && j < m; {
		switch get(i, j) {
		case diag:
			out = append(out, [2]int{i, j})
			i++
			j++
		case down:
			i++
		default:
			j++
		}
	}
	return out
}

// slot is where a call sits for positional pairing: its step and tool.
type slot struct {
	turn, step int
	tool       string
}

// gap pairs the calls between two anchors: the k-th call of a tool in a
// step of A with the k-th call of the same tool in the same step of B.
// Rows follow A's order, each inserted call of B before the first pair
// that follows it in B and before A's deleted calls of later steps.
func (r *Result) gap(a, b []Call) {
	if len(a) == 0 && len(b) == 0 {
		return
	}
	byslot := map[slot][]int{}
	for j := range b {
		s := slot{b[j].Turn, b[j].Step, b[j].Tool}
		byslot[s] = append(byslot[s], j)
	}
	partner := make([]int, len(a))
	taken := make([]bool, len(b))
	for i := range a {
		partner[i] = -1
		s := slot{a[i].Turn, a[i].Step, a[i].Tool}
		if q := byslot[s]; len(q) > 0 {
			partner[i], byslot[s] = q[0], q[1:]
			taken[q[0]] = true
		}
	}
	jb := 0
	flush := func(upTo int) {
		for ; jb < upTo; jb++ {
			if !taken[jb] {
				r.add(Pair{Mark: Inserted, B: &b[jb]})
			}
		}
	}
	for i := range a {
		j := partner[i]
		if j < 0 {
			// B's own calls of earlier steps come first.
			for ; jb < len(b) && before(&b[jb], &a[i]); jb++ {
				if !taken[jb] {
					r.add(Pair{Mark: Inserted, B: &b[jb]})
				}
			}
			r.add(Pair{Mark: Deleted, A: &a[i]})
			continue
		}
		flush(j)
		r.add(Pair{Mark: markOf(&a[i], &b[j]), A: &a[i], B: &b[j], Positional: true})
	}
	flush(len(b))
}

// before reports whether x was made in an earlier step than y.
func before(x, y *Call) bool {
	return x.Turn < y.Turn || x.Turn == y.Turn && x.Step < y.Step
}

// markOf marks two paired calls.
func markOf(a, b *Call) Mark {
	switch {
	case a.Key() != b.Key():
		return ArgsDiffer
	case waiting(a) || waiting(b):
		return Pending
	case a.HasResult != b.HasResult: // one was interrupted, the other answered
		return ErrorDiffers
	case a.IsError != b.IsError || a.ErrorCode != b.ErrorCode:
		return ErrorDiffers
	case a.Result != b.Result:
		return ResultDiffers
	}
	return Same
}

// waiting reports whether c still waits for its result.
func waiting(c *Call) bool { return !c.HasResult && !c.Stopped }

// ShortArgs is the call's canonical arguments on one line, cut to n
// characters with "…".
func ShortArgs(c *Call, n int) string {
	s := string(core.CanonicalJSON([]byte(c.Args)))
	s = strings.Join(strings.Fields(s), " ")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return '\uFFFD'
		}
		return r
	}, s)
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

// Summary is one side's totals, shown above the alignment.
type Summary struct {
	Calls        int64 `json:"calls"`
	Errors       int64 `json:"errors"`
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	// Cost is the priced cost ("" without prices; see views.SessionCost).
	Cost string `json:"cost,omitempty"`
	// DurationMS is the time from the first event to the last.
	DurationMS int64 `json:"durationMs"`
	// FilesWritten are the paths that completed file changes touched,
	// each once, in the order first written.
	FilesWritten []string `json:"filesWritten"`
}

// Side is one session of a comparison.
type Side struct {
	ID      string  `json:"id"`
	Title   string  `json:"title"`
	Summary Summary `json:"summary"`
	Calls   []Call  `json:"-"`
}

// Comparison is two sessions and the alignment of their calls.
type Comparison struct {
	A Side `json:"a"`
	B Side `json:"b"`
	Result
}

// Compare aligns the calls of a and b.
func Compare(a, b Side, o Options) *Comparison {
	c := &Comparison{A: a, B: b}
	c.Result = Align(c.A.Calls, c.B.Calls, o)
	return c
}
