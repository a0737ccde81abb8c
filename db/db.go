// Package db is prism's SQLite session store: embedded, ordered migrations;
// WAL with synchronous=FULL by default, verified after opening; one writer
// connection driven by a group-commit goroutine and a separate read pool;
// queries for session lists and event ranges; import and export of session
// log files; and what the watcher of sources/watch writes through
// (SyncWatched).
//
// Every write goes through the one writer goroutine. Concurrent appends are
// committed together in one transaction and each caller returns only after
// the commit that holds its events; a rejected append leaves nothing behind.
// A lone appender that finds the writer idle and nothing queued runs the
// same transaction and commit on its own goroutine, holding the writer's
// lock (writer.go, Store.submit): a session's durable steps then do not pay
// two goroutine hand-offs each.
// The search index lags the log: the writer files committed events in
// index transactions of its own, and every search has it file what lags
// first (searchlag.go).
//
// # Appends
//
// In one transaction the writer inserts the event rows (with their call
// ids; up to 32 per INSERT) and applies each event to its session's
// core.Summary, written to the sessions row, so the session list never
// reads events. For what a core.Session appends, the facts (call id,
// summary facts) and the words the index files (core.EventTexts) come with
// the events through core.CheckedStore, so the store decodes nothing; an
// import decodes its events' facts and words in the importing goroutine
// (importFacts), so the writer decodes nothing for it either. After the
// commit the writer calls Options.Committed.
//
// # The search index
//
// What an event holds for search (search.go: core/search.Extract's
// sections, split into terms by the same tokenizer as queries) is filed in
// SQLite's FTS4, which mattn/go-sqlite3 builds by default (FTS5 would need
// a build tag). It is filed after the append's commit, by the writer, in
// index transactions of its own (searchlag.go): the committed events wait
// in an in-memory lag, filed once the writer has idled 20 ms (in
// transactions of at most 256 events that give way to a request that
// comes meanwhile, committed at synchronous=NORMAL), when it reaches
// 20,000 events or 16 MiB, before any other write, before every search
// and at Close. search_sessions.through, moved in the same transaction as the
// documents, says how far each session is indexed, and Open catches up
// whatever a crash left behind it, so a crash between an append and its
// indexing loses nothing and files nothing twice. So a hit never points to
// an uncommitted event, and no search misses a committed one (the first
// search after an append returns finds it).
//
// The price: a search queues behind the writer's work in this process (a
// large import or delete holds searches until it commits); when nothing
// lags it only reads (data_version, and after another process's commit
// one query for sessions behind their watermark), so it never waits for
// another process's write lock — and when the writer is free, its lag
// empty and data_version unchanged, the search reads data_version on its
// own goroutine and does not hand off to the writer at all. A session whose watermark is found behind
// its own documents (a file an older prism wrote to after migration 0007)
// is rebuilt from its log. A database written before the index existed, or
// under older index rules (searchVersion), is indexed when the store
// opens, with its progress logged every two seconds. Within one index
// transaction a result is paired in memory with the card its call filed
// (indexEvent); a card still waiting for its result keeps its call's terms
// in memory and writes its FTS row once, with the result's terms, when the
// result comes or the session's catch-up ends (fileUnfiled), instead of
// an FTS4 UPDATE per result. Each document keeps its query-free snippet
// (core/search.Plain, search_docs.snip): a query without words to mark
// (tool:, error:, …) shows its page without reading events. Queries are
// compiled from core/search's AST in searchquery.go: the FTS4 MATCH is
// built only from tokenizer terms, so no query syntax reaches FTS.
package db

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

	"prism/core"
	"prism/core/logkey"
	"prism/sources/dsh"
	"prism/store"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options configure a Store. The zero value is the durable default.
type Options struct {
	// SyncNormal relaxes synchronous=FULL to NORMAL: faster commits, but
	// the last transactions may be lost on power failure (not on a crash).
	SyncNormal bool
	// BusyTimeout bounds how long a connection waits for a lock held by
	// another process (default 5s).
	BusyTimeout time.Duration
	// ReadConns is the size of the read pool (default max(4, GOMAXPROCS)).
	ReadConns int
	// MaxBatchEvents bounds the events one group commit takes (default 1000).
	MaxBatchEvents int
	// Limits bound what import and watch accept (zero fields: defaults).
	Limits dsh.Limits
	// Foreign are the other agents' transcript formats import reads
	// besides prism's and dsh's, each detected by content (main passes
	// Claude Code's).
	Foreign []dsh.Foreign
	// MaxImports bounds the imports decoding at once (default 2): with
	// Limits.MaxMemoryBytes it bounds the memory imports take. An upload
	// past it is refused with a busy error (HTTP 503 with Retry-After); the
	// watcher waits for a slot.
	MaxImports int
	// Logger receives the store's logs (default slog.Default()).
	Logger *slog.Logger
	// Committed, if set, is called after each commit, once per session
	// that changed, in commit order, holding the writer (by the writer
	// goroutine, or by a lone appender that committed on its own
	// goroutine). It must not block or write to the store.
	Committed func(store.Commit)
	// Now is the store's clock for the times it stamps itself (share
	// links: created, revoked, last viewed; expiry checks). Default
	// time.Now.
	Now func() time.Time
}

// readStmtCache is how many prepared statements each read connection
// keeps (go-sqlite3's _stmt_cache_size).
const readStmtCache = 32

// Store is a SQLite session store. It implements core.EventStore. Its
// methods are safe for concurrent use.
type Store struct {
	path string
	opts Options
	log  *slog.Logger
	wdb  *writeDB // one connection, used only by whoever holds the writer (w.mu)
	// imports holds one token per import decoding now (Options.MaxImports).
	imports store.ImportSlots
	rdb     *sql.DB // the read pool
	w       *writer

	// queue is the writer's requests (writer.go).
	queue *store.Queue[*request]

	// deleted holds the sessions deleted through this Store (until one is
	// created again): a Watcher does not bring them back.
	deletedMu sync.Mutex
	deleted   map[string]bool
	// marks are the watched sessions' summaries at their marks
	// (AppendWatched).
	marks store.WatchMarks
	// plainStmts keeps the statements of operator-only searches by their
	// shape (searchstmt.go).
	plainStmts plainStmts
	// batchAttempts counts the runs of an import batch's writes
	// (attemptBatch; tests read it).
	batchAttempts atomic.Int64
}

var (
	_ core.EventStore = (*Store)(nil)
	_ store.Store     = (*Store)(nil)
)

// Open opens (creating if needed) the store in the SQLite file at path,
// applies pending migrations, verifies the journal and sync modes, and
// starts the writer. The caller must Close it.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file::memory:") {
		return nil, core.Errorf(core.CodeInvalid, "open store: a database file path is required (in-memory databases are not supported)")
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = max(4, runtime.GOMAXPROCS(0))
	}
	if opts.MaxBatchEvents <= 0 {
		opts.MaxBatchEvents = 1000
	}
	if opts.MaxImports <= 0 {
		opts.MaxImports = store.DefaultMaxImports
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	sync := "FULL"
	if opts.SyncNormal {
		sync = "NORMAL"
	}
	base := "file:" + (&url.URL{Path: path}).EscapedPath()
	busy := fmt.Sprintf("_busy_timeout=%d", opts.BusyTimeout.Milliseconds())
	wdsn := base + "?" + busy + "&_journal_mode=WAL&_synchronous=" + sync + "&_foreign_keys=1&_txlock=immediate"
	// Each read connection keeps its last readStmtCache statements
	// prepared (go-sqlite3's cache, keyed by the SQL text): a search or a
	// page runs the same few statements again and again, and preparing one
	// cost about a third of a tool: search.
	rdsn := base + "?" + busy + "&_foreign_keys=1&_query_only=1&_stmt_cache_size=" + fmt.Sprint(readStmtCache)

	wdb, err := sql.Open("sqlite3", wdsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	st := &Store{path: path, opts: opts, log: opts.Logger, wdb: &writeDB{db: wdb}, imports: store.NewImportSlots(opts.MaxImports),
		queue: store.NewQueue[*request](4096)}
	if err := st.verifyPragmas(ctx, sync); err != nil {
		wdb.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := migrate(ctx, wdb); err != nil {
		wdb.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	rdb, err := sql.Open("sqlite3", rdsn)
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("open store %s: read pool: %w", path, err)
	}
	rdb.SetMaxOpenConns(opts.ReadConns)
	rdb.SetMaxIdleConns(opts.ReadConns)
	if err := rdb.PingContext(ctx); err != nil {
		wdb.Close()
		rdb.Close()
		return nil, fmt.Errorf("open store %s: read pool: %w", path, err)
	}
	st.rdb = rdb
	w, err := newWriter(st)
	if err != nil {
		wdb.Close()
		rdb.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	st.w = w
	st.wdb.w = w
	go w.run()
	if err := st.resummarize(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := st.reindexSearch(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// Events committed but not yet indexed when the last process ended
	// (killed before its index transaction): the index catches up.
	// A failure here (another process holds the write lock) is not the
	// store's: the next search or index transaction catches up.
	if err := st.catchUpIndex(ctx); err != nil {
		st.log.Warn("search index: could not catch up at open; the next search will", logkey.Err, err)
	}
	return st, nil
}

// verifyPragmas reads back what the DSN asked for: go-sqlite3 silently runs
// WAL databases at synchronous=NORMAL unless told otherwise, and a journal
// mode can fail to apply (e.g. on some network file systems).
func (st *Store) verifyPragmas(ctx context.Context, wantSync string) error {
	var mode string
	if err := st.wdb.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal_mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q, want wal", mode)
	}
	var syncMode int
	if err := st.wdb.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syncMode); err != nil {
		return fmt.Errorf("read synchronous: %w", err)
	}
	want := map[string]int{"NORMAL": 1, "FULL": 2}[wantSync]
	if syncMode != want {
		return fmt.Errorf("synchronous is %d, want %d (%s)", syncMode, want, wantSync)
	}
	var fk int
	if err := st.wdb.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		return fmt.Errorf("foreign_keys is not on (%d, %v)", fk, err)
	}
	return nil
}

// now reads the store's clock.
func (st *Store) now() time.Time { return st.opts.Now() }

// Path returns the database file's path.
func (st *Store) Path() string { return st.path }

// Close drains queued writes, stops the writer and closes the database.
// Writes after Close fail with ErrClosed.
func (st *Store) Close() error {
	if !st.queue.Close() {
		return nil
	}
	<-st.w.done
	st.w.closeStmts()
	rerr := st.rdb.Close()
	if err := st.wdb.db.Close(); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	if rerr != nil {
		return fmt.Errorf("close store: %w", rerr)
	}
	return nil
}

// migrate applies the embedded migrations in name order (store.Migrate),
// each in its own transaction, recording each in the migrations table.
func migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrations (
		name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	rows, err := db.QueryContext(ctx, "SELECT name FROM migrations")
	if err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	var applied []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return fmt.Errorf("read migrations: %w", err)
		}
		applied = append(applied, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	return store.Migrate(ctx, migrationFS, applied, func(ctx context.Context, name, body string) error {
		return migrateOne(ctx, db, name, body)
	})
}

// writableSchema begins a migration that rewrites a table's CREATE
// statement in sqlite_schema (SQLite's documented procedure for widening a
// CHECK constraint): migrateOne runs it with writable_schema on and bumps
// schema_version after it, so every connection reloads the schema.
const writableSchema = "-- prism:writable_schema\n"

// migrateOne runs one migration and records it, in one transaction.
func migrateOne(ctx context.Context, db *sql.DB, name, body string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %s: %w", name, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	rewrite := strings.HasPrefix(body, writableSchema)
	var version int64
	if rewrite {
		if err := tx.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&version); err != nil {
			return fmt.Errorf("migration %s: schema version: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, "PRAGMA writable_schema = ON"); err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return fmt.Errorf("migration %s: %w", name, err)
	}
	if rewrite {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA schema_version = %d", version+1)); err != nil {
			return fmt.Errorf("migration %s: bump schema version: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, "PRAGMA writable_schema = OFF"); err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO migrations (name, applied_at) VALUES (?, ?)", name, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("migration %s: record: %w", name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: commit: %w", name, err)
	}
	return nil
}
