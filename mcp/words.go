package mcp

import (
	"errors"
	"fmt"
	"strings"
)

// splitWords splits s into words by the quoting rules of a POSIX shell's
// command line (POSIX.1-2024, Shell Command Language, 2.2 Quoting and 2.3
// Token Recognition), without any expansion and without running anything:
//
//   - spaces, tabs, carriage returns and newlines separate words;
//   - a backslash outside quotes keeps the next character literally, and a
//     backslash before a newline joins the lines;
//   - single quotes keep every character up to the next single quote;
//   - inside double quotes a backslash escapes only $, `, ", \ and a
//     newline (which it removes) and is kept before anything else;
//   - a # that begins a word starts a comment that runs to the end of the line;
//   - an empty pair of quotes, single or double, makes an empty word.
//
// $, `, ~, globs, ;, |, & and redirections are ordinary characters: the
// words are a program and its arguments, never shell code. A quote left open
// or a backslash at the very end is an error.
func splitWords(s string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool // a word has started, even if it is still empty ("")
	)
	end := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\r', '\n':
			end()
		case '\\':
			if i+1 == len(s) {
				return nil, errors.New("a backslash at the end escapes nothing")
			}
			i++
			if s[i] != '\n' {
				word.WriteByte(s[i])
				inWord = true
			}
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("no closing quote for the ' at byte %d", i)
			}
			word.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += 1 + j
		case '"':
			open := i
			inWord = true
			for i++; ; i++ {
				if i == len(s) {
					return nil, fmt.Errorf("no closing quote for the \" at byte %d", open)
				}
				if s[i] == '"' {
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				word.WriteByte(s[i])
			}
		case '#':
			if inWord {
				word.WriteByte(c)
				continue
			}
			nl := strings.IndexByte(s[i:], '\n')
			if nl < 0 {
				i = len(s)
			} else {
				i += nl
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	end()
	return words, nil
}
