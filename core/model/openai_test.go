package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"prism/core"
	"prism/core/model"
)

// sse writes one SSE data frame and flushes it.
func sse(t *testing.T, w http.ResponseWriter, payload string) {
	t.Helper()
	if _, err := fmt.Fprintf(w, "data: %s\n\n", payload); err != nil {
		t.Logf("write frame: %v", err)
	}
	w.(http.Flusher).Flush()
}

// chunkJSON builds a chat.completion.chunk payload with one choice delta.
func chunkJSON(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = fmt.Sprintf("%q", finish)
	}
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"deepseek-chat","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`, delta, f)
}

func toolDelta(index int, id, name, args string) string {
	fn := map[string]any{"arguments": args}
	if name != "" {
		fn["name"] = name
	}
	tc := map[string]any{"index": index, "function": fn}
	if id != "" {
		tc["id"], tc["type"] = id, "function"
	}
	data, _ := json.Marshal(map[string]any{"tool_calls": []any{tc}})
	return string(data)
}

// server is a local chat-completions endpoint scripted per attempt.
type server struct {
	t        *testing.T
	mu       sync.Mutex
	attempts []time.Time
	bodies   [][]byte
	handle   func(attempt int, w http.ResponseWriter, r *http.Request)
}

func newServer(t *testing.T, handle func(attempt int, w http.ResponseWriter, r *http.Request)) (*server, *model.OpenAI) {
	t.Helper()
	s := &server{t: t, handle: handle}
	ts := httptest.NewServer(s.handler())
	t.Cleanup(ts.Close)
	return s, s.model(ts.URL, ts.Client(), 2*time.Second)
}

// newMemServer is newServer in memory (memTransport), for tests that run
// in a synctest bubble: the exchange's every goroutine and timer is the
// bubble's, so time is the bubble's fake clock. idle is the model's
// IdleTimeout.
func newMemServer(t *testing.T, idle time.Duration, handle func(attempt int, w http.ResponseWriter, r *http.Request)) (*server, *model.OpenAI) {
	t.Helper()
	s := &server{t: t, handle: handle}
	return s, s.model("http://model.test", &http.Client{Transport: memTransport{s.handler()}}, idle)
}

// handler answers chat completions at /v1/chat/completions with the
// test's handle, recording each attempt's time and body.
func (s *server) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		if got := r.Header.Get("Authorization"); got != "Bearer test-key" {
			http.Error(w, "bad auth "+got, http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.attempts = append(s.attempts, time.Now())
		s.bodies = append(s.bodies, body)
		n := len(s.attempts)
		s.mu.Unlock()
		s.handle(n, w, r)
	})
}

// model is the adapter under test, talking to base through client.
func (s *server) model(base string, client *http.Client, idle time.Duration) *model.OpenAI {
	s.t.Helper()
	m, err := model.NewOpenAI(model.OpenAIConfig{
		BaseURL:       base + "/v1",
		APIKey:        "test-key",
		Model:         "deepseek-chat",
		MaxRetries:    2,
		MaxRetryDelay: 20 * time.Millisecond,
		IdleTimeout:   idle,
		HTTPClient:    client,
		Logger:        quiet,
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return m
}

func (s *server) attemptCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.attempts)
}

func streamHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

// run streams one request and assembles it.
func run(t *testing.T, m model.Model, req model.Request) ([]core.StreamChunk, *model.Assembler, error) {
	t.Helper()
	s, err := m.Stream(context.Background(), req)
	if err != nil {
		return nil, nil, err
	}
	chunks, err := model.Collect(s)
	a := &model.Assembler{}
	for _, c := range chunks {
		a.Push(c)
	}
	return chunks, a, err
}

func blocks(t *testing.T, a *model.Assembler) core.Content {
	t.Helper()
	b, err := a.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOpenAISplitArgumentsAndReasoning(t *testing.T) {
	args := `{"file_path":"greet/greet.go","offset":6,"note":"ünïcödé ✓"}`
	_, m := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		streamHeaders(w)
		sse(t, w, chunkJSON(`{"role":"assistant","content":"","reasoning_content":""}`, ""))
		sse(t, w, chunkJSON(`{"reasoning_content":"Let me "}`, ""))
		sse(t, w, chunkJSON(`{"reasoning_content":"think."}`, ""))
		sse(t, w, chunkJSON(`{"content":"Reading "}`, ""))
		sse(t, w, chunkJSON(`{"content":"the file."}`, ""))
		// The arguments arrive one character at a time; the id and name
		// only once.
		for i, r := range []rune(args) {
			id, name := "", ""
			if i == 0 {
				id, name = "call_1", "read"
			}
			sse(t, w, chunkJSON(toolDelta(0, id, name, string(r)), ""))
		}
		sse(t, w, chunkJSON(`{}`, "tool_calls"))
		sse(t, w, `{"id":"c1","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"prompt_cache_hit_tokens":60,"completion_tokens_details":{"reasoning_tokens":5}}}`)
		sse(t, w, "[DONE]")
	})
	chunks, a, err := run(t, m, model.Request{Messages: []core.Message{core.NewUserMessage("u1", "read it")}})
	if err != nil {
		t.Fatal(err)
	}
	got := blocks(t, a)
	if len(got) != 3 {
		t.Fatalf("blocks = %d, want 3: %s", len(got), mustJSON(got))
	}
	if r, ok := got[0].(*core.ReasoningBlock); !ok || r.Text != "Let me think." {
		t.Errorf("block 0 = %s, want reasoning", mustJSON(got[0]))
	}
	if x, ok := got[1].(*core.TextBlock); !ok || x.Text != "Reading the file." {
		t.Errorf("block 1 = %s, want text", mustJSON(got[1]))
	}
	call, ok := got[2].(*core.ToolCallBlock)
	if !ok || call.ID != "call_1" || call.Name != "read" || call.Arguments != args {
		t.Errorf("block 2 = %s, want the read call with exact arguments", mustJSON(got[2]))
	}
	if a.Finish() != model.FinishToolCalls {
		t.Errorf("finish = %q", a.Finish())
	}
	if u := a.Usage(); u == nil || *u != (core.TokenUsage{InputTokens: 40, OutputTokens: 20, CacheReadTokens: 60, ReasoningTokens: 5}) {
		t.Errorf("usage = %+v", u)
	}
	// The assembled arguments equal the concatenation of the logged deltas
	// (the assembler's source), and nothing follows finish.
	var cat strings.Builder
	for _, c := range chunks {
		if c.Type == core.ChunkToolCallDelta {
			cat.WriteString(*c.ArgumentsDelta)
		}
	}
	if cat.String() != args {
		t.Errorf("concatenated deltas = %q", cat.String())
	}
	if last := chunks[len(chunks)-1]; last.Type != core.ChunkFinish {
		t.Errorf("last chunk = %s, want finish", last.Type)
	}
	// Block indexes follow opening order: reasoning 0, text 1, tool 2.
	if *chunks[0].Index != 0 || chunks[0].BlockType != core.BlockReasoning {
		t.Errorf("first chunk = %s", mustJSON(chunks[0]))
	}
}

func TestOpenAIParallelInterleavedToolCalls(t *testing.T) {
	_, m := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		streamHeaders(w)
		sse(t, w, chunkJSON(toolDelta(0, "call_a", "read", `{"file_`), ""))
		sse(t, w, chunkJSON(toolDelta(1, "call_b", "glob", `{"pat`), ""))
		sse(t, w, chunkJSON(toolDelta(0, "", "", `path":"a.txt"}`), ""))
		sse(t, w, chunkJSON(toolDelta(1, "", "", `tern":"**/*.go"}`), ""))
		sse(t, w, chunkJSON(`{}`, "tool_calls"))
		sse(t, w, "[DONE]")
	})
	_, a, err := run(t, m, model.Request{Messages: []core.Message{core.NewUserMessage("u1", "go")}})
	if err != nil {
		t.Fatal(err)
	}
	got := blocks(t, a)
	want := core.Content{
		&core.ToolCallBlock{ID: "call_a", Name: "read", Arguments: `{"file_path":"a.txt"}`},
		&core.ToolCallBlock{ID: "call_b", Name: "glob", Arguments: `{"pattern":"**/*.go"}`},
	}
	if mustJSON(got) != mustJSON(want) {
		t.Errorf("blocks = %s\nwant %s", mustJSON(got), mustJSON(want))
	}
}

func TestOpenAIMalformedArgumentsKeptRaw(t *testing.T) {
	raw := `{"file_path": "README.md"`
	_, m := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		streamHeaders(w)
		sse(t, w, chunkJSON(toolDelta(0, "call_x", "read", raw[:5]), ""))
		sse(t, w, chunkJSON(toolDelta(0, "", "", raw[5:]), ""))
		sse(t, w, chunkJSON(`{}`, "tool_calls"))
		sse(t, w, "[DONE]")
	})
	_, a, err := run(t, m, model.Request{Messages: []core.Message{core.NewUserMessage("u1", "go")}})
	if err != nil {
		t.Fatal(err)
	}
	got := blocks(t, a)
	if c, ok := got[0].(*core.ToolCallBlock); !ok || c.Arguments != raw {
		t.Fatalf("blocks = %s, want raw %q", mustJSON(got), raw)
	}
}

func TestOpenAIMidStreamDisconnect(t *testing.T) {
	_, m := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		streamHeaders(w)
		sse(t, w, chunkJSON(`{"content":"Let me"}`, ""))
		sse(t, w, chunkJSON(toolDelta(0, "call_1", "bash", `{"command":"rm -`), ""))
		// Drop the connection in the middle of the chunked body.
		hj, ok := w.(http.Hijacker)
		if !ok {
			t.Error("no hijacker")
			return
		}
		conn, _, err := hj.Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	})
	chunks, a, err := run(t, m, model.Request{Messages: []core.Message{core.NewUserMessage("u1", "go")}})
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want *model.Error", err)
	}
	if me.Failure.Code != model.CodeTransport && me.Failure.Code != model.CodeStreamClosed {
		t.Errorf("code = %q, want TRANSPORT or STREAM_CLOSED (%v)", me.Failure.Code, err)
	}
	for _, c := range chunks {
		if c.Type == core.ChunkFinish || c.Type == core.ChunkBlockEnd {
			t.Errorf("a truncated stream produced %s", c.Type)
		}
	}
	// What an interrupted loop keeps: the text, never the partial call.
	kept := a.InterruptedBlocks()
	if mustJSON(kept) != `[{"type":"text","text":"Let me"}]` {
		t.Errorf("interrupted blocks = %s", mustJSON(kept))
	}
}

func TestOpenAIStreamWithoutDone(t *testing.T) {
	_, m := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		streamHeaders(w)
		sse(t, w, chunkJSON(`{"content":"hi"}`, "stop"))
	})
	_, _, err := run(t, m, model.Request{})
	if f := model.FailureOf(err); f.Code != model.CodeStreamClosed {
		t.Fatalf("failure = %+v, want STREAM_CLOSED", f)
	}
}

// TestOpenAIRetryAfter429: a 429's Retry-After is waited, on the bubble's
// clock (synctest): the retry comes 15ms after the refusal, not earlier.
func TestOpenAIRetryAfter429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, m := newMemServer(t, 2*time.Second, func(attempt int, w http.ResponseWriter, _ *http.Request) {
			if attempt == 1 {
				w.Header().Set("Retry-After", "0.015")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprint(w, `{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}`)
				return
			}
			streamHeaders(w)
			sse(t, w, chunkJSON(`{"content":"ok"}`, "stop"))
			sse(t, w, "[DONE]")
		})
		_, a, err := run(t, m, model.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.attemptCount(); got != 2 {
			t.Fatalf("attempts = %d, want 2", got)
		}
		if gap := s.attempts[1].Sub(s.attempts[0]); gap < 15*time.Millisecond || gap > 20*time.Millisecond {
			t.Errorf("retry came after %v, want Retry-After's 15ms (at most MaxRetryDelay's 20ms)", gap)
		}
		if got := blocks(t, a); mustJSON(got) != `[{"type":"text","text":"ok"}]` {
			t.Errorf("blocks = %s", mustJSON(got))
		}
	})
}

func TestOpenAI500ExhaustsRetries(t *testing.T) {
	s, m := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-42")
		w.Header().Set("Retry-After", "0.001")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"upstream exploded","type":"server_error"}}`)
	})
	_, _, err := run(t, m, model.Request{})
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want *model.Error", err)
	}
	want := core.LLMFailure{Message: "upstream exploded", Code: model.CodeServer, Status: 500, ProviderRetryAfterMs: 1, RequestID: "req-42"}
	if me.Failure != want {
		t.Errorf("failure = %+v\nwant      %+v", me.Failure, want)
	}
	if got := s.attemptCount(); got != 3 {
		t.Errorf("attempts = %d, want 1 + 2 retries", got)
	}
}

func TestOpenAIAuthNotRetried(t *testing.T) {
	s, m := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"Authentication Fails","type":"authentication_error"}}`)
	})
	_, _, err := run(t, m, model.Request{})
	if f := model.FailureOf(err); f.Code != model.CodeAuth || f.Status != 401 {
		t.Fatalf("failure = %+v, want AUTH 401", f)
	}
	if got := s.attemptCount(); got != 1 {
		t.Errorf("attempts = %d, want 1", got)
	}
}

func TestOpenAIErrorEventAndContentFilter(t *testing.T) {
	_, m := newServer(t, func(attempt int, w http.ResponseWriter, _ *http.Request) {
		streamHeaders(w)
		sse(t, w, chunkJSON(`{"content":"partial"}`, ""))
		if attempt == 1 {
			sse(t, w, `{"error":{"message":"overloaded","code":"server_busy"}}`)
			return
		}
		sse(t, w, chunkJSON(`{}`, "content_filter"))
		sse(t, w, "[DONE]")
	})
	_, _, err := run(t, m, model.Request{})
	if f := model.FailureOf(err); f.Code != model.CodeStreamError || f.Message != "overloaded" {
		t.Errorf("error event: failure = %+v", f)
	}
	_, _, err = run(t, m, model.Request{})
	if f := model.FailureOf(err); f.Code != "CONTENT_FILTER" {
		t.Errorf("content filter: failure = %+v", f)
	}
}

func TestOpenAICancelMidStream(t *testing.T) {
	release := make(chan struct{})
	_, m := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		streamHeaders(w)
		sse(t, w, chunkJSON(`{"content":"thinking"}`, ""))
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := m.Stream(ctx, model.Request{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c, err := s.Recv(); err != nil || c.Type != core.ChunkBlockStart {
		t.Fatalf("first = %v %v", c.Type, err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err = s.Recv()
	if f := model.FailureOf(err); f.Code != model.CodeAborted {
		t.Fatalf("after cancel: %v (%+v), want ABORTED", err, f)
	}
}

// TestOpenAIIdleTimeout: a stream silent for IdleTimeout after its first
// chunk ends with TIMEOUT, exactly then on the bubble's clock (synctest).
func TestOpenAIIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = 50 * time.Millisecond
		var start time.Time
		_, m := newMemServer(t, idle, func(_ int, w http.ResponseWriter, r *http.Request) {
			streamHeaders(w)
			start = time.Now() // before the write the client reads: no race
			sse(t, w, chunkJSON(`{"content":"slow"}`, ""))
			<-r.Context().Done()
		})
		_, _, err := run(t, m, model.Request{})
		if f := model.FailureOf(err); f.Code != model.CodeTimeout {
			t.Fatalf("failure = %+v, want TIMEOUT", f)
		}
		if waited := time.Since(start); waited != idle {
			t.Errorf("the stream ended %v after its last chunk, want the idle timeout's %v", waited, idle)
		}
	})
}

// TestOpenAIRequestConversion checks the wire transcript: system first,
// assistant tool calls with raw arguments and reasoning passback, tool
// results as role "tool" messages with their call ids.
func TestOpenAIRequestConversion(t *testing.T) {
	s, m := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		streamHeaders(w)
		sse(t, w, chunkJSON(`{"content":"done"}`, "stop"))
		sse(t, w, "[DONE]")
	})
	src := core.Source{Kind: core.SourceModel, Provider: "deepseek", Model: "deepseek-chat"}
	req := model.Request{
		System: "You are prism.",
		Messages: []core.Message{
			core.NewUserMessage("u1", "list files"),
			{ID: "a1", Role: core.RoleAssistant, Source: src, Content: core.Content{
				&core.ReasoningBlock{Text: "need glob"},
				&core.TextBlock{Text: "Looking."},
				&core.ToolCallBlock{ID: "c1", Name: "glob", Arguments: `{"pattern":"*"}`},
				&core.ToolCallBlock{ID: "c2", Name: "read", Arguments: `{"file_path":`},
			}},
			core.NewToolResultMessage("r1", "c1", core.Text("a.txt\nb.txt"), false),
			core.NewToolResultMessage("r2", "c2", core.Content{}, true),
			core.NewContextMessage("x1", "hooks", "remember the plan"),
			{ID: "a2", Role: core.RoleAssistant, Source: src, Content: core.Content{
				&core.ReasoningBlock{Text: "plain turn"}, &core.TextBlock{Text: "Done."},
			}},
		},
		Tools: []core.ToolSchema{{Name: "glob", Description: "Find files.", Parameters: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"]}`)}},
	}
	if _, _, err := run(t, m, req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Model         string            `json:"model"`
		Stream        bool              `json:"stream"`
		StreamOptions map[string]any    `json:"stream_options"`
		Messages      []json.RawMessage `json:"messages"`
		Tools         []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(s.bodies[0], &body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "deepseek-chat" || !body.Stream || body.StreamOptions["include_usage"] != true {
		t.Errorf("request header fields: %s", s.bodies[0])
	}
	want := []string{
		`{"content":"You are prism.","role":"system"}`,
		`{"content":"list files","role":"user"}`,
		`{"content":"Looking.","reasoning_content":"need glob","role":"assistant","tool_calls":[{"function":{"arguments":"{\"pattern\":\"*\"}","name":"glob"},"id":"c1","type":"function"},{"function":{"arguments":"{\"file_path\":","name":"read"},"id":"c2","type":"function"}]}`,
		`{"content":"a.txt\nb.txt","role":"tool","tool_call_id":"c1"}`,
		`{"content":"(no output)","role":"tool","tool_call_id":"c2"}`,
		`{"content":"remember the plan","role":"user"}`,
		`{"content":"Done.","role":"assistant"}`,
	}
	if len(body.Messages) != len(want) {
		t.Fatalf("messages = %d, want %d: %s", len(body.Messages), len(want), s.bodies[0])
	}
	for i, raw := range body.Messages {
		if got := canonical(t, raw); got != canonical(t, []byte(want[i])) {
			t.Errorf("message %d = %s\nwant        %s", i, got, want[i])
		}
	}
	wantTool := `{"function":{"description":"Find files.","name":"glob","parameters":{"properties":{"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}},"type":"function"}`
	if len(body.Tools) != 1 || canonical(t, body.Tools[0]) != canonical(t, []byte(wantTool)) {
		t.Errorf("tools = %s", body.Tools)
	}
}

// canonical re-encodes JSON with sorted keys.
func canonical(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

var quiet = slog.New(slog.DiscardHandler)

func mustJSON(v any) string {
	data, err := core.MarshalNoEscape(v)
	if err != nil {
		return "!" + err.Error()
	}
	return string(data)
}

// TestOpenAIKeepAliveResetsIdle: SSE comments count as activity. The
// server is quiet but for keep-alives for twice the idle timeout, each gap
// a millisecond under it; on the bubble's clock (synctest) the margin is
// exact, and the same stream with gaps a millisecond over it times out.
func TestOpenAIKeepAliveResetsIdle(t *testing.T) {
	const idle = time.Second
	for _, tc := range []struct {
		gap     time.Duration
		timeout bool
	}{{idle - time.Millisecond, false}, {idle + time.Millisecond, true}} {
		t.Run(tc.gap.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, m := newMemServer(t, idle, func(_ int, w http.ResponseWriter, r *http.Request) {
					streamHeaders(w)
					for range 3 {
						fmt.Fprint(w, ": keep-alive\n\n")
						w.(http.Flusher).Flush()
						select {
						case <-time.After(tc.gap):
						case <-r.Context().Done():
							return
						}
					}
					sse(t, w, chunkJSON(`{"content":"late but alive"}`, "stop"))
					sse(t, w, "[DONE]")
				})
				_, a, err := run(t, m, model.Request{})
				if tc.timeout {
					if f := model.FailureOf(err); f.Code != model.CodeTimeout {
						t.Fatalf("gaps over the idle timeout: failure = %+v, want TIMEOUT", f)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := mustJSON(blocks(t, a)); got != `[{"type":"text","text":"late but alive"}]` {
					t.Errorf("blocks = %s", got)
				}
			})
		})
	}
}
