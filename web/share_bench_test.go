package web_test

import (
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
	settled(b, h)
	serve := func(path string) (int, int) {
		gz := benchGet(b, h, path, true)
		return benchGet(b, h, path, false), gz
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
				benchGet(b, h, path, true)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/page")
			b.ReportMetric(float64(plain), "bytes")
			b.ReportMetric(float64(gz), "gzip-bytes")
		})
	}
}
