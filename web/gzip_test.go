package web_test

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"prism/core"
	"prism/core/coretest"
)

// rawGet sends GET path with Accept-Encoding ae (none when empty) through a
// transport that leaves the body as the server sent it.
func rawGet(t *testing.T, e *env, path, ae string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.base()+path, nil)
	req.Header.Set("Accept", "text/html")
	if ae != "" {
		req.Header.Set("Accept-Encoding", ae)
	}
	res, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

func gunzip(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("bad gzip: %v", err)
	}
	return string(out)
}

// TestGzip: a page goes out gzip-compressed to a client that accepts it —
// the very bytes the plain page has — and plain to one that does not; an
// error page and a small response arrive readable with their status;
// streams are never compressed (each frame is written as is).
func TestGzip(t *testing.T) {
	e := newEnv(t, nil)
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart()
	for i := range 40 {
		id := "c" + itoa(int64(i))
		b.Call(id, "bash", `{"command":"make test","description":"run the tests"}`).Result(id, strings.Repeat("ok  \tprism/pkg\t0.01s\n", 20), false, nil, nil)
	}
	b.StepEnd().TurnEnd(core.TurnCompleted)
	e.session(t, "gz", b.Events)

	for _, path := range []string{"/sessions/gz", "/sessions/gz/calls/c3", "/"} {
		plainRes, plain := rawGet(t, e, path, "")
		if plainRes.StatusCode != 200 || plainRes.Header.Get("Content-Encoding") != "" || len(plain) < 1024 {
			t.Fatalf("%s without gzip: status %d, encoding %q, %d bytes", path, plainRes.StatusCode, plainRes.Header.Get("Content-Encoding"), len(plain))
		}
		res, body := rawGet(t, e, path, "gzip, deflate, br")
		if res.StatusCode != 200 || res.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("%s with gzip: status %d, encoding %q", path, res.StatusCode, res.Header.Get("Content-Encoding"))
		}
		if !strings.Contains(strings.Join(res.Header.Values("Vary"), ","), "Accept-Encoding") {
			t.Errorf("%s: Vary %q does not name Accept-Encoding", path, res.Header.Values("Vary"))
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
		if len(body) >= len(plain) {
			t.Errorf("%s: gzip body %d bytes, plain %d", path, len(body), len(plain))
		}
		if got := gunzip(t, body); got != string(plain) {
			t.Fatalf("%s: the gzip body decodes to %d bytes that differ from the plain page's %d", path, len(got), len(plain))
		}
	}

	// An error Echo's handler answers after the middleware: readable, with
	// its status, whatever the encoding.
	res, body := rawGet(t, e, "/sessions/nope", "gzip")
	text := string(body)
	if res.Header.Get("Content-Encoding") == "gzip" {
		text = gunzip(t, body)
	}
	if res.StatusCode != http.StatusNotFound || !strings.Contains(text, "nope") {
		t.Fatalf("missing session with gzip: status %d, body %.200q", res.StatusCode, text)
	}

	// The session stream: no Content-Encoding, frames readable as sent.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.base()+"/sessions/gz/stream", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	sres, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer sres.Body.Close()
	if ce := sres.Header.Get("Content-Encoding"); ce != "" || !strings.HasPrefix(sres.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: Content-Encoding %q, Content-Type %q", ce, sres.Header.Get("Content-Type"))
	}
}
