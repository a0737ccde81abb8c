package model_test

import (
	"context"
	"io"
	"net/http"
	"sync"
)

// memTransport serves requests with an http.Handler in memory: no socket,
// so in a synctest bubble every goroutine of the exchange is the bubble's
// and blocks durably (on the pipe's channels), and the bubble's fake clock
// advances while the handler waits.
type memTransport struct{ handler http.Handler }

// RoundTrip implements http.RoundTripper: the handler runs in its own
// goroutine, the response (once its header is written) streams its body
// through a pipe, and a cancelled request ends the body, as a real
// transport does.
func (m memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	w := &memWriter{header: http.Header{}, pw: pw, wrote: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.handler.ServeHTTP(w, req)
		w.WriteHeader(http.StatusOK)
		pw.Close()
	}()
	go func() {
		select {
		case <-req.Context().Done():
			pw.CloseWithError(context.Cause(req.Context()))
		case <-done:
		}
	}()
	select {
	case <-w.wrote:
	case <-req.Context().Done():
		return nil, context.Cause(req.Context())
	}
	return &http.Response{Status: http.StatusText(w.status), StatusCode: w.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: pr, ContentLength: -1, Request: req}, nil
}

// memWriter is the handler's side of a memTransport exchange.
type memWriter struct {
	header http.Header
	sent   http.Header // the header as written, for the response
	status int
	pw     *io.PipeWriter
	wrote  chan struct{} // closed when the header is written
	once   sync.Once
}

func (w *memWriter) Header() http.Header { return w.header }

func (w *memWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.status, w.sent = code, w.header.Clone()
		close(w.wrote)
	})
}

func (w *memWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(b)
}

// Flush implements http.Flusher: every write already reaches the reader.
func (w *memWriter) Flush() {}
