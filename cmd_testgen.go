package main

import (
	"context"
	"encoding/json"
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
	"strconv"
	"strings"

	"prism/backend"
	"prism/core"
	"prism/core/notes"
	"prism/mcp"
	"prism/sources/dsh"
	"prism/store"
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
	name := fs.String("name", "", "the files' base name (default TOOL_CALLID, lower case; not with --label)")
	pkg := fs.String("package", "", "the test file's package (default: NAME_test of the directory's Go package, else the directory's name)")
	card := fs.String("card", "", "the card's element id, for a call id several cards share (default: the first; not with --label)")
	label := fs.String("label", "", "write a test of every call with this label (case-insensitive), in every session, instead of SESSION_ID CALL_ID")
	force := fs.Bool("force", false, "overwrite files that exist")
	const synopsis = "prism testgen [--db PATH] SESSION_ID CALL_ID -o DIR\n       prism testgen [--db PATH] --label LABEL -o DIR"
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: "+synopsis+"\n\n"+
			"Write a Go test of the recorded call's cards (prismtest) into DIR; with --label,\n"+
			"one test of every call labelled LABEL (a label on a whole session is skipped).\n\n")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if *label != "" {
		switch {
		case len(pos) != 0:
			return fmt.Errorf("%w: --label and SESSION_ID CALL_ID are mutually exclusive: %s", errUsage, synopsis)
		case *name != "" || *card != "":
			return fmt.Errorf("%w: --name and --card pick one call: they do not go with --label", errUsage)
		case *out == "":
			return fmt.Errorf("%w: %s", errUsage, synopsis)
		}
	} else if len(pos) != 2 || *out == "" {
		return fmt.Errorf("%w: %s", errUsage, synopsis)
	}
	if err := storeExists(*dbPath); err != nil {
		return err
	}
	st, err := openStore(ctx, *dbPath, dsh.Limits{}, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	presenter, err := backend.Presenters(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	pkgName := *pkg
	if pkgName == "" {
		if pkgName, err = testPackage(*out); err != nil {
			return err
		}
	}
	var saved []savedCall
	if *label != "" {
		if saved, err = labelledCalls(ctx, st, presenter, *label, pkgName, stderr); err != nil {
			return err
		}
	} else {
		l, err := st.LoadSession(ctx, pos[0])
		if err != nil {
			return err
		}
		c, err := testgen.Find(views.Fold(l.Info.Header, l.Events, presenter), pos[0], pos[1], *card)
		if err != nil {
			return err
		}
		s, err := saveCall(ctx, presenter, l.Info.Header, c, testgen.Options{Name: *name, Package: pkgName}, stderr)
		if err != nil {
			return err
		}
		saved = []savedCall{s}
	}
	if !*force {
		for _, s := range saved {
			for _, f := range s.files {
				p := filepath.Join(*out, filepath.FromSlash(f.Path))
				if _, err := os.Stat(p); err == nil {
					return fmt.Errorf("%s exists: --force overwrites it", p)
				}
			}
		}
	}
	for _, s := range saved {
		for _, f := range s.files {
			p := filepath.Join(*out, filepath.FromSlash(f.Path))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return fmt.Errorf("write the test: %w", err)
			}
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				return fmt.Errorf("write the test: %w", err)
			}
			fmt.Fprintln(stdout, p)
		}
	}
	for _, s := range saved {
		if _, ok := presenter.Get(s.rec.Tool); !ok {
			fmt.Fprintf(stderr, "prism testgen: prism does not know tool %q: register it on the line marked %q in %s\n",
				s.rec.Tool, strings.TrimPrefix(testgen.TODOMarker, "// "), filepath.Join(*out, filepath.FromSlash(s.files[0].Path)))
		}
	}
	return nil
}

// savedCall is one call saved as a test: its recording and its files.
type savedCall struct {
	rec   testgen.Recording
	files []testgen.File
}

// saveCall builds the test files of card c of the session with header h.
// An MCP server's tool prism does not have gets MCP's stand-in registered
// on presenter, with a note on stderr.
func saveCall(ctx context.Context, presenter *core.Registry, h core.SessionHeader, c *views.Card, opts testgen.Options, stderr io.Writer) (savedCall, error) {
	rec, err := testgen.FromCard(h, c)
	if err != nil {
		return savedCall{}, err
	}
	if _, ok := presenter.Get(rec.Tool); !ok {
		if _, _, isMCP := mcp.SplitToolName(rec.Tool); isMCP {
			// The server is not at hand: MCP's own presenters draw the
			// cards, as the generated test's stand-in does.
			standin, err := mcp.Standin(rec.Tool, "", mcp.Presenter{})
			if err != nil {
				return savedCall{}, err
			}
			if err := presenter.Register(standin); err != nil {
				return savedCall{}, fmt.Errorf("register the stand-in of %s: %w", rec.Tool, err)
			}
			fmt.Fprintf(stderr, "prism testgen: %s is an MCP server's tool: its cards are drawn with MCP's own presenters, without the server's title of the tool\n", rec.Tool)
		}
	}
	files, err := testgen.Files(ctx, presenter, rec, opts)
	if err != nil {
		return savedCall{}, err
	}
	return savedCall{rec: rec, files: files}, nil
}

// labelledCalls saves as tests every call, in every session, with a label
// note (not removed) whose label is label, compared case-insensitively.
// A label on a whole session has no call: it is skipped with a note on
// stderr, as is a labelled call with no result yet. Names are each call's
// default, made unique with _2, _3… No such call is an error.
func labelledCalls(ctx context.Context, st store.Store, presenter *core.Registry, label, pkg string, stderr io.Writer) ([]savedCall, error) {
	want, err := notes.CheckLabel(label)
	if err != nil {
		return nil, fmt.Errorf("%w: --label: %w", errUsage, err)
	}
	var saved []savedCall
	used := map[string]bool{}
	o := store.ListOptions{Sort: store.SortCreated, Limit: 1000}
	for {
		page, err := st.ListSessions(ctx, o)
		if err != nil {
			return nil, err
		}
		for _, info := range page.Sessions {
			ns, err := st.Notes(ctx, info.ID, notes.Query{Kind: notes.KindLabel})
			if err != nil {
				return nil, err
			}
			var calls []string
			seen := map[string]bool{}
			for _, n := range ns {
				var d notes.LabelData
				if n.RemovedAt != 0 || json.Unmarshal(n.Data, &d) != nil || !strings.EqualFold(strings.TrimSpace(d.Label), want) {
					continue
				}
				if n.CallID == "" {
					fmt.Fprintf(stderr, "prism testgen: session %s has the label %q on the whole session, not on a call: skipped\n", info.ID, d.Label)
					continue
				}
				if !seen[n.CallID] {
					seen[n.CallID] = true
					calls = append(calls, n.CallID)
				}
			}
			if len(calls) == 0 {
				continue
			}
			l, err := st.LoadSession(ctx, info.ID)
			if err != nil {
				return nil, err
			}
			t := views.Fold(l.Info.Header, l.Events, presenter)
			for _, callID := range calls {
				c, err := testgen.Find(t, info.ID, callID, "")
				if err != nil {
					fmt.Fprintf(stderr, "prism testgen: %v: skipped\n", err)
					continue
				}
				if c.Result == nil {
					fmt.Fprintf(stderr, "prism testgen: call %q of session %s has no result yet: skipped\n", callID, info.ID)
					continue
				}
				rec, err := testgen.FromCard(l.Info.Header, c)
				if err != nil {
					return nil, err
				}
				base := testgen.DefaultName(rec)
				name := base
				for i := 2; used[name]; i++ {
					name = base + "_" + strconv.Itoa(i)
				}
				used[name] = true
				s, err := saveCall(ctx, presenter, l.Info.Header, c, testgen.Options{Name: name, Package: pkg}, stderr)
				if err != nil {
					return nil, err
				}
				saved = append(saved, s)
			}
		}
		if page.NextCursor == "" {
			break
		}
		o.Cursor = page.NextCursor
	}
	if len(saved) == 0 {
		return nil, fmt.Errorf("no call has the label %q", want)
	}
	return saved, nil
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
