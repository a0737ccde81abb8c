package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"prism/backend"
	"prism/core"
	"prism/db"
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

// callsOf lists a log's calls as "id name args → result (error)" lines.
func callsOf(t *testing.T, evs []core.Event) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range evs {
		switch e.Type {
		case core.EventToolCall:
			var d core.ToolCall
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			out[d.CallID] = d.Name + " " + d.Arguments
		case core.EventToolResult:
			var d core.ToolResultData
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			r := d.Projection()
			out[d.CallID()] += fmt.Sprintf(" → %q error=%v", r.Content.PlainText(), r.IsError)
		}
	}
	return out
}

// TestExportOTLPRoundTrip: prism export --otlp writes a dsh session as
// OTLP/JSON; another prism receiving it (the receiver's own code path)
// shows the same calls — ids, names, arguments, results, errors.
func TestExportOTLPRoundTrip(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "prism.db")
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"import", "--db", dbPath, "testdata/dsh/export/session-export.zip"}, &out, &errOut); code != 0 {
		t.Fatalf("import: %d %s", code, errOut.String())
	}
	const id = "5a9e2c41-6b7d-4f80-9a1b-2c3d4e5f6a7b"
	out.Reset()
	if code := run(ctx, []string{"export", "--otlp", "--db", dbPath, id}, &out, &errOut); code != 0 {
		t.Fatalf("export --otlp: %d %s", code, errOut.String())
	}
	st, err := db.Open(ctx, filepath.Join(t.TempDir(), "other.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	resp, err := backend.Traces{Store: st}.ReceiveTraces(ctx, out.Bytes(), true)
	if err != nil || resp.GetPartialSuccess().GetRejectedSpans() != 0 {
		t.Fatalf("receive: %v %v", resp, err)
	}
	orig, err := openAndLoad(ctx, dbPath, id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.LoadSession(ctx, otel.ConversationSessionID(id))
	if err != nil {
		t.Fatal(err)
	}
	want, have := callsOf(t, orig), callsOf(t, got.Events)
	if len(want) == 0 || len(want) != len(have) {
		t.Fatalf("calls %d, want %d:\n%v\n%v", len(have), len(want), have, want)
	}
	for k, w := range want {
		if have[k] != w {
			t.Errorf("call %s:\n got %s\nwant %s", k, have[k], w)
		}
	}
}

func openAndLoad(ctx context.Context, path, id string) ([]core.Event, error) {
	st, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	l, err := st.LoadSession(ctx, id)
	if err != nil {
		return nil, err
	}
	return l.Events, nil
}
