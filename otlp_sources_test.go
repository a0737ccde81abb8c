package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"prism/core/redact"
	"prism/views"
	"prism/web"
)

// TestOTLPSourcesRow: spans received by prism serve's wiring give their
// sender a row on the source-health page (/sources): kind otlp, its
// service.name and the spans received.
func TestOTLPSourcesRow(t *testing.T) {
	cfg, err := parseServeFlags([]string{"--db", filepath.Join(t.TempDir(), "prism.db"), "--no-demo"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	deps, release, err := openBackend(t.Context(), cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if deps.Redactor, err = redact.New(cfg.RedactRules...); err != nil {
		t.Fatal(err)
	}
	deps.Logger = quietLog()
	srv := web.New(deps)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close(); release() })
	batch, err := os.ReadFile("sources/otel/testdata/batch.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(hs.URL+views.OTLPTracesURL(), "application/json", bytes.NewReader(batch))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/traces: %d", res.StatusCode)
	}
	res, err = http.Get(hs.URL + views.RouteSources)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if page := string(body); res.StatusCode != http.StatusOK || !strings.Contains(page, "OTLP /v1/traces · coder-agent · ") || !strings.Contains(page, `data-kind="OTLP"`) {
		t.Fatalf("/sources (%d) has no row of the sender:\n%s", res.StatusCode, page)
	}
}
