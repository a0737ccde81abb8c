package pgstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/jackc/pgx/v5"
)

// FolderLock is one node's claim on a watched folder that every node sees
// (prism serve --watch-shared): a session-level advisory lock on a
// dedicated connection, so that one node at a time tails the folder, and
// another takes over when the holder dies (PostgreSQL ends the lock with
// the holder's connection).
type FolderLock struct {
	st   *Store
	dir  string
	key  int64
	mu   sync.Mutex
	conn *pgx.Conn
	held bool
}

// FolderLock returns the claim on folder dir (not yet taken: TryHold).
func (st *Store) FolderLock(dir string) *FolderLock {
	h := fnv.New64a()
	h.Write([]byte("prism watch folder\x00" + dir))
	return &FolderLock{st: st, dir: dir, key: int64(h.Sum64())}
}

// TryHold reports whether this node holds the folder, taking it when it is
// free. A lost connection loses the hold (reported false, retried on the
// next call with a new connection).
func (l *FolderLock) TryHold(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil && l.conn.Ping(ctx) != nil {
		l.conn.Close(context.Background())
		l.conn, l.held = nil, false
	}
	if l.held {
		return true, nil
	}
	if l.conn == nil {
		c, err := l.st.conn(ctx, "watch")
		if err != nil {
			return false, fmt.Errorf("watch %s: connect for the folder's lock: %w", l.dir, err)
		}
		l.conn = c
	}
	if err := l.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", l.key).Scan(&l.held); err != nil {
		return false, fmt.Errorf("watch %s: take the folder's lock: %w", l.dir, translate(err, "lock folder"))
	}
	return l.held, nil
}

// Close gives the folder up (its connection, and so its lock, ends).
func (l *FolderLock) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		l.conn.Close(context.Background())
		l.conn, l.held = nil, false
	}
}
