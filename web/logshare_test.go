package web_test

import (
	"bytes"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"

	"prism/web"
)

// lockedBuffer is a log destination that handlers write concurrently.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLogsNameShareIDNotToken: at debug level every request is logged; a
// share link's requests are logged with the link's id and the path with
// "{token}" for the token — the token, which grants access, is never
// written, nor an unknown one, nor by a failing request.
func TestLogsNameShareIDNotToken(t *testing.T) {
	var logs lockedBuffer
	e, _ := shareEnv(t, func(d *web.Deps) {
		d.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	e.session(t, "s1", twoCallSession())
	sh, path := e.share(t, "s1", `{"upToSeq":8}`)
	token := strings.TrimPrefix(path, "/s/")
	const unknown = "AAAAAAAAAAAAAAAAAAAAAA"
	for _, p := range []string{path, path + "/events", path + "/calls/call-a", path + "/calls/call-a/content.txt", path + "/export.html",
		path + "/nope", "/s/" + unknown, "/s/" + unknown + "/events"} {
		e.raw(t, "GET", p)
	}
	for range e.stream(t, path+"/stream?after=-1&speed=50").events {
	}
	out := logs.String()
	if strings.Count(out, "msg=request") < 9 {
		t.Fatalf("the requests were not logged at debug level:\n%s", out)
	}
	for _, secret := range []string{token, url.PathEscape(token), unknown} {
		if strings.Contains(out, secret) {
			t.Errorf("the log holds a share token %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{"path=/s/{token}/events share_id=" + sh.ID, "path=/s/{token} share_id=" + sh.ID,
		"path=/s/{token}/stream share_id=" + sh.ID, "path=/s/{token}/calls/call-a/content.txt share_id=" + sh.ID} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
}
