package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"time"

	"prism/core/notes"
	"prism/db"
	"prism/pgstore"
	"prism/store"
)

// runMigrate copies every session of a SQLite file, with its share links
// and its notes (labels, links…; removed ones too, ids and times kept), the
// received OpenTelemetry spans and the owner logins that have not expired,
// into a PostgreSQL database:
//
//	prism migrate --from prism.db --to postgres://…
//
// Each session is copied in a transaction of its own and checked at once
// (its last seq and summary in the target equal the source's); a session
// already in the target is left (same log), extended (the target has a
// prefix of it: an interrupted run, or a session that grew) or reported as
// a conflict (a different log), so running the command again after an
// interruption resumes it. Notes, spans and logins already in the target
// are left. At the end the counts of sessions, events, share links, notes
// and spans are compared. Stop the prism that writes the SQLite file
// first: sessions that change during the copy may be missed.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the SQLite file to copy from")
	to := fs.String("to", os.Getenv("PRISM_DB"), "the PostgreSQL URL to copy to, postgres://… (env PRISM_DB)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	case *from == "" || *to == "":
		return fmt.Errorf("%w: prism migrate --from prism.db --to postgres://user@host:port/database", errUsage)
	case pgstore.IsURL(*from):
		return fmt.Errorf("%w: --from must be a SQLite file (copying from PostgreSQL is not supported)", errUsage)
	case !pgstore.IsURL(*to):
		return fmt.Errorf("%w: --to must be a postgres:// URL, got %q", errUsage, *to)
	}
	if _, err := os.Stat(*from); err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	src, err := db.Open(ctx, *from, db.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := pgstore.Open(ctx, *to, pgstore.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer dst.Close()
	m := migration{src: src, dst: dst, out: stderr}
	if err := m.run(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "copied %d sessions (%d created, %d extended, %d already there), %d events, %d share links, %d notes, %d spans, %d owner logins; counts and last seqs verified\n",
		m.sessions, m.created, m.extended, m.unchanged, m.events, m.shares, m.notes, m.spans, m.logins)
	return nil
}

// migration copies one SQLite store into a PostgreSQL one.
type migration struct {
	src *db.Store
	dst *pgstore.Store
	out io.Writer

	sessions, created, extended, unchanged int
	events, shares, notes, spans, logins   int64
	conflicts                              []error
}

func (m *migration) run(ctx context.Context) error {
	total, err := m.src.Counts(ctx)
	if err != nil {
		return err
	}
	cursor := ""
	for {
		page, err := m.src.ListSessions(ctx, store.ListOptions{Limit: 1000, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, info := range page.Sessions {
			if err := m.copy(ctx, info); err != nil {
				if errors.Is(err, ctx.Err()) || ctx.Err() != nil {
					return fmt.Errorf("interrupted after %d of %d sessions (run the command again to resume): %w", m.sessions, total.Sessions, err)
				}
				m.conflicts = append(m.conflicts, err)
				fmt.Fprintf(m.out, "prism migrate: %v\n", err)
				continue
			}
			if m.sessions%100 == 0 {
				fmt.Fprintf(m.out, "prism migrate: %d of %d sessions\n", m.sessions, total.Sessions)
			}
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if len(m.conflicts) > 0 {
		return fmt.Errorf("%d sessions were not copied: %w", len(m.conflicts), errors.Join(m.conflicts...))
	}
	if err := m.copySpans(ctx); err != nil {
		return err
	}
	logins, err := m.src.OwnerLogins(ctx, time.Now().UnixMilli())
	if err != nil {
		return err
	}
	if err := m.dst.PutOwnerLogins(ctx, logins); err != nil {
		return err
	}
	m.logins = int64(len(logins))
	got, err := m.dst.Counts(ctx)
	if err != nil {
		return err
	}
	if got.Sessions < total.Sessions || got.Events < total.Events || got.Shares < total.Shares {
		return fmt.Errorf("verify: the target holds %d sessions, %d events, %d share links; the source %d, %d, %d",
			got.Sessions, got.Events, got.Shares, total.Sessions, total.Events, total.Shares)
	}
	if got != total {
		fmt.Fprintf(m.out, "prism migrate: the target holds more than the source (%d sessions, %d events, %d links): it had sessions of its own\n",
			got.Sessions, got.Events, got.Shares)
	}
	return nil
}

// copySpans copies every stored span, a page at a time, then checks the
// target holds at least as many.
func (m *migration) copySpans(ctx context.Context) error {
	trace, span := "", ""
	for {
		page, err := m.src.SpanRecords(ctx, trace, span, 1000)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			break
		}
		if _, err := m.dst.PutSpanRecords(ctx, page); err != nil {
			return err
		}
		m.spans += int64(len(page))
		last := page[len(page)-1]
		trace, span = last.TraceID, last.SpanID
	}
	got, err := m.dst.CountSpans(ctx)
	if err != nil {
		return err
	}
	if got < m.spans {
		return fmt.Errorf("verify: the target holds %d spans, the source %d", got, m.spans)
	}
	return nil
}

// copy copies one session, its links and its notes, then checks the
// target's row.
func (m *migration) copy(ctx context.Context, info store.SessionInfo) error {
	l, err := m.src.LoadSession(ctx, info.ID)
	if err != nil {
		return err
	}
	outcome, _, err := m.dst.SyncLog(ctx, l.Info.Header, l.Events, l.Info.Source, false)
	if err != nil {
		return fmt.Errorf("session %s: %w", info.ID, err)
	}
	recs, err := m.src.ShareRecords(ctx, info.ID)
	if err != nil {
		return err
	}
	if _, err := m.dst.PutShares(ctx, recs); err != nil {
		return fmt.Errorf("session %s: %w", info.ID, err)
	}
	got, err := m.dst.Session(ctx, info.ID)
	if err != nil {
		return fmt.Errorf("verify session %s: %w", info.ID, err)
	}
	if got.LastSeq != l.Info.LastSeq || !reflect.DeepEqual(got.Summary, l.Info.Summary) || got.Source != l.Info.Source {
		return fmt.Errorf("verify session %s: the target's row (last seq %d, %+v) differs from the source's (last seq %d, %+v)",
			info.ID, got.LastSeq, got.Summary, l.Info.LastSeq, l.Info.Summary)
	}
	links, err := m.dst.Shares(ctx, info.ID)
	if err != nil {
		return err
	}
	if len(links) < len(recs) {
		return fmt.Errorf("verify session %s: %d share links in the target, %d in the source", info.ID, len(links), len(recs))
	}
	ns, err := m.src.Notes(ctx, info.ID, notes.Query{Removed: true})
	if err != nil {
		return err
	}
	if _, err := m.dst.PutNoteRecords(ctx, ns); err != nil {
		return fmt.Errorf("session %s: %w", info.ID, err)
	}
	copied, err := m.dst.Notes(ctx, info.ID, notes.Query{Removed: true})
	if err != nil {
		return err
	}
	if len(copied) < len(ns) {
		return fmt.Errorf("verify session %s: %d notes in the target, %d in the source", info.ID, len(copied), len(ns))
	}
	m.sessions++
	m.events += int64(len(l.Events))
	m.shares += int64(len(recs))
	m.notes += int64(len(ns))
	switch outcome {
	case store.ImportCreated:
		m.created++
	case store.ImportExtended:
		m.extended++
	default:
		m.unchanged++
	}
	return nil
}
