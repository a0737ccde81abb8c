package views

import (
	"fmt"
	"time"

	"prism/core"
)

// RouteSources is the source-health page: per watched folder and kind of
// source (and per other feed, such as the OTLP receiver), how it is doing.
const RouteSources = "/sources"

// SourcesURL is the source-health page.
func SourcesURL() string { return RouteSources }

// WatchHint is a default place of an agent's sessions found on this
// machine that the server does not watch: the list page says it can, with
// the command, and reads nothing from it until asked.
type WatchHint struct {
	Agent   string // Claude Code, Codex
	Dir     string
	Command string // prism serve --watch=claude
}

// SourcesView is the source-health page.
type SourcesView struct {
	Meta PageMeta
	Rows []SourceRowView
	// Hints are the places the server could watch and does not.
	Hints []WatchHint
}

// SourceRowView is one row of the source-health page.
type SourceRowView struct {
	Feed, Kind        string
	Sessions, Files   int
	LastRead, Lag     string
	LastPath          string
	LastLine          int
	Raw, Skipped      int
	RawWhy, SkipWhy   string
	LastError, ErrAge string
	// Stale: the feed has an error newer than what it last read.
	Stale bool
}

// NewSourcesView builds the page from the reporters' rows at now.
func NewSourcesView(meta PageMeta, rows []core.SourceHealth, hints []WatchHint, now time.Time) *SourcesView {
	v := &SourcesView{Meta: meta, Hints: hints}
	for _, r := range rows {
		rv := SourceRowView{Feed: r.Feed, Kind: KindLabel(r.Kind), Sessions: r.Sessions, Files: r.Files,
			LastPath: r.LastPath, LastLine: r.LastLine, Raw: r.Raw, Skipped: r.Skipped, RawWhy: r.RawWhy, SkipWhy: r.SkippedWhy,
			LastError: r.LastError}
		rv.LastRead = "never"
		if !r.LastRead.IsZero() {
			rv.LastRead = ago(now.Sub(r.LastRead)) + " ago"
			rv.Lag = r.Lag.Round(time.Millisecond).String()
		}
		if r.LastError != "" && !r.LastErrorAt.IsZero() {
			rv.ErrAge = ago(now.Sub(r.LastErrorAt)) + " ago"
			rv.Stale = r.LastErrorAt.After(r.LastRead)
		}
		v.Rows = append(v.Rows, rv)
	}
	return v
}

// KindLabel names a kind of source for people.
func KindLabel(kind string) string {
	switch kind {
	case "claude-code":
		return "Claude Code"
	case "codex":
		return "Codex"
	case "dsh":
		return "dsh"
	case "otlp":
		return "OTLP"
	case "other":
		return "other files"
	}
	return kind
}

// ago is a short duration: 3s, 4m, 2h, 5d.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(max(d, 0)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// SourceLineView is the session header's source line: "Claude Code 2.1.3 ·
// ~/src/app · main", the file it was read from, and a missing parent.
type SourceLineView struct {
	Line, File, MissingParent, ForkedFrom string
}

// NewSourceLine builds the header's source line of info (home, when
// given, is shown as ~).
func NewSourceLine(info core.SourceInfo, home string) *SourceLineView {
	return &SourceLineView{Line: info.Line(home), File: info.File, MissingParent: info.MissingParent, ForkedFrom: info.ForkedFrom}
}
