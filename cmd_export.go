package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"prism/backend"
	"prism/sources/dsh"
	"prism/sources/otel"
	"prism/store"
	"prism/views"
	"prism/web"
)

// runExport writes one session to stdout: as prism JSONL, with --html as
// one self-contained HTML file (the server's export.html), with --otlp as
// OpenTelemetry GenAI spans (one OTLP/JSON ExportTraceServiceRequest), or
// with --with-notes as a zip in dsh's export layout plus notes.jsonl. With
// --labels it writes instead the labelled calls of every session as a
// dataset (store.ExportLabels).
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := dbFlag(fs)
	html := fs.Bool("html", false, "write one self-contained HTML file (inline CSS, no script) instead of JSONL")
	otlp := fs.Bool("otlp", false, "write the session as OpenTelemetry GenAI spans: one OTLP/JSON ExportTraceServiceRequest (POST it to /v1/traces)")
	withNotes := fs.Bool("with-notes", false, "write a zip in dsh's export layout (session.jsonl, subagents/<id>/session.jsonl) plus notes.jsonl, the notes beside the logs; prism import reads it back")
	labels := fs.Bool("labels", false, "write the labelled calls of every session as a dataset, one JSON object a line (session, call, tool, arguments, result, label, score, note, author, time); no SESSION_ID")
	ids, err := parseInterspersed(fs, args)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if *labels {
		if len(ids) != 0 || *html || *otlp || *withNotes {
			return fmt.Errorf("%w: prism export [--db PATH] --labels takes no SESSION_ID and no other format", errUsage)
		}
		return exportLabels(ctx, *dbPath, stdout, stderr)
	}
	if len(ids) != 1 {
		return fmt.Errorf("%w: prism export [--db PATH] [--html | --otlp | --with-notes] SESSION_ID | prism export [--db PATH] --labels", errUsage)
	}
	if n := btoi(*html) + btoi(*otlp) + btoi(*withNotes); n > 1 {
		return fmt.Errorf("%w: --html, --otlp and --with-notes exclude each other", errUsage)
	}
	if err := storeExists(*dbPath); err != nil {
		return err
	}
	st, err := openStore(ctx, *dbPath, dsh.Limits{}, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	if *withNotes {
		return store.ExportZip(ctx, st, ids[0], stdout)
	}
	if !*html && !*otlp {
		return st.Export(ctx, ids[0], stdout)
	}
	l, err := st.LoadSession(ctx, ids[0])
	if err != nil {
		return err
	}
	if *otlp {
		req, err := otel.Export(l.Info.Header, l.Events)
		if err != nil {
			return err
		}
		js, err := otel.EncodeJSON(req)
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(js, '\n'))
		return err
	}
	presenter, err := backend.Presenters(slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		return err
	}
	t := views.Fold(l.Info.Header, l.Events, presenter)
	bw := bufio.NewWriter(stdout)
	if err := web.WriteExportHTML(ctx, bw, t, web.ExportNote(time.Now(), nil, false)); err != nil {
		return err
	}
	return bw.Flush()
}

// exportLabels writes the labels dataset of the store at dbPath
// (store.ExportLabels) and says on stderr how many labelled calls it holds.
func exportLabels(ctx context.Context, dbPath string, stdout, stderr io.Writer) error {
	if err := storeExists(dbPath); err != nil {
		return err
	}
	st, err := openStore(ctx, dbPath, dsh.Limits{}, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := store.ExportLabels(ctx, st, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "prism export: %d labelled calls\n", n)
	return nil
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
