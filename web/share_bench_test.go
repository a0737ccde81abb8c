package web_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkShareFirstPaint10k measures GET /s/{token} of the 10,000-event
// session of BenchmarkFirstPaint10k, scoped at its middle event, with
// redaction on and off, beside the inspector's own first paint of the whole
// session: the handler alone (gzip on), and the page's bytes. The
// share page loads the scoped log, redacts it (on), folds and renders the
// window; each view is also counted (one durable write).
func BenchmarkShareFirstPaint10k(b *testing.B) {
	e, _ := shareEnv(b, nil)
	e.session(b, "big", bigSession(10000))
	h := e.srv.Handler()
	serve := func(path string) (int, int) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "127.0.0.1"
		req.Header.Set("Accept-Encoding", "gzip")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%s: status %d", path, rec.Code)
		}
		plain := httptest.NewRecorder()
		req.Header.Del("Accept-Encoding")
		h.ServeHTTP(plain, req)
		return plain.Body.Len(), rec.Body.Len()
	}
	serve("/sessions/big") // warm the highlight cache, as a running server has it
	for _, tc := range []struct{ name, body string }{
		{"inspector", ""},
		{"share-redacted", `{"upToSeq":4999}`},
		{"share-plain", `{"upToSeq":4999,"redact":false}`},
	} {
		path := "/sessions/big"
		if tc.body != "" {
			_, path = e.share(b, "big", tc.body)
		}
		b.Run(tc.name, func(b *testing.B) {
			plain, gz := serve(path)
			start := time.Now()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Host = "127.0.0.1"
				req.Header.Set("Accept-Encoding", "gzip")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d", rec.Code)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/page")
			b.ReportMetric(float64(plain), "bytes")
			b.ReportMetric(float64(gz), "gzip-bytes")
		})
	}
}
