package search

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// sortedSpans returns spans ordered by start, then end.
func sortedSpans(s []span) []span {
	out := slices.Clone(s)
	slices.SortFunc(out, func(a, b span) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return a.end - b.end
	})
	return out
}

// checkASCIISpans fails unless asciiSpans finds in text what tokenSpans
// finds (or declines, for text or words that are not ASCII).
func checkASCIISpans(t *testing.T, text string, terms []Term) {
	t.Helper()
	got, ok := asciiSpans(text, terms)
	if !ok {
		for i := 0; i < len(text); i++ {
			if text[i] >= 0x80 {
				return
			}
		}
		for _, x := range terms {
			for _, w := range x.Words {
				if x.Field == FieldText && !isASCIITerm(w) {
					return
				}
			}
		}
		t.Fatalf("asciiSpans declined ASCII text %q and ASCII terms %+v", text, terms)
	}
	if want := tokenSpans(text, terms); !slices.Equal(sortedSpans(got), sortedSpans(want)) {
		t.Fatalf("text %q, terms %+v: asciiSpans %v, tokenSpans %v", text, terms, sortedSpans(got), sortedSpans(want))
	}
}

// TestASCIISpansAsTokens holds that the tokenizer-free matching finds what
// matching the tokens finds: words at run starts and inside runs, upper
// case, phrases across punctuation, prefixes, and words cut at
// MaxTermBytes.
func TestASCIISpansAsTokens(t *testing.T) {
	long := strings.Repeat("x", MaxTermBytes)
	for _, tc := range []struct {
		text  string
		terms []Term
	}{
		{"path: config.yaml, CONFIG reconfig configs", []Term{{Field: FieldText, Words: []string{"config"}}}},
		{"Configure the CONFIG", []Term{{Field: FieldText, Words: []string{"conf"}, Prefix: true}}},
		{"command: rm  -rf /tmp/x; rm x", []Term{{Field: FieldText, Words: []string{"rm", "rf"}}}},
		{"fmt.Sprintf(fmt) fmt. sprintf", []Term{{Field: FieldText, Words: []string{"fmt", "sprintf"}}}},
		{"a.b.c a b", []Term{{Field: FieldText, Words: []string{"a", "b"}}, {Field: FieldText, Words: []string{"b", "c"}}}},
		{long + "yyy " + long, []Term{{Field: FieldText, Words: []string{long}}}},
		{long + "yyy " + long, []Term{{Field: FieldText, Words: []string{long[:10]}, Prefix: true}}},
		{"aaaa aa aaa", []Term{{Field: FieldText, Words: []string{"aa"}}}},
		{"tool bash", []Term{{Field: FieldTool, Value: "bash"}, {Field: FieldText, Words: []string{"bash"}}}},
		{"café config", []Term{{Field: FieldText, Words: []string{"config"}}}},
		{"config", []Term{{Field: FieldText, Words: []string{"café"}}}},
		{"", []Term{{Field: FieldText, Words: []string{"x"}}}},
		{"x", []Term{{Field: FieldText, Words: []string{""}}}},
	} {
		checkASCIISpans(t, tc.text, tc.terms)
	}
	// Random texts over a small alphabet, so that words recur, and terms
	// made of their words.
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := "abAB01 ._-\n"
	for range 3000 {
		var b strings.Builder
		for range r.IntN(60) {
			if r.IntN(40) == 0 {
				b.WriteString(strings.Repeat("ab", MaxTermBytes/2+r.IntN(4)))
			}
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		text := b.String()
		toks := Tokens(text)
		var terms []Term
		for range 1 + r.IntN(3) {
			n := 1 + r.IntN(3)
			var words []string
			if len(toks) > 0 && r.IntN(4) > 0 {
				at := r.IntN(len(toks))
				for k := at; k < len(toks) && k < at+n; k++ {
					words = append(words, toks[k].Term)
				}
			} else {
				for range n {
					words = append(words, Normalize(string(alphabet[r.IntN(4)])+string(alphabet[r.IntN(6)])))
				}
			}
			prefix := r.IntN(3) == 0
			if prefix && len(words) > 0 {
				w := words[len(words)-1]
				words[len(words)-1] = w[:1+r.IntN(len(w))]
			}
			terms = append(terms, Term{Field: FieldText, Words: words, Prefix: prefix})
		}
		checkASCIISpans(t, text, terms)
	}
}

// FuzzASCIISpans holds asciiSpans to tokenSpans on any text and word.
func FuzzASCIISpans(f *testing.F) {
	f.Add("path: config.yaml CONFIG", "config", "", false)
	f.Add("rm -rf /", "rm", "rf", false)
	f.Add("Configure", "conf", "", true)
	f.Fuzz(func(t *testing.T, text, w1, w2 string, prefix bool) {
		var words []string
		for _, w := range []string{w1, w2} {
			if w = Normalize(w); w != "" {
				words = append(words, w)
			}
		}
		checkASCIISpans(t, text, []Term{{Field: FieldText, Words: words, Prefix: prefix}})
	})
}

// BenchmarkMatchSpans compares the tokenizer-free matching of an ASCII
// result with matching its tokens.
func BenchmarkMatchSpans(b *testing.B) {
	text := strings.Repeat("func (s *Server) loadConfig(path string) error { return os.ReadFile(path) }\n", 14)
	terms := []Term{{Field: FieldText, Words: []string{"config"}}}
	b.Run("ascii", func(b *testing.B) {
		for b.Loop() {
			asciiSpans(text, terms)
		}
	})
	b.Run("tokens", func(b *testing.B) {
		for b.Loop() {
			tokenSpans(text, terms)
		}
	})
}
