// Package redact hides secrets before a session leaves its owner: every
// string a shared link can reveal — tool arguments, content, meta, messages,
// reasoning, the request header, the session's cwd — goes through detectors,
// and each hit is replaced by "[redacted:KIND]". The stored log is never
// changed: redaction works on copies.
//
// Built-in detectors cover private key blocks (and a block's tail without
// its BEGIN line, as a diff hunk may hold it, and lines shaped like a key's
// body without either marker, keybody.go), AWS, GCP, Google OAuth,
// GitHub, GitLab, Anthropic, OpenAI, DeepSeek-style and other "sk-" keys,
// Stripe, Slack, Hugging Face and npm tokens, JWTs, bearer and basic
// credentials, Authorization values, passwords in URLs and secret-looking
// URL parameters, password=/token=/secret= assignments (and JSON members
// with such keys), .env lines with a secret-looking name, and every line of
// a .env file that a call reads or writes. Users add rules of their own
// (New's arguments; prism's --redact-rule).
//
// # Why not gitleaks
//
// gitleaks (github.com/zricethezav/gitleaks/v8, MIT) is the maintained
// detector set one would reach for, and its vendor patterns are the source
// of most of ours. Its Go packages were tried as the engine (v8.30.1) and
// left out, measured on this project's machine:
//
//   - speed: detect.Detector.DetectString takes about 566 µs for a 2 KB
//     string of ordinary code and 12 µs for a 30-byte one (its generic rule
//     runs on most text); a 10,000-event share page renders in tens of
//     milliseconds and would spend seconds in it. This package takes a few
//     microseconds per string (BenchmarkRedactEvents);
//   - weight: the detect package pulls 63 modules (archive formats, viper,
//     cobra, zerolog, lipgloss) into the server and adds 4.4 MB to the
//     binary; even its config package alone needs viper and a dozen more
//     to parse its embedded TOML, through viper's global instance;
//   - API: findings carry the secret's text and a line/column, not byte
//     offsets, so a redactor must search for the text again; and
//   - fit: its rules are tuned to keep false positives out of code scans
//     (entropy thresholds, stopword allowlists), so "password=hunter2",
//     "Authorization: Bearer …", .env lines and AWS secret keys in
//     assignments are not found — for a share a false positive costs a
//     word, a false negative a credential.
//
// # Strings split by a tool
//
// A secret a tool keeps in several strings of one event — read's meta has
// a string per line, grep's a string per match, an MCP result a block per
// line — is found over their joined text: the strings at the same place in
// the elements of an array are joined with newlines, and a hit of a rule
// that can match a newline (the private key rules; a user rule whose syntax
// allows one) that spans elements redacts every element it touches
// (siblings.go).
//
// # Streams
//
// Text streamed in assistant/chunk events is redacted over the whole
// stream, not chunk by chunk (a secret split across chunks is still found):
// a run of chunks finalized by its assistant/message within the same batch
// is redacted as one text and the markers mapped back onto the chunks; the
// text of a run that is still open (a live stream, a link scoped in the
// middle of a message) is withheld until its message commits. Argument
// deltas are always withheld: the tool/call event carries the arguments.
package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"prism/core"
)

// Hit is one detected secret in a string: bytes [Start, End).
type Hit struct {
	Kind       string
	Start, End int
}

// Marker returns the text that replaces a hit of kind.
func Marker(kind string) string { return "[redacted:" + kind + "]" }

// Redactor finds and replaces secrets. It is immutable and safe for
// concurrent use.
type Redactor struct {
	rules   []rule // the built-in detectors, then the user rules, then the .env-file rule
	envFile int    // index of the .env-file rule, which runs only when asked
	kw      keywords
	// ruleKW[r][k]: keyword k is one of rule r's.
	ruleKW [][]bool
	// docKW finds any keyword of any rule or secret JSON key: a JSON
	// document with none has nothing to redact (unless a user rule, which
	// has no keywords, is set).
	docKW  keywords
	custom bool
	// multiKW finds the keywords of the rules that can match a newline,
	// whose hits may span sibling strings (siblings.go); multiAlways is
	// set when such a rule has no keywords (a user rule).
	multiKW     keywords
	multiAlways bool
}

// jsonKeyWords are the words every secret JSON key (secretKeyRE) holds.
var jsonKeyWords = []string{"pass", "secret", "token", "key", "credential", "authorization", "cookie", "session"}

// New returns a redactor with the built-in detectors and the user rules:
// regular expressions (Go syntax) whose matches are secrets of kind
// "custom" — only the submatch named "secret" when the rule has one. A rule
// that does not compile or matches the empty string is refused.
func New(userRules ...string) (*Redactor, error) {
	r := &Redactor{rules: builtinRules()}
	for i, src := range userRules {
		re, err := regexp.Compile(src)
		if err != nil {
			return nil, core.Errorf(core.CodeInvalid, "redact rule %d %q: %v", i+1, src, err)
		}
		if re.MatchString("") {
			return nil, core.Errorf(core.CodeInvalid, "redact rule %d %q matches the empty string", i+1, src)
		}
		ru := rule{kind: KindCustom, re: re}
		if g := re.SubexpIndex("secret"); g > 0 {
			ru.groups = []int{g}
		}
		r.rules = append(r.rules, ru)
		r.custom = true
	}
	r.envFile = len(r.rules)
	r.rules = append(r.rules, envFileRule())
	var idx [][]int
	for _, ru := range r.rules {
		var ks []int
		multi := canMatchNewline(ru)
		if multi && len(ru.keywords) == 0 {
			r.multiAlways = true
		}
		for _, w := range ru.keywords {
			ks = append(ks, r.kw.add(w, ru.fold))
			r.docKW.add(w, ru.fold)
			if multi {
				r.multiKW.add(w, ru.fold)
			}
		}
		idx = append(idx, ks)
	}
	for _, w := range jsonKeyWords {
		r.docKW.add(w, true)
	}
	r.kw.build()
	r.docKW.build()
	r.multiKW.build()
	r.ruleKW = make([][]bool, len(r.rules))
	for i, ks := range idx {
		r.ruleKW[i] = make([]bool, len(r.kw.list))
		for _, k := range ks {
			r.ruleKW[i][k] = true
		}
	}
	return r, nil
}

// Find returns the secrets in s, ordered and non-overlapping: hits of
// different detectors that overlap are merged into one, named by the most
// specific detector.
func (r *Redactor) Find(s string) []Hit { return r.find(s, false) }

// String returns s with every secret replaced by its marker, and the hits
// (offsets into s).
func (r *Redactor) String(s string) (string, []Hit) {
	hits := r.find(s, false)
	return apply(s, hits), hits
}

type rankedHit struct {
	Hit
	prio int
}

func (r *Redactor) find(s string, envFile bool) []Hit {
	if s == "" {
		return nil
	}
	f := finder{s: s, occ: find(&r.kw, s, nil, false)}
	present := make([]bool, len(r.rules))
	for _, o := range f.occ {
		for i, has := range r.ruleKW {
			if has[o.kw] {
				present[i] = true
			}
		}
	}
	for i := range r.rules {
		ru := &r.rules[i]
		switch {
		case i == r.envFile && !envFile:
		case len(ru.keywords) == 0:
			f.search(ru, i, 0, len(s))
		case !present[i]:
		case ru.window == nil:
			f.search(ru, i, 0, len(s))
		default:
			f.windows(ru, i, r.ruleKW[i], r.kw.list)
		}
	}
	for _, h := range keyBodyHits(s) {
		f.hits = append(f.hits, rankedHit{h, len(r.rules)})
	}
	return merge(f.hits)
}

// finder runs the rules over one string.
type finder struct {
	s    string
	occ  []kwHit // every keyword occurrence, by position
	hits []rankedHit
}

// windows searches the rule's window around each occurrence of its
// keywords, skipping occurrences inside what was searched already.
func (f *finder) windows(ru *rule, prio int, mine []bool, list []keyword) {
	covered := 0
	for _, o := range f.occ {
		if !mine[o.kw] || o.p < covered {
			continue
		}
		ws, we, next, ok := ru.window(f.s, o.p, len(list[o.kw].text))
		if !ok {
			continue
		}
		covered = max(covered, next, f.search(ru, prio, ws, we))
	}
}

// search adds the rule's hits in s[ws:we] and returns the end of its last
// match (0 if none).
func (f *finder) search(ru *rule, prio, ws, we int) int {
	end := 0
	var all [][]int
	if len(ru.groups) == 0 && ru.valid == nil && ru.kindOf == nil {
		all = ru.re.FindAllStringIndex(f.s[ws:we], -1) // no submatch wanted: a cheaper search
	} else {
		all = ru.re.FindAllStringSubmatchIndex(f.s[ws:we], -1)
	}
	for _, m := range all {
		for i := range m {
			if m[i] >= 0 {
				m[i] += ws
			}
		}
		end = m[1]
		a, b := m[0], m[1]
		for _, g := range ru.groups {
			if a, b = m[2*g], m[2*g+1]; a >= 0 {
				break
			}
		}
		if a < 0 || a >= b {
			continue
		}
		if ru.valid != nil && !ru.valid(f.s, m, f.s[a:b]) {
			continue
		}
		kind := ru.kind
		if ru.kindOf != nil {
			kind = ru.kindOf(f.s, m)
		}
		f.hits = append(f.hits, rankedHit{Hit{Kind: kind, Start: a, End: b}, prio})
	}
	return end
}

// merge orders hits and merges overlapping ones: the union of their bytes
// is hidden, named by the hit that starts first (the more specific
// detector's, then the longer, on a tie).
func merge(hits []rankedHit) []Hit {
	if len(hits) == 0 {
		return nil
	}
	slices.SortFunc(hits, func(a, b rankedHit) int {
		switch {
		case a.Start != b.Start:
			return a.Start - b.Start
		case a.prio != b.prio:
			return a.prio - b.prio
		default:
			return b.End - a.End
		}
	})
	out := []Hit{hits[0].Hit}
	for _, h := range hits[1:] {
		last := &out[len(out)-1]
		if h.Start < last.End {
			last.End = max(last.End, h.End)
			continue
		}
		out = append(out, h.Hit)
	}
	return out
}

// apply replaces each hit of s by its marker.
func apply(s string, hits []Hit) string {
	if len(hits) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	pos := 0
	for _, h := range hits {
		b.WriteString(s[pos:h.Start])
		b.WriteString(Marker(h.Kind))
		pos = h.End
	}
	b.WriteString(s[pos:])
	return b.String()
}

// mayHaveSecrets is the fast path for a JSON document: false when no
// detector can match any of its strings.
func (r *Redactor) mayHaveSecrets(doc []byte, envFile bool) bool {
	if r.custom || envFile && bytes.IndexByte(doc, '=') >= 0 {
		return true
	}
	return len(find(&r.docKW, doc, nil, true)) > 0 || hasKeyLines(doc)
}

// Header returns a copy of h with its free-text fields (cwd, origin, agent
// preset) redacted, and the kinds found.
func (r *Redactor) Header(h core.SessionHeader) (core.SessionHeader, []string) {
	var kinds []string
	for _, f := range []*string{&h.Cwd, &h.Origin, &h.AgentPreset} {
		out, hits := r.String(*f)
		for _, hit := range hits {
			kinds = append(kinds, hit.Kind)
		}
		*f = out
	}
	return h, kinds
}

// maxNesting bounds how deep JSON held in strings (tool arguments are a
// JSON text inside the event's JSON) is parsed.
const maxNesting = 4

// exemptKeys hold identifiers and discriminants, never free text: their
// values stay as they are, so calls still pair with their results.
var exemptKeys = map[string]bool{"id": true, "callId": true, "toolCallId": true, "type": true, "kind": true, "role": true}

// docWalk rewrites the strings of one JSON document.
type docWalk struct {
	r       *Redactor
	envFile bool
	kinds   []string // kinds of the hits, in order
	// override, if set, replaces the string at a key path (chunk text).
	override func(path []string) (string, bool)
	path     []string
}

// JSON returns doc (valid JSON) with every string redacted, and the kinds
// of the hits; doc itself when nothing was found. Invalid JSON is redacted
// as text and returned as a JSON string.
func (r *Redactor) JSON(doc []byte) ([]byte, []string) {
	w := &docWalk{r: r}
	if !json.Valid(doc) {
		return w.text(doc), w.kinds
	}
	out, _ := w.document(doc, 0)
	return out, w.kinds
}

// text redacts b as text and returns it as a JSON string.
func (w *docWalk) text(b []byte) []byte {
	s, hits := w.r.String(string(b))
	for _, h := range hits {
		w.kinds = append(w.kinds, h.Kind)
	}
	out, _ := core.MarshalNoEscape(s)
	return out
}

// document redacts the strings of a JSON document. It returns doc itself
// when nothing changed, and ok false (with nothing recorded) when doc is
// not valid JSON.
func (w *docWalk) document(doc []byte, depth int) ([]byte, bool) {
	if w.override == nil && !w.r.mayHaveSecrets(doc, w.envFile) {
		return doc, true // valid or not: no detector can match it
	}
	kinds := len(w.kinds)
	sc := scanner{w: w, src: doc, depth: depth, out: make([]byte, 0, len(doc))}
	if w.r.spansLines(doc) {
		sc.cross = w.siblingOverrides(doc)
	}
	i := sc.space(0)
	i, changed, err := sc.value(i, "", 0)
	if err == nil && sc.space(i) != len(doc) {
		err = errSyntax
	}
	if err != nil {
		w.kinds = w.kinds[:kinds]
		return nil, false
	}
	if !changed {
		return doc, true
	}
	return sc.out, true
}

// errSyntax reports a document that is not valid JSON.
var errSyntax = errors.New("invalid JSON")

// maxDepth bounds the nesting of arrays and objects.
const maxDepth = 10000

// scanner is a strict JSON parser that copies its input to out, rewriting
// the strings the walk redacts.
type scanner struct {
	w     *docWalk
	src   []byte
	out   []byte
	depth int // nesting of JSON documents held in strings
	// cross replaces the strings that a hit spanning sibling strings
	// touches, by place (siblingOverrides); at is the place being read,
	// kept only when cross is set.
	cross map[string]string
	at    []string
}

// space copies whitespace from i on and returns the index after it.
func (sc *scanner) space(i int) int {
	for i < len(sc.src) && isSpace(sc.src[i]) {
		sc.out = append(sc.out, sc.src[i])
		i++
	}
	return i
}

// value parses the value at i (after whitespace) and returns the index
// after it and whether a string in it changed.
func (sc *scanner) value(i int, key string, level int) (int, bool, error) {
	if i >= len(sc.src) || level > maxDepth {
		return i, false, errSyntax
	}
	switch c := sc.src[i]; {
	case c == '{' || c == '[':
		return sc.container(i, level)
	case c == '"':
		end, err := stringEnd(sc.src, i)
		if err != nil {
			return i, false, err
		}
		lit := sc.src[i:end]
		orig := decodeString(lit)
		s := orig
		if sc.cross != nil {
			if v, ok := sc.cross[crossKey(sc.at)]; ok {
				s = v // touched by a hit spanning sibling strings
			}
		}
		ns, changed := sc.w.str(s, key, sc.depth)
		if changed = changed || s != orig; !changed {
			sc.out = append(sc.out, lit...)
			return end, false, nil
		}
		b, _ := core.MarshalNoEscape(ns)
		sc.out = append(sc.out, b...)
		return end, true, nil
	case c == 't', c == 'f', c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(sc.src[i:], []byte(lit)) {
				sc.out = append(sc.out, lit...)
				return i + len(lit), false, nil
			}
		}
		return i, false, errSyntax
	default:
		end := numberEnd(sc.src, i)
		if end == i {
			return i, false, errSyntax
		}
		sc.out = append(sc.out, sc.src[i:end]...)
		return end, false, nil
	}
}

// container parses an object or array at i.
func (sc *scanner) container(i, level int) (int, bool, error) {
	obj := sc.src[i] == '{'
	closer := byte(']')
	if obj {
		closer = '}'
	}
	sc.out = append(sc.out, sc.src[i])
	i = sc.space(i + 1)
	changed := false
	if i < len(sc.src) && sc.src[i] == closer {
		sc.out = append(sc.out, closer)
		return i + 1, false, nil
	}
	for n := 0; ; n++ {
		key := ""
		if !obj && sc.cross != nil {
			sc.at = append(sc.at, "i"+strconv.Itoa(n))
		}
		if obj {
			if i >= len(sc.src) || sc.src[i] != '"' {
				return i, false, errSyntax
			}
			end, err := stringEnd(sc.src, i)
			if err != nil {
				return i, false, err
			}
			key = decodeString(sc.src[i:end])
			sc.out = append(sc.out, sc.src[i:end]...)
			i = sc.space(end)
			if i >= len(sc.src) || sc.src[i] != ':' {
				return i, false, errSyntax
			}
			sc.out = append(sc.out, ':')
			i = sc.space(i + 1)
			sc.w.path = append(sc.w.path, key)
			if sc.cross != nil {
				sc.at = append(sc.at, "k"+key)
			}
		}
		var c bool
		var err error
		i, c, err = sc.value(i, key, level+1)
		if obj {
			sc.w.path = sc.w.path[:len(sc.w.path)-1]
		}
		if sc.cross != nil {
			sc.at = sc.at[:len(sc.at)-1]
		}
		if err != nil {
			return i, false, err
		}
		changed = changed || c
		i = sc.space(i)
		if i >= len(sc.src) {
			return i, false, errSyntax
		}
		switch sc.src[i] {
		case ',':
			sc.out = append(sc.out, ',')
			i = sc.space(i + 1)
		case closer:
			sc.out = append(sc.out, closer)
			return i + 1, changed, nil
		default:
			return i, false, errSyntax
		}
	}
}

// str redacts one string value found under key.
func (w *docWalk) str(s, key string, depth int) (string, bool) {
	if w.override != nil {
		if v, ok := w.override(w.path); ok {
			return v, v != s
		}
	}
	if s == "" || exemptKeys[key] {
		return s, false
	}
	if key != "" && secretKeyRE.MatchString(key) && !placeholder(s, true) && !strings.HasPrefix(s, "[redacted:") {
		kind := kindForKey(key)
		w.kinds = append(w.kinds, kind)
		return Marker(kind), true
	}
	if depth < maxNesting && looksLikeJSON(s) {
		saved, savedOverride := w.path, w.override
		w.path, w.override = nil, nil
		out, ok := w.document([]byte(s), depth+1)
		w.path, w.override = saved, savedOverride
		if ok {
			return string(out), string(out) != s
		}
	}
	hits := w.r.find(s, w.envFile)
	if len(hits) == 0 {
		return s, false
	}
	for _, h := range hits {
		w.kinds = append(w.kinds, h.Kind)
	}
	return apply(s, hits), true
}

func kindForKey(key string) string {
	k := strings.ToLower(key)
	switch {
	case strings.Contains(k, "authorization"):
		return KindAuthorization
	case strings.Contains(k, "cookie"), strings.Contains(k, "session"):
		return KindToken
	}
	return kindForName(k)
}

func looksLikeJSON(s string) bool {
	t := strings.TrimLeft(s, " \t\r\n")
	return t != "" && (t[0] == '{' || t[0] == '[')
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// stringEnd returns the index after the string literal starting at
// src[i] == '"', checking its escapes and that it holds no control
// character.
func stringEnd(src []byte, i int) (int, error) {
	j := i + 1
	for j < len(src) {
		switch c := src[j]; {
		case c == '"':
			return j + 1, nil
		case c < 0x20:
			return j, errSyntax
		case c == '\\':
			if j+1 >= len(src) {
				return j, errSyntax
			}
			switch src[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(src) {
					return j, errSyntax
				}
				for _, h := range src[j+2 : j+6] {
					if !isHex(h) {
						return j, errSyntax
					}
				}
				j += 6
			default:
				return j, errSyntax
			}
		default:
			j++
		}
	}
	return j, errSyntax
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// numberEnd returns the index after the JSON number at src[i] (i itself
// when there is none): -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
func numberEnd(src []byte, i int) int {
	j := i
	if j < len(src) && src[j] == '-' {
		j++
	}
	switch {
	case j < len(src) && src[j] == '0':
		j++
	case j < len(src) && src[j] >= '1' && src[j] <= '9':
		for j < len(src) && isDigit(src[j]) {
			j++
		}
	default:
		return i
	}
	if j < len(src) && src[j] == '.' {
		k := j + 1
		for k < len(src) && isDigit(src[k]) {
			k++
		}
		if k == j+1 {
			return i
		}
		j = k
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		d := k
		for k < len(src) && isDigit(src[k]) {
			k++
		}
		if k == d {
			return i
		}
		j = k
	}
	return j
}

// decodeString decodes a valid JSON string literal.
func decodeString(lit []byte) string {
	inner := lit[1 : len(lit)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner)
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return string(inner) // unreachable: src is valid JSON
	}
	return s
}
