package web

import (
	"context"
	"io"
	"log/slog"
	"time"

	"prism/core"
	"prism/core/approval"
	"prism/core/price"
	"prism/core/redact"
	"prism/core/search"
	"prism/core/share"
	"prism/views"
	"prism/web/ownerauth"
)

// SessionSource reads durable session logs. Methods fail with a core.Error
// of code core.CodeNotFound for an unknown session.
type SessionSource interface {
	// ListSessions returns session summaries, most recently updated first.
	ListSessions(ctx context.Context, q ListQuery) ([]SessionSummary, error)
	// Summary returns one session's summary.
	Summary(ctx context.Context, id string) (SessionSummary, error)
	// LoadSession returns a session's header and its whole log in seq order.
	LoadSession(ctx context.Context, id string) (core.SessionHeader, []core.Event, error)
	// EventsAfter returns the events with seq > after, in seq order.
	EventsAfter(ctx context.Context, id string, after int64) ([]core.Event, error)
	// EventsAfterEach returns, in one read, each session's events with seq
	// > after[id], in seq order; an unknown session is absent.
	EventsAfterEach(ctx context.Context, after map[string]int64) (map[string][]core.Event, error)
	// EventsUpTo returns the header and the events with seq <= upTo.
	EventsUpTo(ctx context.Context, id string, upTo int64) (core.SessionHeader, []core.Event, error)
	// CallEvents returns the header and, in seq order, the events that
	// place one call's cards (views.CallContext): the call's own events
	// (those core.FactsOf gives its call id) and every event of
	// views.CallContextTypes. A fold of them gives that call's cards as the
	// whole log's fold does, without reading the rest of the log.
	CallEvents(ctx context.Context, id, callID string) (core.SessionHeader, []core.Event, error)
}

// ListQuery filters, orders and bounds a session list.
type ListQuery struct {
	// Query matches title or id (case-insensitive substring); "" = all.
	Query string
	// Status keeps sessions with this status ("" = all).
	Status string
	// HasErrors keeps sessions with at least one failed call.
	HasErrors bool
	// Annotated keeps sessions with at least one label.
	Annotated bool
	// Sort orders the list: "updated" ("" too), "created", "calls" or
	// "errors", largest first.
	Sort string
	// Limit bounds the result; 0 = the source's default.
	Limit int
	// Attention keeps the sessions with an open attention firing (the
	// web server applies it; sources ignore it).
	Attention bool
}

// SessionSummary is one session as the list shows it: its identity and
// the core.Summary of its log (title, status, counters, tokens, times) as
// the store computed it when the events were appended.
type SessionSummary struct {
	ID        string `json:"id"`
	ParentID  string `json:"parentId,omitempty"`
	CreatedAt int64  `json:"createdAt"` // epoch ms
	// UpdatedAt is the latest event's time, or CreatedAt for an empty log.
	UpdatedAt int64 `json:"updatedAt"`
	core.Summary
}

// CommitFeed delivers committed events. The store calls every registered
// function after each durable commit (never before). Functions must not
// block; web's never do.
type CommitFeed interface {
	// OnCommit registers fn for commits that append to a log: it gets
	// that session's appended events in seq order, continuing the events
	// it was given before; events may be empty for a change without
	// events (a new session, a title or status change).
	OnCommit(fn func(sessionID string, events []core.Event)) (remove func())
	// OnReplace registers fn for commits that replaced a session's whole
	// log (a watched dsh file that was rewritten): the session's events
	// are now only what the source returns, from seq 0. Such a commit is
	// delivered to OnReplace functions, not to OnCommit ones.
	OnReplace(fn func(sessionID string)) (remove func())
}

// Runner starts, messages and cancels agent sessions.
type Runner interface {
	// StartSession starts a session from a prompt and returns its id.
	StartSession(ctx context.Context, req StartRequest) (string, error)
	// SendMessage queues a follow-up user message.
	SendMessage(ctx context.Context, sessionID, text string) error
	// Cancel cancels the running turn.
	Cancel(ctx context.Context, sessionID string) error
}

// SessionOwner is an optional interface of a Runner. Owns reports whether
// the runner runs the session: whether it takes follow-up messages for it
// and can cancel its turn (imported and watched sessions, and those of an
// earlier run, are not its own). The session page shows its follow-up and
// cancel controls only for owned sessions; a Runner without Owns is taken
// to own every session.
type SessionOwner interface {
	Owns(sessionID string) bool
}

// Approvals answers the tool calls that wait for a person;
// *approval.Service implements it.
type Approvals interface {
	// Pending lists the approvals waiting now, across sessions.
	Pending() []approval.Pending
	// Decide answers one, once: a decided approval gives an
	// *approval.AlreadyDecidedError, one never seen waiting a
	// core.CodeNotFound error.
	Decide(ctx context.Context, sessionID, approvalID string, d approval.Decision) (approval.Decided, error)
	// SetPolicy sets a running session's approval policy: "ask" or
	// "never" (later asks are rejected without asking).
	SetPolicy(ctx context.Context, sessionID, policy string) error
}

// StartRequest is what starts a session.
type StartRequest struct {
	Prompt    string `json:"prompt"`
	Model     string `json:"model,omitempty"`
	Workspace string `json:"workspace,omitempty"`
}

// Importer imports session logs: prism JSONL, dsh session.jsonl,
// session.jsonl.zstd or a dsh export .zip (the filename's extension helps
// it choose). It returns what it did with each session of the file. A file
// that fails changes nothing.
type Importer interface {
	Import(ctx context.Context, filename string, r io.Reader, o ImportOptions) ([]ImportedSession, error)
}

// ImportOptions are the import API's ?as= and ?replace=1.
type ImportOptions struct {
	// As imports the file's one session under this id (a file with
	// several sessions is refused).
	As string
	// Replace lets the file replace a stored session whose log differs;
	// the replaced session's share links are revoked.
	Replace bool
}

// Import statuses: what an import did with one session.
const (
	ImportCreated   = "created"   // it was new
	ImportUnchanged = "unchanged" // the same log was stored already; nothing was written
	ImportExtended  = "extended"  // the stored log was a prefix of the file's: the rest was appended
	ImportReplaced  = "replaced"  // ImportOptions.Replace: the stored log was replaced
)

// ImportedSession is one session of an imported file.
type ImportedSession struct {
	ID     string `json:"id"`
	Status string `json:"status"` // ImportCreated, ImportUnchanged, ImportExtended or ImportReplaced
	Events int    `json:"events"` // events the stored log holds now
	// Revoked counts the share links a replacement revoked.
	Revoked int `json:"revokedShares,omitempty"`
	// Original is the file's id when ImportOptions.As renamed the session.
	Original string `json:"originalId,omitempty"`
	// Torn describes a torn tail of the file's log that was ignored.
	Torn string `json:"tornTail,omitempty"`
	// Repaired counts the crash-repair events appended to a log whose last
	// turn was open (the session is then interrupted).
	Repaired int `json:"repairedEvents,omitempty"`
	// Notes are what prism import prints about the session on stderr (a
	// rename, a torn tail, a repair, an unchanged or replaced log), one
	// sentence each.
	Notes []string `json:"notes,omitempty"`
}

// Deleter deletes sessions for good (db.Store through backend.Deleter).
type Deleter interface {
	// DeleteSession deletes a session with its events, share links and
	// subagent sessions; an unknown id is core.CodeNotFound.
	DeleteSession(ctx context.Context, id string) (DeletedSession, error)
}

// DeletedSession says what deleting a session removed.
type DeletedSession struct {
	ID        string   `json:"id"`
	Subagents []string `json:"subagents"`
	Events    int64    `json:"events"`
	Shares    int64    `json:"shares"`
}

// ShareStore keeps share links (db.Store implements it). Unknown ids and
// tokens are core.CodeNotFound.
type ShareStore interface {
	// CreateShare makes a link and returns it with its token, which is not
	// stored and cannot be read again.
	CreateShare(ctx context.Context, spec share.Spec) (share.Share, string, error)
	// Shares lists a session's links, oldest first.
	Shares(ctx context.Context, sessionID string) ([]share.Share, error)
	// Share returns one link by id.
	Share(ctx context.Context, id string) (share.Share, error)
	// ShareByToken returns the link whose token has this hash (revoked and
	// expired ones too).
	ShareByToken(ctx context.Context, hash share.Hash) (share.Share, error)
	// RevokeShare revokes a link for good.
	RevokeShare(ctx context.Context, id string) (share.Share, error)
	// RecordShareView counts a view of the link.
	RecordShareView(ctx context.Context, id string) error
}

// Searcher runs full-text searches over every session.
type Searcher interface {
	// Search returns a page of the hits of q. A malformed cursor or order
	// is a core.CodeInvalid error.
	Search(ctx context.Context, q *search.Query, o SearchOptions) (SearchResults, error)
}

// SearchOptions page a search.
type SearchOptions struct {
	Order  string // "rank" (best match first) or "time" (newest first)
	Limit  int
	Cursor string // a previous page's NextCursor
}

// SearchResults are one page of hits.
type SearchResults struct {
	Hits       []views.SearchHitInput
	NextCursor string // "" on the last page
	// RankedAmong is set when a search by rank ranked only the most recent
	// RankedAmong matches (more matched); 0 otherwise.
	RankedAmong int
}

// Deps is what the web server consumes. Sessions and Presenter are
// required; everything else is optional.
type Deps struct {
	Sessions  SessionSource
	Presenter views.Presenter
	// Commits makes pages live; without it pages are static snapshots.
	Commits CommitFeed
	// Runner enables starting, messaging and cancelling sessions; without
	// it those routes answer 503.
	Runner Runner
	// DemoID is the scripted demo session the server started on an empty
	// database ("" when it started none): the list page points a newcomer
	// at it.
	DemoID string
	// Importer enables POST /api/sessions/import; without it, 503.
	Importer Importer
	// Deleter enables deleting sessions (the page's delete button, DELETE
	// /api/sessions/{id}); without it the button is hidden and the routes
	// answer 503.
	Deleter Deleter
	// Approvals enables deciding approvals (the cards' Approve and Reject,
	// the approvals API) for the sessions the Runner owns; without it
	// awaiting cards are read-only and decisions answer 503.
	Approvals Approvals
	// Search enables GET /search and /api/search; without it, 503.
	Search Searcher
	// Traces enables the OTLP/HTTP trace receiver (POST /v1/traces);
	// without it, 503.
	Traces TraceReceiver
	// Notes enables the notes beside each session's log (the notes and
	// annotations API, the cards' labels); without it those routes
	// answer 503 and cards show no labels.
	Notes NoteStore
	// Sources are the feeds the source-health page (/sources) reports:
	// each watched folder (sources/watch.Watcher), and any other feed that
	// reports rows (the OTLP receiver). Nil: the page says there are none.
	Sources []core.SourceReporter
	// Watchable are agents' session folders found on this machine that no
	// --watch names: the list page says the server can watch them.
	Watchable []WatchHint
	// Attention runs the attention rules (/rules, /board's marks, the
	// list's badges, /api/attention); nil: no rules.
	Attention Attention
	// Labels are the labels the cards' label form suggests (nil:
	// views.DefaultLabels); any other text may be typed.
	Labels []string
	Logger *slog.Logger
	Tuning Tuning
	// AllowedHosts are Host names (any port) or host:port values the
	// server answers besides localhost, 127.0.0.1 and ::1 — e.g. the name
	// of a reverse proxy. Setting it also restricts a server listening on
	// an unspecified address (0.0.0.0, ::), which otherwise answers any
	// Host. See Server.Serve.
	AllowedHosts []string

	// Shares enables share links (the API, the session page's share
	// panel, /s/…); without it those routes answer 503 and /s/… the
	// share 404.
	Shares ShareStore
	// Redactor redacts what links marked "redact" show (required with
	// Shares: New panics without it, as a share must never go unredacted
	// by accident).
	Redactor *redact.Redactor
	// PublicURL is the scheme and host share URLs start with (e.g. the
	// address of --share-addr behind a proxy); "" uses the request's.
	PublicURL string
	// SharePort, with no PublicURL, is the port of the share listener:
	// share URLs then use the request's scheme and host name with it.
	SharePort int
	// Owner, when set, requires the owner's token (bearer) or login cookie
	// on every route but /s/…, /static/…, /login, /logout and /healthz.
	Owner *ownerauth.Guard
	// Now is the clock of share expiry (default time.Now).
	Now func() time.Time
	// Prices, when set, shows costs beside token counts on the owner's
	// session pages: per step, per turn and for the session.
	Prices price.Table
}

// Tuning holds the server's knobs: the live path and the bounds it puts on
// clients. Zero values take the defaults.
type Tuning struct {
	// Window is how many transcript items a page's first paint shows
	// (views.DefaultWindow, 120).
	Window int
	// Buffer is each subscriber's queue of patch groups (256); a subscriber
	// whose queue is full is resynchronized from the log.
	Buffer int
	// Coalesce is how long assistant chunks gather before one patch (50ms);
	// negative turns coalescing off (every event its own frame, live and
	// in playback).
	Coalesce time.Duration
	// KeepAlive is the interval of SSE comment lines (15s).
	KeepAlive time.Duration
	// ShareCheck is how often an open share stream re-checks that its link
	// is still valid (500ms): a revoked or expired link's streams end within
	// it.
	ShareCheck time.Duration
	// ListThrottle is how often the session list coalesces changes (250ms).
	ListThrottle time.Duration
	// FrameInterval is the shortest time between two frames of a session's
	// hub (25ms): events that arrive faster are folded into one frame that
	// carries the latest state of each changed card, so a burst costs each
	// subscriber a bounded number of writes.
	FrameInterval time.Duration

	// MaxBodyBytes bounds the body of every form and JSON request (1 MiB);
	// a larger one is answered 413. Imports have their own cap
	// (MaxImportBytes, 512 MiB).
	MaxBodyBytes   int64
	MaxImportBytes int64
	// HeaderTimeout bounds the time a client may take to send a request's
	// headers (10s); Serve applies it.
	HeaderTimeout time.Duration
	// BodyTimeout bounds how long a form or JSON body may take to arrive,
	// and how long any body may stall between two reads (30s);
	// ImportTimeout bounds a whole import upload (10m). A body past them
	// is answered 408 and its connection closed.
	BodyTimeout   time.Duration
	ImportTimeout time.Duration
	// ImportMinRate is the slowest an import upload may arrive, in bytes a
	// second averaged over each ImportRateWindow since it began (16 KiB/s
	// over 10s; negative: no minimum). A slower upload is cut: 408, and
	// its connection closed. An upload is spooled to a temporary file
	// before it takes one of the store's import slots, so a slow one never
	// holds a slot.
	ImportMinRate    int64
	ImportRateWindow time.Duration
	// Clock is the upload rate check's time (nil: the real clock).
	Clock Clock
	// WriteTimeout bounds each write to a stream (30s): a client that stops
	// reading has its stream closed when its buffers are full.
	WriteTimeout time.Duration
	// MaxStreamsPerClient caps the live streams one client address may
	// hold open at once; 0 (the default) means no cap, since proxies, NAT
	// and benchmarks put many readers behind one address. Past it a stream
	// is answered 429.
	MaxStreamsPerClient int
	// ShareStreamsPerLink caps the open streams (live and playback) of one
	// share link (1,000), and ShareStreams those of every link together
	// (5,000), whichever listener serves them; past them a stream, and the
	// link's page, is answered 429 (the link) or 503 (all links) with
	// Retry-After and a page that says the link is busy. Negative means no
	// cap. The owner's streams are not counted: the owner always gets in.
	ShareStreamsPerLink int
	ShareStreams        int

	// OTLPReceives bounds the OTLP trace exports (POST /v1/traces) read
	// and stored at once, over every listener (2); one past it is answered
	// 429 with Retry-After at once, before its body is read, so an
	// overloaded receiver costs a sender's retry, not memory.
	OTLPReceives int
	// OTLPRetryAfter is the Retry-After of that 429, in whole seconds (1s).
	OTLPRetryAfter time.Duration

	// PlaybackIdle is the longest pause between two events a playback keeps
	// (2s at 1×, divided by the speed): longer idle gaps are compressed.
	PlaybackIdle time.Duration
}

func (t Tuning) withDefaults() Tuning {
	if t.ImportMinRate == 0 {
		t.ImportMinRate = 16 << 10
	}
	if t.ImportRateWindow <= 0 {
		t.ImportRateWindow = 10 * time.Second
	}
	if t.Clock == nil {
		t.Clock = realClock{}
	}
	if t.Window <= 0 {
		t.Window = views.DefaultWindow
	}
	if t.Buffer <= 0 {
		t.Buffer = 256
	}
	if t.Coalesce == 0 {
		t.Coalesce = 50 * time.Millisecond
	}
	if t.OTLPReceives <= 0 {
		t.OTLPReceives = 2
	}
	if t.OTLPRetryAfter < time.Second {
		t.OTLPRetryAfter = time.Second
	}
	if t.PlaybackIdle <= 0 {
		t.PlaybackIdle = 2 * time.Second
	}
	if t.KeepAlive <= 0 {
		t.KeepAlive = 15 * time.Second
	}
	if t.ShareCheck <= 0 {
		t.ShareCheck = 500 * time.Millisecond
	}
	if t.ListThrottle <= 0 {
		t.ListThrottle = 250 * time.Millisecond
	}
	if t.FrameInterval <= 0 {
		t.FrameInterval = 25 * time.Millisecond
	}
	if t.MaxBodyBytes <= 0 {
		t.MaxBodyBytes = 1 << 20
	}
	if t.MaxImportBytes <= 0 {
		t.MaxImportBytes = 512 << 20
	}
	if t.HeaderTimeout <= 0 {
		t.HeaderTimeout = 10 * time.Second
	}
	if t.BodyTimeout <= 0 {
		t.BodyTimeout = 30 * time.Second
	}
	if t.ImportTimeout <= 0 {
		t.ImportTimeout = 10 * time.Minute
	}
	if t.ShareStreamsPerLink == 0 {
		t.ShareStreamsPerLink = 1000
	}
	if t.ShareStreams == 0 {
		t.ShareStreams = 5000
	}
	if t.WriteTimeout <= 0 {
		t.WriteTimeout = 30 * time.Second
	}
	return t
}
