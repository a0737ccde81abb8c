package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"prism/sources/otel"
)

// TestServeOTLPAddr: --otlp-addr opens a listener that takes an SDK
// exporter's spans (POST /v1/traces) and nothing else; the session they
// make is on the main listener.
func TestServeOTLPAddr(t *testing.T) {
	t.Setenv("PRISM_OWNER_TOKEN", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--otlp-addr", "127.0.0.1:0", "--no-demo", "--db", t.TempDir() + "/prism.db"}, io.Discard, pw)
		pw.Close()
	}()
	urlRE := regexp.MustCompile(`msg="?([A-Za-z ]+)"? url=(http://\S+)`)
	sc := bufio.NewScanner(pr)
	var main, traces string
	for (main == "" || traces == "") && sc.Scan() {
		if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
			if m[1] == "serving OTLP traces" {
				traces = m[2]
			} else {
				main = m[2]
			}
		}
	}
	go io.Copy(io.Discard, pr)
	if main == "" || !strings.HasSuffix(traces, "/v1/traces") {
		t.Fatalf("urls not logged: %q %q", main, traces)
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(traces))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp)))
	_, s := tp.Tracer("t").Start(ctx, "chat m", trace.WithAttributes(attribute.String(otel.AttrOperation, otel.OpChat),
		attribute.String(otel.AttrConversationID, "served"), attribute.String(otel.AttrRequestModel, "m-1")))
	s.End()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(main + "/api/sessions")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct{ ID string }
	err = json.NewDecoder(res.Body).Decode(&list)
	res.Body.Close()
	if err != nil || len(list) != 1 || list[0].ID != otel.ConversationSessionID("served") {
		t.Fatalf("sessions %+v %v", list, err)
	}
	res, err = http.Get(strings.TrimSuffix(traces, "/v1/traces") + "/api/sessions")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("the OTLP listener answered the API: %d", res.StatusCode)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServeOTLPAddrOffLoopbackNeedsOwnerToken: --otlp-addr follows --addr's
// rule.
func TestServeOTLPAddrOffLoopbackNeedsOwnerToken(t *testing.T) {
	t.Setenv("PRISM_OWNER_TOKEN", "")
	var stderr strings.Builder
	code := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--otlp-addr", "0.0.0.0:0", "--no-demo", "--db", t.TempDir() + "/prism.db"}, io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "refusing to serve on 0.0.0.0:0") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}
