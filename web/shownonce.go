package web

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"prism/views"
)

// shownOnceTTL is how long a created share link waits for the page its
// form's POST redirects to.
const shownOnceTTL = 10 * time.Minute

// shownOnceMax bounds the links waiting to be shown.
const shownOnceMax = 1024

// shownOnce holds share links just created by the session page's form for
// the page its POST redirects to (post/redirect/get): a link's URL — its
// token is stored hashed, so nothing else can show it again — is handed
// out once, to the first GET that names its key, and forgotten after
// shownOnceTTL. A reload of that page shows the panel without it.
type shownOnce struct {
	mu sync.Mutex
	m  map[string]shownLink
}

type shownLink struct {
	session string
	row     views.ShareRowView
	until   time.Time
}

// put keeps row (with its URL) for session id and returns its key.
func (o *shownOnce) put(id string, row views.ShareRowView, now time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	key := hex.EncodeToString(b[:])
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]shownLink{}
	}
	for k, l := range o.m {
		if !now.Before(l.until) {
			delete(o.m, k)
		}
	}
	for k := range o.m {
		if len(o.m) < shownOnceMax {
			break
		}
		delete(o.m, k)
	}
	o.m[key] = shownLink{session: id, row: row, until: now.Add(shownOnceTTL)}
	return key
}

// take hands out the link kept under key for session id, once.
func (o *shownOnce) take(id, key string, now time.Time) *views.ShareRowView {
	o.mu.Lock()
	defer o.mu.Unlock()
	l, ok := o.m[key]
	if !ok || l.session != id {
		return nil
	}
	delete(o.m, key)
	if !now.Before(l.until) {
		return nil
	}
	return &l.row
}
