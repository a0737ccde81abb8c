// Package storetest is the contract of a prism session store, as one test
// suite every engine runs: package db's tests run it on a SQLite file,
// package pgstore's on a PostgreSQL database their test binary starts. Run
// takes an Engine; the suite's Store is the interface the suite consumes.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"prism/core"
	"prism/core/notes"
	"prism/core/search"
	"prism/core/share"
	"prism/sources/dsh"
	"prism/store"
)

// Store is what the contract exercises: the methods both engines have.
type Store interface {
	core.CheckedStore
	ListSessions(ctx context.Context, o store.ListOptions) (store.SessionPage, error)
	Session(ctx context.Context, id string) (store.SessionInfo, error)
	LoadSession(ctx context.Context, id string) (*store.SessionLog, error)
	EventsAfter(ctx context.Context, id string, afterSeq int64) ([]core.Event, error)
	EventsUpTo(ctx context.Context, id string, seq int64) ([]core.Event, error)
	EventsAfterEach(ctx context.Context, after map[string]int64) (map[string][]core.Event, error)
	CallEvents(ctx context.Context, id, callID string, withTypes ...string) ([]core.Event, error)
	Export(ctx context.Context, id string, w io.Writer) error
	ImportFile(ctx context.Context, path string) ([]store.ImportResult, error)
	Import(ctx context.Context, name string, r io.Reader, size int64) ([]store.ImportResult, error)
	RepairOpenTurns(ctx context.Context) ([]string, error)
	CreateShare(ctx context.Context, spec share.Spec) (share.Share, string, error)
	Shares(ctx context.Context, sessionID string) ([]share.Share, error)
	Share(ctx context.Context, id string) (share.Share, error)
	ShareByToken(ctx context.Context, hash share.Hash) (share.Share, error)
	RevokeShare(ctx context.Context, id string) (share.Share, error)
	RecordShareView(ctx context.Context, id string) error
	Search(ctx context.Context, q *search.Query, o store.SearchOptions) (store.SearchPage, error)
	ImportFileWith(ctx context.Context, path string, o store.ImportOptions) ([]store.ImportResult, error)
	DeleteSession(ctx context.Context, id string) (store.Deleted, error)
	DeleteEndedBefore(ctx context.Context, before time.Time) ([]store.Deleted, error)
	SyncLog(ctx context.Context, h core.SessionHeader, events []core.Event, source string, replace bool) (outcome string, added int, err error)
	CreateFork(ctx context.Context, h core.SessionHeader, seed []core.Event, note notes.Input) error
	AddOwnerLogin(ctx context.Context, idHash [sha256.Size]byte, expiresAt int64) error
	OwnerLoginValid(ctx context.Context, idHash [sha256.Size]byte, now int64) (bool, error)
	RevokeOwnerLogin(ctx context.Context, idHash [sha256.Size]byte) error
	ReceiveSpans(ctx context.Context, spans []store.SpanRecord, derive store.SpanDeriver) (store.SpanReceipt, error)
	Notes(ctx context.Context, session string, q notes.Query) ([]notes.Note, error)
	PutNote(ctx context.Context, in notes.Input) (notes.Note, error)
	RemoveNote(ctx context.Context, session, id string) (notes.Note, error)
	OpenNotes(ctx context.Context, kind string) ([]notes.Note, error)
	Close() error
}

// Options are what the suite sets when it opens a store.
type Options struct {
	// Committed is the store's commit hook (nil: none).
	Committed func(store.Commit)
	// Now is the store's clock (nil: time.Now).
	Now func() time.Time
	// Logger receives the store's logs (nil: discarded).
	Logger *slog.Logger
	// MaxImports bounds concurrent imports (0: the engine's default).
	MaxImports int
}

// Engine is one store implementation under test.
type Engine struct {
	// Name names the engine in subtest names.
	Name string
	// Open opens a store on a fresh, empty database and returns it with a
	// function that opens the same database again (after Close). The
	// engine closes what is still open when the test ends.
	Open func(t testing.TB, o Options) (st Store, reopen func(o Options) Store)
	// Exec runs one SQL statement on the store's database, one both
	// engines understand (the suite makes stale rows with it).
	Exec func(t testing.TB, st Store, sql string)
	// Count runs a SELECT count(*) … and returns the count.
	Count func(t testing.TB, st Store, sql string) int64
	// Commits returns how many write transactions the store committed.
	Commits func(st Store) int64
	// WatchMarks returns how many watched sessions' marks the store keeps
	// in memory (store.WatchMarks.Len).
	WatchMarks func(st Store) int
	// Strings runs a query whose rows are one text column each.
	Strings func(t testing.TB, st Store, sql string) []string
	// ImportLogs imports decoded logs as one file would be (the engine's
	// importLogs, for logs no file on disk holds).
	ImportLogs func(st Store, file string, logs []*dsh.Log, o store.ImportOptions) ([]store.ImportResult, error)
	// Unindex puts the store's database back to the schema before its
	// search migration (its index tables and their migration row gone).
	Unindex func(t testing.TB, st Store)
	// Delivered, when set, waits until every commit the store made so far
	// has reached Options.Committed. Without it the engine delivers its
	// commits in commit order across sessions (db); PostgreSQL's fan-out
	// keeps each session's order only, so a later session's commit is no
	// sign that an earlier session's has been delivered.
	Delivered func(st Store)
}

func (e Engine) open(t testing.TB) Store {
	t.Helper()
	st, _ := e.Open(t, Options{})
	return st
}

// Run runs the whole contract on engine e, each part as a subtest.
func Run(t *testing.T, e Engine) {
	for _, c := range []struct {
		name string
		f    func(*testing.T, Engine)
	}{
		{"AppendEvents", testAppendEvents},
		{"AppendChecked", testAppendChecked},
		{"ConcurrentAppends", testConcurrentAppends},
		{"CloseDrainsAndRefuses", testCloseDrainsAndRefuses},
		{"DerivedSessionRow", testDerivedSessionRow},
		{"ListAndEventQueries", testListAndEventQueries},
		{"EventsAfterEach", testEventsAfterEach},
		{"ListOrdersAndFilters", testListOrdersAndFilters},
		{"ListHeaders", testListHeaders},
		{"CommittedHookAfterCommit", testCommittedHookAfterCommit},
		{"ResummarizesOlderRows", testResummarizesOlderRows},
		{"AwaitingApprovals", testAwaitingApprovals},
		{"ModelUsage", testModelUsage},
		{"RepairOpenTurns", testRepairOpenTurns},
		{"ImportDshFixtures", testImportDshFixtures},
		{"ImportSameSessionTwice", testImportSameSessionTwice},
		{"ImportPrefixExtendsDivergenceConflicts", testImportPrefixExtendsAndDivergenceConflicts},
		{"ImportExportZipWithSubagent", testImportExportZipWithSubagent},
		{"ImportBadInputLeavesNothing", testImportBadInputLeavesNothing},
		{"ImportFromReader", testImportFromReader},
		{"ExportRoundTripsByteForByte", testExportRoundTripsByteForByte},
		{"ImportCrashedLogIsRepaired", testImportCrashedLogIsRepaired},
		{"ImportPlaceholderSafe", testImportPlaceholderSafe},
		{"ImportValidateLogRefuses", testImportValidateLogRefuses},
		{"ImportConcurrencyLimit", testImportConcurrencyLimit},
		{"ImportOrphanSubagentRefused", testImportOrphanSubagentRefused},
		{"ForkIsNotAChild", testForkIsNotAChild},
		{"CreateForkAllOrNothing", testCreateForkAllOrNothing},
		{"ImportInfersLinks", testImportInfersLinks},
		{"ImportParentCycleRefused", testImportParentCycleRefused},
		{"RepairRemovesSessionsThatNeverLoggedATurn", testRepairRemovesSessionsThatNeverLoggedATurn},
		{"ImportAsAndReplace", testImportAsAndReplace},
		{"ImportReplaceFailureLeavesAll", testImportReplaceFailureLeavesAll},
		{"ImportReplaceRefusesRunningLive", testImportReplaceRefusesRunningLive},
		{"ImportManySessionsJSONL", testImportManySessionsJSONL},
		{"ImportManySessionsFailureLeavesNothing", testImportManySessionsFailureLeavesNothing},
		{"DeleteSessionRemovesEverything", testDeleteSessionRemovesEverything},
		{"DeleteEndedBefore", testDeleteEndedBefore},
		{"DeleteSessionRemovesSearchIndex", testDeleteSessionRemovesSearchIndex},
		{"OwnerLogins", testOwnerLogins},
		{"ReceiveSpans", testReceiveSpans},
		{"SharesLifecycle", testSharesLifecycle},
		{"SharesRefuseBadSpecs", testSharesRefuseBadSpecs},
		{"SharesGoWithTheirSession", testSharesGoWithTheirSession},
		{"SharesConcurrentViews", testSharesConcurrentViews},
		{"SearchTakesTheAppendedWords", testSearchTakesTheAppendedWords},
		{"SearchIndexExactAfterConcurrentSessions", testSearchIndexExactAfterConcurrentSessions},
		{"SearchIndexExactAfterDshImport", testSearchIndexExactAfterDshImport},
		{"SearchIndexesAnOlderDatabase", testSearchIndexesAnOlderDatabase},
		{"SearchReindexesAReplacedLog", testSearchReindexesAReplacedLog},
		{"SearchQueries", testSearchQueries},
		{"SearchPagesAndOrders", testSearchPagesAndOrders},
		{"SearchRanksTheMostRecentMatches", testSearchRanksTheMostRecentMatches},
		{"SearchPairsResultsAsTheTranscriptDoes", testSearchPairsResultsAsTheTranscriptDoes},
		{"SearchPhrasesStayInOneColumn", testSearchPhrasesStayInOneColumn},
		{"NotesLifecycle", testNotesLifecycle},
		{"NotesRefuseBadInput", testNotesRefuseBadInput},
		{"NotesCommittedHook", testNotesCommittedHook},
		{"NotesGoWithTheirSession", testNotesGoWithTheirSession},
		{"NotesSurviveAReplacedLog", testNotesSurviveAReplacedLog},
		{"NotesSurviveAnExtendingImport", testNotesSurviveAnExtendingImport},
		{"NotesRoundTripThroughAnExportZip", testNotesRoundTripThroughAnExportZip},
		{"ListAnnotated", testListAnnotated},
		{"SearchFindsLabels", testSearchFindsLabels},
		{"OpenNotesAcrossSessions", testOpenNotesAcrossSessions},
		{"NotesOnce", testNotesOnce},
		{"AppendWatchedRewritesTheEnd", testAppendWatchedRewritesTheEnd},
		{"WatchMarksGoWithTheirLog", testWatchMarksGoWithTheirLog},
	} {
		t.Run(c.name, func(t *testing.T) { c.f(t, e) })
	}
}

// Fixtures is where the shared session-log fixtures are, seen from an
// engine package's directory.
const Fixtures = "../testdata/dsh"

// Header is a valid session header with id.
func Header(id string) core.SessionHeader {
	return core.SessionHeader{ID: id, CreatedAt: 1764500000000, Cwd: "/w"}
}

// MustCreate creates session id or fails tb.
func MustCreate(tb testing.TB, st core.EventStore, id string) {
	tb.Helper()
	if err := st.CreateSession(context.Background(), Header(id)); err != nil {
		tb.Fatalf("CreateSession(%s): %v", id, err)
	}
}

// Ev is one event with seq, type and data (surface types get the append op).
func Ev(seq int64, typ, data string) core.Event {
	e := core.Event{Type: typ, Seq: seq, Time: 1764500000000 + seq, Data: json.RawMessage(data)}
	if core.IsSurfaceType(typ) {
		e.SurfaceOp = core.AppendOp()
	}
	return e
}

// TurnEvents returns one complete turn (user message, assistant message
// with one tool call, the call and its result) starting at seq.
func TurnEvents(seq int64, turn int, isError bool) []core.Event {
	call := fmt.Sprintf("call_%d", turn)
	out := []core.Event{
		Ev(seq, core.EventTurnStart, fmt.Sprintf(`{"turn":%d}`, turn)),
		Ev(seq+1, core.EventStepStart, fmt.Sprintf(`{"turn":%d,"step":1}`, turn)),
		Ev(seq+2, core.EventUserMessage, fmt.Sprintf(`{"id":"u%d","role":"user","content":[{"type":"text","text":"do   thing\n%d"}],"source":{"kind":"user"}}`, turn, turn)),
		Ev(seq+3, core.EventAssistantMessage, fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"a%d","role":"assistant","content":[{"type":"tool-call","id":%q,"name":"note","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"}}}`, turn, turn, call)),
		Ev(seq+4, core.EventToolCall, fmt.Sprintf(`{"turn":%d,"step":1,"callId":%q,"name":"note","arguments":"{}"}`, turn, call)),
		Ev(seq+5, core.EventToolResult, fmt.Sprintf(`{"turn":%d,"step":1,"message":{"id":"r%d","role":"user","content":[{"type":"tool-result","toolCallId":%q,"content":[{"type":"text","text":"ok"}],"isError":%t}],"source":{"kind":"tool","callId":%q}}}`, turn, turn, call, isError, call)),
		Ev(seq+6, core.EventStepEnd, fmt.Sprintf(`{"turn":%d,"step":1}`, turn)),
		Ev(seq+7, core.EventTurnEnd, fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, turn)),
	}
	out[5].SourceEventSeqs = []int64{seq + 4}
	return out
}

// Clock is an injectable store clock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// quiet is a logger that discards.
func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
