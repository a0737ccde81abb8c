package core

import "time"

// SourceHealth is one row of the source-health view (/sources): how one
// feed of sessions into prism is doing — a watched folder and the kind of
// files in it (dsh, claude-code, codex), or another feed such as the OTLP
// receiver — so an operator sees at a glance that a feed stopped or that a
// new CLI version changed a format.
type SourceHealth struct {
	// Feed names the feed: the watched folder, or "OTLP /v1/traces".
	Feed string `json:"feed"`
	// Kind is the kind of source: "dsh", "claude-code", "codex", "otlp".
	Kind string `json:"kind"`
	// Sessions is how many sessions the feed has brought.
	Sessions int `json:"sessions"`
	// Files is how many files of this kind the feed follows (0 when the
	// feed is not files).
	Files int `json:"files"`
	// LastRead is when the feed last brought something (zero: never), and
	// LastPath / LastLine what: the file and its line.
	LastRead time.Time `json:"lastRead,omitzero"`
	LastPath string    `json:"lastPath,omitempty"`
	LastLine int       `json:"lastLine,omitempty"`
	// Lag is how long the last thing read waited between being written
	// and being stored.
	Lag time.Duration `json:"lag"`
	// Raw counts the lines kept as source/raw events (line types the
	// decoder does not map, malformed lines); RawWhy says why the latest
	// malformed one was ("" when none was).
	Raw    int    `json:"raw"`
	RawWhy string `json:"rawWhy,omitempty"`
	// Skipped counts files or records the feed left out, SkippedWhy why
	// the latest was.
	Skipped    int    `json:"skipped"`
	SkippedWhy string `json:"skippedWhy,omitempty"`
	// LastError is the latest failure ("" when none), at LastErrorAt.
	LastError   string    `json:"lastError,omitempty"`
	LastErrorAt time.Time `json:"lastErrorAt,omitzero"`
}

// SourceReporter is a feed that reports its rows for the source-health
// view; the server asks each registered reporter on every request.
type SourceReporter interface {
	SourceHealth() []SourceHealth
}
