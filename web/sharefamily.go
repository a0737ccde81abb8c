package web

// A link made with its children names its family from the link notes of
// every descendant (Server.childAliases: up to maxFamily sessions' notes).
// Its page, validator, downloads and hub all need those names, on every
// request and every child's commit: they read them here, from the family
// each link last read (familyCache), read again only once a member's
// notes change or its log is replaced (Broker.Notes, Broker.Replace) —
// the only things that can move a name.

import (
	"context"
	"errors"
	"sync"

	"prism/core/notes"
	"prism/core/share"
)

// linkFamily is what link names of its family: its aliases
// (Server.childAliases), the session's own link notes, the descendants'
// ids (familyNames) and the aliases' canonical form (aliasKey); members are
// the sessions whose notes decide it — the session and its descendants.
type linkFamily struct {
	aliases map[string]string
	links   []notes.Note
	ids     []string
	key     string
	members map[string]bool
}

// maxCachedFamilies bounds the links whose families are kept; past it the
// cache starts afresh (an open link's hub reads its family again at its
// next wake-up).
const maxCachedFamilies = 1024

// familyCache keeps the family of each link made with its children, by
// familyKey, until a member's notes change (invalidate). Readers that miss
// the same key at once share one read. A read that a change of one of its
// members overtook is returned to its readers but not kept (its members'
// notes may have been read before the change).
type familyCache struct {
	mu    sync.Mutex
	m     map[string]*linkFamily
	reads map[string]*familyRead
}

// familyRead is one family being read: its result once done is closed,
// and the sessions invalidated meanwhile.
type familyRead struct {
	done    chan struct{}
	f       *linkFamily
	err     error
	touched map[string]bool
}

// errFamilyUnread is the result of a family read that did not return.
var errFamilyUnread = errors.New("share: the family's read did not finish")

// familyKey is the key of link id of session in familyCache.
func familyKey(id, session string) string { return id + "\x00" + session }

// get returns the family kept under key, or reads it (read) — or waits for
// the read under way — and keeps it unless a member's notes changed
// meanwhile. A failed read is not kept; a reader that waited for it reads
// on its own (the read may have failed for its first reader's context).
func (c *familyCache) get(key string, read func() (*linkFamily, error)) (*linkFamily, error) {
	c.mu.Lock()
	if f := c.m[key]; f != nil {
		c.mu.Unlock()
		return f, nil
	}
	if r := c.reads[key]; r != nil {
		c.mu.Unlock()
		<-r.done
		if r.err == nil {
			return r.f, nil
		}
		return read()
	}
	r := &familyRead{done: make(chan struct{})}
	if c.reads == nil {
		c.reads = map[string]*familyRead{}
	}
	c.reads[key] = r
	c.mu.Unlock()
	defer func() { // also when read panics: its waiters read on their own
		c.mu.Lock()
		if c.reads[key] == r {
			delete(c.reads, key)
		}
		c.mu.Unlock()
		close(r.done)
	}()
	r.err = errFamilyUnread
	r.f, r.err = read()
	if r.err != nil {
		return nil, r.err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range r.touched {
		if r.f.members[id] {
			return r.f, nil // overtaken: the next get reads it again
		}
	}
	if c.m == nil || len(c.m) >= maxCachedFamilies {
		c.m = map[string]*linkFamily{}
	}
	c.m[key] = r.f
	return r.f, nil
}

// has reports whether the family of key is kept.
func (c *familyCache) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key] != nil
}

// invalidate drops the families session is a member of (its notes or log
// changed) and returns their keys; a read under way that it is a member of
// is not kept, and no later reader waits for a read under way.
func (c *familyCache) invalidate(session string) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, r := range c.reads {
		if r.touched == nil {
			r.touched = map[string]bool{}
		}
		r.touched[session] = true
		// A reader that comes after the change does not wait for a read
		// that began before it: it reads on its own.
		delete(c.reads, key)
	}
	var dropped map[string]bool
	for key, f := range c.m {
		if f.members[session] {
			if dropped == nil {
				dropped = map[string]bool{}
			}
			dropped[key] = true
			delete(c.m, key)
		}
	}
	return dropped
}

// linkFamily returns the family link sh names (Server.childAliases), as
// last read for the link (Broker.families).
func (s *Server) linkFamily(ctx context.Context, sh share.Share) (*linkFamily, error) {
	if !sh.Children || s.deps.Notes == nil {
		return &linkFamily{}, nil // none
	}
	return s.broker.families.get(familyKey(sh.ID, sh.SessionID), func() (*linkFamily, error) {
		aliases, ids, links, err := s.childAliases(ctx, sh)
		if err != nil {
			return nil, err
		}
		members := make(map[string]bool, len(ids)+1)
		members[sh.SessionID] = true
		for _, id := range ids {
			members[id] = true
		}
		return &linkFamily{aliases: aliases, links: links, ids: ids, key: aliasKey(aliases), members: members}, nil
	})
}
