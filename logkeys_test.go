package main_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// logCalls are the log/slog methods whose arguments after skip are
// key-value pairs (or attributes).
var logCalls = map[string]int{"Debug": 1, "Info": 1, "Warn": 1, "Error": 1,
	"DebugContext": 2, "InfoContext": 2, "WarnContext": 2, "ErrorContext": 2, "With": 0, "Log": 3}

// TestLogKeysAreConstants: no log call in production code spells a key as
// a string literal; keys are package logkey's constants, so one fact has
// one key everywhere.
func TestLogKeysAreConstants(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.HasSuffix(p, "_templ.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "slog" && sel.Sel.Name != "New" {
				// slog.String("key", …) and friends.
				if len(call.Args) > 0 {
					if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING && sel.Sel.Name != "NewTextHandler" {
						t.Errorf("%s: slog.%s key %s is a literal; use a logkey constant", fset.Position(lit.Pos()), sel.Sel.Name, lit.Value)
					}
				}
				return true
			}
			skip, ok := logCalls[sel.Sel.Name]
			if !ok || len(call.Args) <= skip {
				return true
			}
			checked++
			for i := skip; i < len(call.Args); i += 2 {
				if lit, ok := call.Args[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					t.Errorf("%s: log key %s is a literal; use a logkey constant", fset.Position(lit.Pos()), lit.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 30 {
		t.Fatalf("only %d log calls found: is the walk broken?", checked)
	}
}
