// Package pgstore is prism's PostgreSQL session store, for several prism
// nodes sharing one database. It speaks the same vocabulary as the SQLite
// store (package store) and satisfies the same consumer interfaces.
//
// Appends: one writer goroutine per node owns a connection and commits
// concurrent appends together (group commit). The append transaction locks
// the rows of its sessions (FOR UPDATE, in id order, so two nodes' batches
// never deadlock), checks that each append continues its session's
// last_seq, inserts the events and moves last_seq; a second node appending
// to the same session waits for the lock and then gets a clear
// core.CodeConflict. The primary key (session_id, seq) and a constraint
// trigger refuse a duplicate or a gap whatever the client.
//
// Fan-out: every transaction that changes a session NOTIFYs prism_events
// with "<session id> <last seq>" (never event data). Every node LISTENs on
// one connection, reads what it has not delivered from the events table and
// hands it to Options.Committed, exactly as its own commits; a node that
// lost that connection reconnects and catches up from the last seq it
// delivered per session, so nothing is missed or delivered twice.
//
// Ownership: a live session created through a node (CreateSession) is
// claimed with a per-session advisory lock, held on one connection of that
// node until it closes. Startup crash repair touches only running sessions
// whose lock is free; follow-up messages and cancels for a session another
// node runs are forwarded through the database (Forward, HandleCommands).
//
// Orphans: a session whose node died, or lost its connection, looks
// running while nobody runs it. Every node sweeps on a timer
// (Options.RepairInterval) and when its LISTEN connection comes back, and
// repairs a running session whose lock stayed free for two intervals; a
// node whose append failed (the database unreachable) gives that
// session's lock back and repairs it itself once the database answers,
// saying "the store was unreachable". orphans.go says how, and why an
// owner that is alive but slow is never repaired.
//
// Errors: translate (errors.go) is the one place the driver's errors
// become prism's; an unreachable database is a *store.UnavailableError
// (core.CodeUnavailable, with a Retry-After).
package pgstore

import (
	"context"
	"embed"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"prism/core"
	"prism/core/logkey"
	"prism/sources/dsh"
	"prism/store"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// ErrClosed is returned by writes after Close (store.ErrClosed).
var ErrClosed = store.ErrClosed

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// Logger receives the store's logs (default slog.Default()).
	Logger *slog.Logger
	// Committed, if set, is called after each commit that changed a
	// session — this node's commits and, read back from the events table,
	// every other node's — once per session and change, in seq order per
	// session, from one goroutine. It must not block or write to the store.
	Committed func(store.Commit)
	// Now is the store's clock for the times it stamps itself (share
	// links). Default time.Now.
	Now func() time.Time
	// Limits bound what import accepts (zero fields: defaults).
	Limits dsh.Limits
	// Foreign are the other agents' transcript formats import reads
	// besides prism's and dsh's, each detected by content.
	Foreign []dsh.Foreign
	// MaxImports bounds the imports this node decodes at once (default
	// store.DefaultMaxImports): with Limits.MaxMemoryBytes it bounds the
	// memory imports take. An import past it is refused with a
	// *store.BusyError (HTTP 503 with Retry-After). The bound is per node,
	// not per database: it is about this process's memory.
	MaxImports int
	// MaxBatchEvents bounds the events one group commit takes (default 1000).
	MaxBatchEvents int
	// MaxConns bounds the read and transaction pool (default 8); the
	// writer, the listener and the lock holder have a connection each.
	MaxConns int32
	// Name identifies this node in PostgreSQL's application_name
	// ("prism <role> <name>"; default the process id).
	Name string
	// RepairInterval is how often this node looks for sessions that look
	// running but whose node is gone (their advisory lock is free) and
	// repairs them (orphans.go says how). Zero or negative: no sweep —
	// what a command-line tool (import, export, migrate) wants, which is
	// no node; a serving node sets it (DefaultRepairInterval unless told
	// otherwise).
	RepairInterval time.Duration
}

// Store is a PostgreSQL session store. It implements core.EventStore. Its
// methods are safe for concurrent use.
type Store struct {
	opts Options
	log  *slog.Logger
	cfg  *pgx.ConnConfig // of the dedicated connections
	pool *pgxpool.Pool
	w    *writer
	fan  *fanout
	own  *owner
	orph *orphans // nil without Options.RepairInterval
	// imports holds one token per import decoding now (Options.MaxImports).
	imports store.ImportSlots
	// deleted are the sessions deleted through this Store during its run
	// (a watcher skips their files meanwhile; watch.go).
	deleted deletedSet
	// marks are the watched sessions' summaries at their marks
	// (AppendWatched): this node's, each void once another node wrote
	// the session (its summary no longer the one this node left).
	marks store.WatchMarks

	stop context.CancelFunc // ends the background goroutines
	bg   sync.WaitGroup

	// queue is the writer's requests (writer.go).
	queue *store.Queue[*request]
	// pageTexts are buffers a search's page reads its text into
	// (*pageText, searchquery.go).
	pageTexts sync.Pool
}

var (
	_ core.EventStore = (*Store)(nil)
	_ store.Store     = (*Store)(nil)
)

// IsURL reports whether dsn names a PostgreSQL database (postgres:// or
// postgresql://) rather than a SQLite file.
func IsURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open connects to the database at url (postgres://…), applies pending
// migrations (one node at a time), starts listening for other nodes'
// commits and starts the writer. The caller must Close it.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxBatchEvents <= 0 {
		opts.MaxBatchEvents = 1000
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 8
	}
	if opts.Name == "" {
		opts.Name = fmt.Sprintf("pid=%d", os.Getpid())
	}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, core.Errorf(core.CodeInvalid, "open store: bad PostgreSQL URL: %v", err)
	}
	pcfg.MaxConns = opts.MaxConns
	pcfg.ConnConfig.RuntimeParams["application_name"] = "prism pool " + opts.Name
	where := describe(pcfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", where, err)
	}
	st := &Store{opts: opts, log: opts.Logger, cfg: pcfg.ConnConfig, pool: pool, imports: store.NewImportSlots(opts.MaxImports),
		queue: store.NewQueue[*request](4096)}
	if err := st.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", where, err)
	}
	bg, stop := context.WithCancel(context.Background())
	st.stop = stop
	st.own = newOwner(st)
	if opts.RepairInterval > 0 {
		st.orph = newOrphans(st, opts.RepairInterval)
	}
	st.fan = newFanout(st)
	if err := st.fan.start(ctx, bg); err != nil {
		st.shutdown()
		return nil, fmt.Errorf("open store %s: listen: %w", where, err)
	}
	w, err := newWriter(ctx, st)
	if err != nil {
		st.shutdown()
		return nil, fmt.Errorf("open store %s: %w", where, err)
	}
	st.w = w
	st.bg.Go(w.run)
	if st.orph != nil {
		st.bg.Go(func() { st.orph.run(bg) })
	}
	if err := st.resummarize(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("open store %s: %w", where, err)
	}
	if err := st.reindexSearch(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("open store %s: %w", where, err)
	}
	return st, nil
}

// describe names a database in errors and logs without its password.
func describe(c *pgx.ConnConfig) string {
	return fmt.Sprintf("postgres://%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

// conn opens a dedicated connection for role (writer, listen, locks).
func (st *Store) conn(ctx context.Context, role string) (*pgx.Conn, error) {
	cfg := st.cfg.Copy()
	cfg.RuntimeParams["application_name"] = "prism " + role + " " + st.opts.Name
	return pgx.ConnectConfig(ctx, cfg)
}

// now reads the store's clock.
func (st *Store) now() time.Time { return st.opts.Now() }

// Pool returns the connection pool (for tools and tests that look at the
// database directly).
func (st *Store) Pool() *pgxpool.Pool { return st.pool }

// Close drains queued writes, stops the writer and the listener, releases
// this node's session locks and closes every connection. Writes after
// Close fail with ErrClosed.
func (st *Store) Close() error {
	if !st.queue.Close() {
		return nil
	}
	if st.w != nil {
		<-st.w.done
	}
	st.shutdown()
	return nil
}

// shutdown stops the background goroutines and closes the connections.
func (st *Store) shutdown() {
	if st.fan != nil {
		st.fan.flush()
	}
	if st.stop != nil {
		st.stop()
	}
	st.bg.Wait()
	if st.w != nil {
		st.w.close()
	}
	if st.own != nil {
		st.own.close()
	}
	st.pool.Close()
}

// migrationLock serialises migrations of nodes starting together.
const migrationLock int64 = 0x7072_6973_6d00_0001 // "prism\0" 1

// migrate applies the embedded migrations in name order (store.Migrate),
// each in its own transaction, under an advisory lock.
func (st *Store) migrate(ctx context.Context) error {
	c, err := st.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	if _, err := c.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return fmt.Errorf("migrations: lock: %w", err)
	}
	defer c.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", migrationLock) //nolint:errcheck
	if _, err := c.Exec(ctx, `CREATE TABLE IF NOT EXISTS migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	rows, err := c.Query(ctx, "SELECT name FROM migrations")
	if err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	return store.Migrate(ctx, migrationFS, applied, func(ctx context.Context, name, body string) error {
		err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, body); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO migrations (name) VALUES ($1)", name)
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
		st.log.Info("applied migration", logkey.Migration, name)
		return nil
	})
}
