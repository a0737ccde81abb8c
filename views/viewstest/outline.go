// Package viewstest helps tests compare rendered HTML: Outline writes a
// fragment in the readable, diffable form prism's goldens hold. It is for
// tests only; production code never imports it (TestImportDirections holds
// that).
package viewstest

import "prism/views/testgen"

// Outline writes an HTML fragment (parsed as the children of a <body>) as
// an outline: one element per line, indented two spaces per depth, its
// attributes in source order as name="value", and each non-blank text node
// on a line of its own, quoted (testgen.Outline, which prism testgen's
// goldens use too).
func Outline(fragment string) (string, error) { return testgen.Outline(fragment) }

// Quote writes s between double quotes, escaping '"', '\\', newlines and
// tabs (and nothing else).
func Quote(s string) string { return testgen.Quote(s) }
