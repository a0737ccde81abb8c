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
	"sync"

	"prism/core/notes"
	"prism/core/share"
)

// linkFamily is what link names of its family: its aliases
// (Server.childAliases), the session's own link notes, the descendants'
// ids (familyIDs) and the aliases' canonical form (aliasKey); members are
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
// familyKey, until a member's notes change (invalidate). A read that a
// change of one of its members overtook is returned to its caller but not
// kept (its members' notes may have been read before the change).
type familyCache struct {
	mu    sync.Mutex
	m     map[string]*linkFamily
	reads map[*familyRead]struct{}
}

// familyRead is one family being read: the sessions invalidated
// meanwhile.
type familyRead struct{ touched map[string]bool }

// familyKey is the key of link id of session in familyCache.
func familyKey(id, session string) string { return id + "\x00" + session }

// get returns the family kept under key, or reads it (read) and keeps it
// unless a member's notes changed meanwhile. A failed read is not kept.
func (c *familyCache) get(key string, read func() (*linkFamily, error)) (*linkFamily, error) {
	c.mu.Lock()
	if f := c.m[key]; f != nil {
		c.mu.Unlock()
		return f, nil
	}
	r := &familyRead{}
	if c.reads == nil {
		c.reads = map[*familyRead]struct{}{}
	}
	c.reads[r] = struct{}{}
	c.mu.Unlock()
	f, err := read()
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.reads, r)
	if err != nil {
		return nil, err
	}
	for id := range r.touched {
		if f.members[id] {
			return f, nil // overtaken: the next get reads it again
		}
	}
	if c.m == nil || len(c.m) >= maxCachedFamilies {
		c.m = map[string]*linkFamily{}
	}
	c.m[key] = f
	return f, nil
}

// has reports whether the family of key is kept.
func (c *familyCache) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key] != nil
}

// invalidate drops the families session is a member of (its notes or log
// changed) and returns their keys; a read under way that it is a member of
// is not kept.
func (c *familyCache) invalidate(session string) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for r := range c.reads {
		if r.touched == nil {
			r.touched = map[string]bool{}
		}
		r.touched[session] = true
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
		aliases, links, err := s.childAliases(ctx, sh)
		if err != nil {
			return nil, err
		}
		ids := familyIDs(aliases)
		members := make(map[string]bool, len(ids)+1)
		members[sh.SessionID] = true
		for _, id := range ids {
			members[id] = true
		}
		return &linkFamily{aliases: aliases, links: links, ids: ids, key: aliasKey(aliases), members: members}, nil
	})
}
