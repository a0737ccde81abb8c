package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"prism/web"
)

// TestShareHubOneFoldForAllViewers: N viewers of one live share link share
// one hub — the session is loaded, redacted and folded once per event, not
// once per viewer; each update is rendered once; a crowd opening the page
// at the same seq is caught up by one render — and every viewer receives
// the same redacted frames. Revoking the link ends the hub and every
// viewer's stream at once, each told why.
func TestShareHubOneFoldForAllViewers(t *testing.T) {
	const viewers = 40
	e, _ := shareEnv(t, nil)
	events, secrets := secretEvents()
	const first = 3
	e.session(t, "s1", events[:first])
	c, path := e.share(t, "s1", "{}") // redacted

	// Every viewer's page stands one event behind the log: each is caught
	// up (to seq first-1) on connect, which proves it is subscribed.
	streams := make([]*sseClient, viewers)
	for i := range streams {
		streams[i] = e.stream(t, path+"/stream?after="+strconv.Itoa(first-2))
	}
	for _, st := range streams {
		st.until(t, func(ev sseEvent) bool { return ev.ID == strconv.Itoa(first-1) })
	}
	before := e.srv.LiveStats()
	if before.Hubs != 1 {
		t.Fatalf("%d viewers of one link opened %d hubs, want 1", viewers, before.Hubs)
	}
	if before.CatchUps != 1 {
		t.Errorf("%d viewers at the same seq were caught up by %d renders, want 1", viewers, before.CatchUps)
	}

	e.append(t, "s1", events[first:]...)
	last := strconv.Itoa(len(events) - 1)
	var frames []string
	var perViewer int64
	for i, st := range streams {
		var got strings.Builder
		evs := st.until(t, func(ev sseEvent) bool { return ev.ID == last })
		if i == 0 {
			perViewer = int64(len(evs))
		}
		for _, ev := range evs {
			got.WriteString(ev.ID + "\n" + ev.Elements() + "\n")
		}
		frames = append(frames, got.String())
		if got.String() != frames[0] {
			t.Errorf("viewer %d received other frames than viewer 0:\n%s\nvs\n%s", i, got.String(), frames[0])
		}
	}
	for _, s := range secrets {
		if strings.Contains(frames[0], s) {
			t.Errorf("the frames leak %q", s)
		}
	}
	if !strings.Contains(frames[0], "[redacted:") {
		t.Error("the frames show no redaction marker: the test redacts nothing")
	}
	after := e.srv.LiveStats()
	n := int64(len(events))
	if after.Redacted != n {
		t.Errorf("%d events seen by %d viewers were redacted %d times, want %d (once each)", n, viewers, after.Redacted, n)
	}
	if after.Folded != n {
		t.Errorf("%d events seen by %d viewers were folded %d times, want %d (once each)", n, viewers, after.Folded, n)
	}
	if rendered := after.Frames - before.Frames; rendered == 0 || rendered > perViewer {
		t.Errorf("the hub rendered %d frames for %d viewers receiving %d each; want at most %d (once per update)", rendered, viewers, perViewer, perViewer)
	}

	// Revoking ends the hub and every stream, each told so.
	if res := e.apiJSON(t, http.MethodDelete, "/api/shares/"+c.ID, "", nil); res.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
	for i, st := range streams {
		var lastEv sseEvent
		for ev := range st.events {
			lastEv = ev
		}
		if !strings.Contains(lastEv.Elements(), "revoked or has expired") {
			t.Errorf("viewer %d's last event: %q", i, lastEv.Elements())
		}
	}
	if hubs := e.srv.LiveStats().Hubs; hubs != 0 {
		t.Errorf("%d hubs open after the link was revoked and its streams ended", hubs)
	}
}

// TestShareHubExpiry: a link's hub ends when the link expires, and its
// viewers are told, within Tuning.ShareCheck.
func TestShareHubExpiry(t *testing.T) {
	e, clk := shareEnv(t, nil)
	e.session(t, "s1", twoCallSession())
	_, path := e.share(t, "s1", fmt.Sprintf(`{"expiresAt":%d}`, clk.Now().Add(time.Hour).UnixMilli()))
	a, b := e.stream(t, path+"/stream?after=-1"), e.stream(t, path+"/stream?after=-1")
	a.next(t)
	b.next(t)
	clk.advance(2 * time.Hour)
	for _, st := range []*sseClient{a, b} {
		var lastEv sseEvent
		for ev := range st.events {
			lastEv = ev
		}
		if !strings.Contains(lastEv.Elements(), "revoked or has expired") {
			t.Errorf("last event after expiry: %q", lastEv.Elements())
		}
	}
}

// TestShareHubPageReadsItsLog: while a link's hub is open, the link's page
// is rendered from the log the hub redacted — no redaction pass per page
// view — and shows what a page without a hub shows.
func TestShareHubPageReadsItsLog(t *testing.T) {
	e, _ := shareEnv(t, nil)
	events, secrets := secretEvents()
	e.session(t, "s1", events)
	_, path := e.share(t, "s1", "{}")
	_, cold := e.raw(t, "GET", path)
	st := e.stream(t, path+"/stream?after=-1")
	st.next(t)
	redacted := e.srv.LiveStats().Redacted
	for range 5 {
		_, warm := e.raw(t, "GET", path)
		if diff := cardStates(t, warm); strings.Join(diff, "|") != strings.Join(cardStates(t, cold), "|") {
			t.Errorf("the page from the hub's log differs: %v vs %v", diff, cardStates(t, cold))
		}
		for _, s := range secrets {
			if strings.Contains(warm, s) {
				t.Errorf("the page leaks %q", s)
			}
		}
	}
	if got := e.srv.LiveStats().Redacted; got != redacted {
		t.Errorf("5 page views redacted %d events more, want 0 (the hub's log is read)", got-redacted)
	}
}

// TestShareAdmission: a link serves at most Tuning.ShareStreamsPerLink
// streams (live and playback) and all links Tuning.ShareStreams; past them
// a stream and the link's page are answered 429 (the link) or 503 (all)
// with Retry-After and the busy page, while the owner's streams still get
// in. A stream that ends gives its place back.
func TestShareAdmission(t *testing.T) {
	e, _ := shareEnv(t, func(d *web.Deps) {
		d.Tuning.ShareStreamsPerLink = 2
		d.Tuning.ShareStreams = 3
	})
	e.session(t, "s1", twoCallSession())
	_, a := e.share(t, "s1", "{}")
	_, b := e.share(t, "s1", `{"redact":false}`)
	_, c := e.share(t, "s1", "{}")

	busy := func(what, p string, want int) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, e.base()+p, nil)
		res, err := e.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("%s: %d, want %d", what, res.StatusCode, want) // an admitted stream: not read
			return
		}
		raw, _ := io.ReadAll(res.Body)
		body := string(raw)
		if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra <= 0 {
			t.Errorf("%s: Retry-After %q", what, res.Header.Get("Retry-After"))
		}
		if !strings.Contains(body, `data-testid="share-busy"`) || !strings.Contains(body, "busy") {
			t.Errorf("%s: not the busy page: %.300s", what, body)
		}
	}
	a1 := e.stream(t, a+"/stream?after=-1")
	a1.next(t)
	a2 := e.stream(t, a+"/stream?after=-1")
	a2.next(t)
	busy("a third stream of a full link", a+"/stream?after=-1", http.StatusTooManyRequests)
	busy("a playback on a full link", a+"/stream?speed=50&after=-1", http.StatusTooManyRequests) // it counts too
	busy("the page of a full link", a, http.StatusTooManyRequests)

	b1 := e.stream(t, b+"/stream?after=-1")
	b1.next(t)
	busy("a stream past the total", c+"/stream?after=-1", http.StatusServiceUnavailable)
	busy("a page past the total", c, http.StatusServiceUnavailable)

	// The owner's budget is its own.
	owner := e.stream(t, "/sessions/s1/stream?after=-1")
	if owner.res.StatusCode != http.StatusOK {
		t.Fatalf("the owner's stream while the share streams are full: %d", owner.res.StatusCode)
	}
	owner.next(t)
	if res, _ := e.get(t, "/sessions/s1"); res.StatusCode != http.StatusOK {
		t.Errorf("the owner's page while the share streams are full: %d", res.StatusCode)
	}

	// A stream that ends gives its place back (the server notices the
	// closed connection on its own time: ask until it has, or 5 s).
	b1.cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := e.stream(t, c+"/stream?after=-1")
		if st.res.StatusCode == http.StatusOK {
			st.next(t)
			break
		}
		st.cancel()
		if time.Now().After(deadline) {
			t.Fatalf("a stream past the total was still refused (%d) 5 s after one ended", st.res.StatusCode)
		}
		<-time.After(20 * time.Millisecond)
	}
}

// TestShareAdmissionConcurrent: a burst of viewers on one link is admitted
// up to the cap exactly — never past it — and the rest are refused.
func TestShareAdmissionConcurrent(t *testing.T) {
	const limit, tries = 5, 20
	e, _ := shareEnv(t, func(d *web.Deps) { d.Tuning.ShareStreamsPerLink = limit })
	e.session(t, "s1", twoCallSession())
	_, a := e.share(t, "s1", "{}")
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.base()+a+"/stream?after=-1", nil)
			res, err := e.client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(func() { res.Body.Close() })
			mu.Lock()
			codes[res.StatusCode]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[http.StatusOK] != limit || codes[http.StatusTooManyRequests] != tries-limit {
		t.Errorf("%d concurrent viewers of a link capped at %d: %v", tries, limit, codes)
	}
}

// TestShareConditional: a link's page and export.html carry a validator and
// Cache-Control private, no-cache; a reload that holds it is answered 304
// with no body (and still counts as a view), until the session changes;
// once the link is revoked or expires, the same reload is the share 404.
func TestShareConditional(t *testing.T) {
	e, clk := shareEnv(t, nil)
	events := twoCallSession()
	e.session(t, "s1", events[:4])
	c, path := e.share(t, "s1", fmt.Sprintf(`{"expiresAt":%d}`, clk.Now().Add(time.Hour).UnixMilli()))
	_, expiring := e.share(t, "s1", fmt.Sprintf(`{"expiresAt":%d}`, clk.Now().Add(time.Minute).UnixMilli()))
	for _, p := range []string{path, path + "/export.html", path + "?at=2", expiring} {
		res, body := e.get(t, p)
		tag := res.Header.Get("ETag")
		if res.StatusCode != http.StatusOK || tag == "" || len(body) == 0 {
			t.Fatalf("GET %s: %d, ETag %q", p, res.StatusCode, tag)
		}
		if cc := res.Header.Get("Cache-Control"); !strings.Contains(cc, "private") || !strings.Contains(cc, "no-cache") {
			t.Errorf("GET %s: Cache-Control %q, want private and no-cache", p, cc)
		}
		res, body = e.get(t, p, "If-None-Match", tag)
		if res.StatusCode != http.StatusNotModified || body != "" {
			t.Errorf("GET %s with its ETag: %d, %d bytes; want 304 and none", p, res.StatusCode, len(body))
		}
		if res, _ := e.get(t, p, "If-None-Match", `W/"other"`); res.StatusCode != http.StatusOK {
			t.Errorf("GET %s with another ETag: %d, want 200", p, res.StatusCode)
		}
	}
	sh, err := e.store.Share(context.Background(), c.ID)
	if err != nil || sh.Views != 6 { // 3 reads of path and 3 of ?at=2, a 304 each included
		t.Errorf("views after 304s: %d %v, want 6", sh.Views, err)
	}
	res, _ := e.get(t, path)
	tag := res.Header.Get("ETag")
	e.append(t, "s1", events[4:]...)
	if res, _ := e.get(t, path, "If-None-Match", tag); res.StatusCode != http.StatusOK || res.Header.Get("ETag") == tag {
		t.Errorf("after the session changed: %d, ETag %q (was %q); want 200 and a new one", res.StatusCode, res.Header.Get("ETag"), tag)
	}
	res, _ = e.get(t, path)
	tag = res.Header.Get("ETag")
	resExp, _ := e.get(t, expiring)
	expTag := resExp.Header.Get("ETag")
	if res := e.apiJSON(t, http.MethodDelete, "/api/shares/"+c.ID, "", nil); res.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
	clk.advance(2 * time.Minute)
	for p, tg := range map[string]string{path: tag, expiring: expTag} {
		if res, body := e.get(t, p, "If-None-Match", tg); res.StatusCode != http.StatusNotFound || !strings.Contains(body, `data-testid="share-not-found"`) {
			t.Errorf("a reload of a revoked or expired link with its ETag: %d", res.StatusCode)
		}
	}
}

// TestSharePageRenderedOnce: a crowd opening a link's page renders it once
// (the server keeps it by its validator); the page is the same bytes for
// each reader, and a change of the session renders it anew.
func TestSharePageRenderedOnce(t *testing.T) {
	e, _ := shareEnv(t, nil)
	events := twoCallSession()
	e.session(t, "s1", events[:4])
	_, path := e.share(t, "s1", "{}")
	const readers = 20
	pages := make(chan string, readers)
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodGet, e.base()+path, nil)
			res, err := e.client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			pages <- string(b)
		}()
	}
	wg.Wait()
	close(pages)
	first := ""
	for p := range pages {
		if first == "" {
			first = p
			if !strings.Contains(p, `data-testid="session-page"`) {
				t.Fatalf("not the session page: %.200s", p)
			}
		}
		if p != first {
			t.Error("two readers of the same link received different pages")
		}
	}
	if n := e.srv.SharePagesRendered(); n != 1 {
		t.Errorf("%d readers opening a link rendered its page %d times, want 1", readers, n)
	}
	e.append(t, "s1", events[4:]...)
	_, page := e.get(t, path)
	if n := e.srv.SharePagesRendered(); n != 2 || !strings.Contains(page, `data-call-id="call-b"`) {
		t.Errorf("after the session changed: %d renders in all (want 2), call-b shown: %v", n, strings.Contains(page, `data-call-id="call-b"`))
	}
}
