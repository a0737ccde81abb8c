package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"prism/core"
	"prism/web"
)

// stepClock is a web.Clock that moves only when a test advances it. Each
// AfterFunc is announced on armed.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*stepTimer
	armed  chan struct{}
}

type stepTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func newStepClock() *stepClock {
	return &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), armed: make(chan struct{}, 1024)}
}

func (c *stepClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	tm := &stepTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, tm)
	c.mu.Unlock()
	c.armed <- struct{}{}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !tm.stopped
		tm.stopped = true
		return was
	}
}

// advance moves the clock by d and runs the timers that came due, in the
// caller's goroutine.
func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*stepTimer
	keep := c.timers[:0]
	for _, tm := range c.timers {
		switch {
		case tm.stopped:
		case !tm.at.After(c.now):
			tm.stopped = true
			due = append(due, tm)
		default:
			keep = append(keep, tm)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	for _, tm := range due {
		tm.f()
	}
}

// waitArmed waits until n more timers were armed.
func (c *stepClock) waitArmed(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-c.armed:
		case <-time.After(30 * time.Second): // a failure bound, not a clock
			t.Fatal("no upload began")
		}
	}
}

// TestImportSlowUploadsHoldNoSlot: two uploads that drip into the import
// route hold no import slot — a real import made meanwhile is stored
// (201, not 503) — and once a whole rate window passes with less than the
// minimum rate, each is cut with a 408 that says why and its connection
// closed.
func TestImportSlowUploadsHoldNoSlot(t *testing.T) {
	clock := newStepClock()
	rec := &levelRecorder{}
	e := newEnv(t, func(d *web.Deps) {
		d.Tuning.Clock = clock
		d.Logger = slog.New(rec)
	})
	var drips []*bufio.Reader
	for i := range 2 {
		conn := e.rawConn(t, fmt.Sprintf("POST /api/sessions/import?name=drip%d.jsonl HTTP/1.1\r\nHost: 127.0.0.1\r\n"+
			"Content-Type: application/x-ndjson\r\nContent-Length: 100000\r\n\r\n{\"type\":", i))
		drips = append(drips, bufio.NewReader(conn))
	}
	clock.waitArmed(t, 2) // both uploads are being received

	good, err := os.ReadFile("../testdata/dsh/basic/session.jsonl.zstd")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // more imports than slots, one after another
		res, body := e.post(t, "/api/sessions/import?name=good.jsonl.zstd", "application/zstd", string(good))
		if want := []int{http.StatusCreated, http.StatusOK, http.StatusOK}[i]; res.StatusCode != want {
			t.Fatalf("import %d while two uploads drip: %d %s, want %d", i+1, res.StatusCode, body, want)
		}
	}
	clock.waitArmed(t, 3)

	clock.advance(10 * time.Second) // a whole window at a few bytes
	for i, br := range drips {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("dripping upload %d: no answer: %v", i, err)
		}
		var j struct{ Code, Error string }
		_ = json.NewDecoder(res.Body).Decode(&j)
		res.Body.Close()
		if res.StatusCode != http.StatusRequestTimeout || j.Code != core.CodeTimeout ||
			!strings.Contains(j.Error, "the upload was too slow: it must arrive at 16 KiB/s or more, averaged over 10s, and brought ") {
			t.Errorf("dripping upload %d: %d %s %q, want 408 saying it was too slow", i, res.StatusCode, j.Code, j.Error)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("dripping upload %d: the connection stays open after the 408 (%v)", i, err)
		}
	}
	if got := rec.levels("import upload cut"); len(got) != 2 || got[0] != slog.LevelWarn || got[1] != slog.LevelWarn {
		t.Errorf("the cut uploads were logged at %v, want two WARN lines", got)
	}
}

// TestImportMultipartSpoolsEveryPart: a form of two files is spooled whole,
// then each file imported (each its own transaction), in the form's order.
func TestImportMultipartSpoolsEveryPart(t *testing.T) {
	e := newEnv(t, nil)
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	for _, f := range []string{"basic/session.jsonl.zstd", "crashed/session.jsonl"} {
		data, err := os.ReadFile("../testdata/dsh/" + f)
		if err != nil {
			t.Fatal(err)
		}
		fw, _ := mw.CreateFormFile("file", strings.ReplaceAll(f, "/", "-"))
		fw.Write(data)
	}
	mw.WriteField("note", "not a file")
	mw.Close()
	res, body := e.post(t, "/api/sessions/import", mw.FormDataContentType(), form.String())
	var a struct {
		IDs []string `json:"ids"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("import of a two-file form: %d %s", res.StatusCode, body)
	}
	if want := []string{"0b1c6d2e-5f4a-4e3b-9c8d-7a6b5c4d3e2f", crashedID}; strings.Join(a.IDs, " ") != strings.Join(want, " ") {
		t.Errorf("imported %v, want %v", a.IDs, want)
	}
}

// TestImportBusyLoggedAsWarning: a 503 for want of an import slot is a
// warning in the log, not an error.
func TestImportBusyLoggedAsWarning(t *testing.T) {
	rec := &levelRecorder{}
	e := newEnv(t, func(d *web.Deps) {
		d.Importer = busyImporter{}
		d.Logger = slog.New(rec)
	})
	res, body := e.post(t, "/api/sessions/import?name=x.jsonl", "application/x-ndjson", `{"type":"session"}`+"\n")
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "5" {
		t.Fatalf("busy import: %d %s, Retry-After %q", res.StatusCode, body, res.Header.Get("Retry-After"))
	}
	if got := rec.levels("request failed"); len(got) != 1 || got[0] != slog.LevelWarn {
		t.Errorf("the busy refusal was logged at %v, want one WARN", got)
	}
}

// busyImporter answers every import as the store does when its slots are
// all taken.
type busyImporter struct{}

func (busyImporter) Import(context.Context, string, io.Reader, web.ImportOptions) ([]web.ImportedSession, error) {
	return nil, busyError{}
}

type busyError struct{}

func (busyError) Error() string             { return "the server is already importing 2 files" }
func (busyError) ErrorCode() string         { return core.CodeUnavailable }
func (busyError) ErrorName() string         { return "BusyError" }
func (busyError) RetryAfter() time.Duration { return 5 * time.Second }

// levelRecorder is a slog handler that keeps each record's message and
// level.
type levelRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *levelRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r)
	return nil
}
func (h *levelRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelRecorder) WithGroup(string) slog.Handler      { return h }

func (h *levelRecorder) levels(msg string) []slog.Level {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []slog.Level
	for _, r := range h.recs {
		if r.Message == msg {
			out = append(out, r.Level)
		}
	}
	return out
}
