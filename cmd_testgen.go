package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"prism/backend"
	"prism/mcp"
	"prism/sources/dsh"
	"prism/views"
	"prism/views/testgen"
)

// runTestgen writes a Go test of one recorded call's cards into a
// directory ("save as test"): NAME_test.go, which uses prismtest,
// testdata/NAME.call.json (the recorded raw arguments and result) and
// testdata/NAME.golden (both cards as this build renders them). It prints
// the paths it wrote. A call the session does not have exits with status 1
// naming it; a tool prism does not know still gets its files, and a note
// on stderr points to the line of the test where it is to be registered.
// An MCP server's tool needs no server: a stand-in with MCP's own
// presenters draws its cards, here and in the test (mcp.Standin).
func runTestgen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("testgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := dbFlag(fs)
	out := fs.String("o", "", "the directory to write into: the test's package directory (created if missing; required)")
	name := fs.String("name", "", "the files' base name (default TOOL_CALLID, lower case)")
	pkg := fs.String("package", "", "the test file's package (default: NAME_test of the directory's Go package, else the directory's name)")
	card := fs.String("card", "", "the card's element id, for a call id several cards share (default: the first)")
	force := fs.Bool("force", false, "overwrite files that exist")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: prism testgen [--db PATH] SESSION_ID CALL_ID -o DIR\n\n"+
			"Write a Go test of the recorded call's cards (prismtest) into DIR.\n\n")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if len(pos) != 2 || *out == "" {
		return fmt.Errorf("%w: prism testgen [--db PATH] SESSION_ID CALL_ID -o DIR", errUsage)
	}
	sessionID, callID := pos[0], pos[1]
	if err := storeExists(*dbPath); err != nil {
		return err
	}
	st, err := openStore(ctx, *dbPath, dsh.Limits{}, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	l, err := st.LoadSession(ctx, sessionID)
	if err != nil {
		return err
	}
	presenter, err := backend.Presenters(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	t := views.Fold(l.Info.Header, l.Events, presenter)
	c, err := testgen.Find(t, sessionID, callID, *card)
	if err != nil {
		return err
	}
	rec, err := testgen.FromCard(l.Info.Header, c)
	if err != nil {
		return err
	}
	if _, ok := presenter.Get(rec.Tool); !ok {
		if _, _, isMCP := mcp.SplitToolName(rec.Tool); isMCP {
			// The server is not at hand: MCP's own presenters draw the
			// cards, as the generated test's stand-in does.
			standin, err := mcp.Standin(rec.Tool, "", mcp.Presenter{})
			if err != nil {
				return err
			}
			if err := presenter.Register(standin); err != nil {
				return fmt.Errorf("register the stand-in of %s: %w", rec.Tool, err)
			}
			fmt.Fprintf(stderr, "prism testgen: %s is an MCP server's tool: its cards are drawn with MCP's own presenters, without the server's title of the tool\n", rec.Tool)
		}
	}
	opts := testgen.Options{Name: *name}
	if opts.Package = *pkg; opts.Package == "" {
		if opts.Package, err = testPackage(*out); err != nil {
			return err
		}
	}
	files, err := testgen.Files(ctx, presenter, rec, opts)
	if err != nil {
		return err
	}
	if !*force {
		for _, f := range files {
			p := filepath.Join(*out, filepath.FromSlash(f.Path))
			if _, err := os.Stat(p); err == nil {
				return fmt.Errorf("%s exists: --force overwrites it", p)
			}
		}
	}
	for _, f := range files {
		p := filepath.Join(*out, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("write the test: %w", err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return fmt.Errorf("write the test: %w", err)
		}
		fmt.Fprintln(stdout, p)
	}
	if _, ok := presenter.Get(rec.Tool); !ok {
		fmt.Fprintf(stderr, "prism testgen: prism does not know tool %q: register it on the line marked %q in %s\n",
			rec.Tool, strings.TrimPrefix(testgen.TODOMarker, "// "), filepath.Join(*out, filepath.FromSlash(files[0].Path)))
	}
	return nil
}

// testPackage is the package clause of a test written into dir: the
// external test package (NAME_test) of the Go package dir holds, or a
// package named after dir when it holds none.
func testPackage(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read the directory %s: %w", dir, err)
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, n), nil, parser.PackageClauseOnly)
		if err != nil {
			continue
		}
		return f.Name.Name + "_test", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("the directory %s: %w", dir, err)
	}
	return testgen.PackageName(filepath.Base(abs)), nil
}
