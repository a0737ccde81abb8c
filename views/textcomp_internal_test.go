package views

import (
	"context"
	"html"
	"strings"
	"testing"
)

// escapeSeeds are texts that exercise every escaped character, the
// invisible-character markers clean puts in place, text that merely looks
// like a marker, and invalid UTF-8.
var escapeSeeds = []string{
	"", "plain", `<a href="x">&'</a>`, "rtl \u202e override", "<U+202E> typed by hand", "<U+", "&lt;U+202E>",
	"zero\u200bwidth and \u2066isolate\u2069", "\xff\xfe bytes", "tab\tand \x1b[31mcolour\x1b[0m",
}

// FuzzAppendMarked: appendMarked writes exactly what escapeMarked returns
// (and appendEscaped what html.EscapeString does), after whatever the
// buffer held, for any text — clean or not.
func FuzzAppendMarked(f *testing.F) {
	for _, s := range escapeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, s := range []string{s, clean(s)} {
			if got, want := string(appendMarked([]byte("pre>"), s)), "pre>"+escapeMarked(s); got != want {
				t.Fatalf("appendMarked(%q) = %q, want %q", s, got, want)
			}
			if got, want := string(appendEscaped(nil, s)), html.EscapeString(s); got != want {
				t.Fatalf("appendEscaped(%q) = %q, want %q", s, got, want)
			}
		}
	})
}

// TestClipLinesAsJoined: clipLines writes, in batches, the lines escaped
// and joined with their cut markers — as building the whole text would —
// for a clip far larger than one batch, with markers and cuts throughout.
func TestClipLinesAsJoined(t *testing.T) {
	var ls []Line
	for i := range 5000 {
		s := escapeSeeds[i%len(escapeSeeds)] + strings.Repeat("x<", i%50)
		ls = append(ls, Line{N: i + 1, Text: clean(s), Cut: i % 7 * 1000})
	}
	var want strings.Builder
	for i, l := range ls {
		if i > 0 {
			want.WriteByte('\n')
		}
		want.WriteString(escapeMarked(l.Text))
		if l.Cut > 0 {
			want.WriteString(`<span class="cut">… +` + Count(l.Cut) + ` chars</span>`)
		}
	}
	if want.Len() < 4*clipBatch {
		t.Fatalf("the clip is %d bytes, not several batches", want.Len())
	}
	for _, n := range []int{0, 1, 2, len(ls)} {
		var got strings.Builder
		if err := clipLines(ls[:n]).Render(context.Background(), &got); err != nil {
			t.Fatal(err)
		}
		w := want.String()
		if n < len(ls) {
			w = strings.Join(strings.SplitAfterN(w, "\n", n+1)[:n], "")
			w = strings.TrimSuffix(w, "\n")
		}
		if got.String() != w {
			t.Fatalf("%d lines: clipLines wrote %d bytes, want %d:\n%.300q\nwant\n%.300q", n, got.Len(), len(w), got.String(), w)
		}
	}
}

// TestCodeTokensAsJoined: codeTokens writes each token escaped, in its
// class's span, and the cut marker — as it did building a string.
func TestCodeTokensAsJoined(t *testing.T) {
	var l CodeLine
	for i, s := range escapeSeeds {
		cls := []string{"", "kw", `s "q"`}[i%3]
		l.Tokens = append(l.Tokens, Token{Class: cls, Text: clean(s)})
	}
	for _, cut := range []int{0, 1234} {
		l.Cut = cut
		var want strings.Builder
		for _, tk := range l.Tokens {
			if tk.Class == "" {
				want.WriteString(escapeMarked(tk.Text))
				continue
			}
			want.WriteString(`<span class="` + html.EscapeString(tk.Class) + `">` + escapeMarked(tk.Text) + `</span>`)
		}
		if cut > 0 {
			want.WriteString(`<span class="cut">… +` + Count(cut) + ` chars</span>`)
		}
		var got strings.Builder
		if err := codeTokens(l).Render(context.Background(), &got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("cut %d: codeTokens wrote\n%q\nwant\n%q", cut, got.String(), want.String())
		}
	}
}
