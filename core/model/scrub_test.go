package model_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"prism/core"
	"prism/core/model"
)

func TestRedactURL(t *testing.T) {
	tests := map[string]string{
		"https://api.deepseek.com":                                "https://api.deepseek.com",
		"https://alice:hunter22@proxy.example/v1":                 "https://[REDACTED]@proxy.example/v1",
		"https://tok_abcdef@proxy.example/v1":                     "https://[REDACTED]@proxy.example/v1",
		"https://h.example/v1?api_key=qk-123&api-version=2024-06": "https://h.example/v1?api_key=[REDACTED]&api-version=2024-06",
		"https://h.example/v1?Token=x&sig=y&model=m":              "https://h.example/v1?Token=[REDACTED]&sig=[REDACTED]&model=m",
		"http://[::1]:8080/v1?access_token=abc":                   "http://[::1]:8080/v1?access_token=[REDACTED]",
		"://not a url with secret-pass":                           "[REDACTED]",
	}
	for in, want := range tests {
		if got := model.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// echoUpstream is a chat-completions endpoint that answers every request
// with an error echoing the Authorization header and the request URL, as
// careless proxies do.
func echoUpstream(t *testing.T, status int) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"rejected %s for %s (user %s)","type":"invalid_request_error","code":"invalid_api_key"}}`,
			r.Header.Get("Authorization"), r.URL.String(), r.URL.User)
	}))
	t.Cleanup(ts.Close)
	return ts
}

const (
	secretKey   = "sk-live-0123456789abcdef"
	secretPass  = "pa55-w0rd-secret"
	secretQuery = "qk-query-secret-987"
)

// credentialURL is base with user:password@ and an ?api_key= added.
func credentialURL(base string) string {
	return strings.Replace(base, "://", "://bob:"+secretPass+"@", 1) + "/v1?api_key=" + secretQuery + "&api-version=1"
}

func checkScrubbed(t *testing.T, what, text string) {
	t.Helper()
	for _, s := range []string{secretKey, secretPass, secretQuery} {
		if strings.Contains(text, s) {
			t.Errorf("%s leaks %q: %s", what, s, text)
		}
	}
}

// TestOpenAIErrorsNeverCarrySecrets: an upstream that echoes the key and
// the URL back, a mid-stream error that does the same, and an unreachable
// endpoint: the errors (message, Error(), the LLMFailure stored in a turn)
// and the client's logs hold neither the key nor the URL's credentials,
// yet still say what happened.
func TestOpenAIErrorsNeverCarrySecrets(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	newClient := func(base string) *model.OpenAI {
		m, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: base, APIKey: secretKey, MaxRetries: -1, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	streamErr := func(m *model.OpenAI) error {
		s, err := m.Stream(context.Background(), model.Request{Messages: []core.Message{core.NewUserMessage("u1", "hi")}})
		if err != nil {
			return err
		}
		_, err = model.Collect(s)
		return err
	}

	t.Run("error response echoing the key", func(t *testing.T) {
		err := streamErr(newClient(credentialURL(echoUpstream(t, http.StatusUnauthorized).URL)))
		var me *model.Error
		if !errors.As(err, &me) || me.Failure.Code != model.CodeAuth {
			t.Fatalf("error = %v, want an AUTH model error", err)
		}
		t.Logf("failure: %s", me.Failure.Message)
		checkScrubbed(t, "the failure message", me.Failure.Message)
		checkScrubbed(t, "Error()", err.Error())
		if !strings.Contains(me.Failure.Message, "rejected Bearer "+model.Redacted) {
			t.Errorf("the failure message lost its meaning: %s", me.Failure.Message)
		}
	})

	t.Run("mid-stream error echoing the key", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			streamHeaders(w)
			sse(t, w, chunkJSON(`{"role":"assistant","content":"Hel"}`, ""))
			sse(t, w, fmt.Sprintf(`{"error":{"message":"quota for %s exhausted"}}`, r.Header.Get("Authorization")))
		}))
		defer ts.Close()
		err := streamErr(newClient(credentialURL(ts.URL)))
		if err == nil {
			t.Fatal("the stream did not fail")
		}
		checkScrubbed(t, "the stream error", err.Error())
		if !strings.Contains(err.Error(), "quota for Bearer "+model.Redacted) {
			t.Errorf("the stream error lost its meaning: %v", err)
		}
	})

	t.Run("unreachable endpoint", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := "http://" + ln.Addr().String()
		ln.Close() // nothing listens there any more
		err = streamErr(newClient(credentialURL(addr)))
		if err == nil {
			t.Fatal("no error from a closed port")
		}
		t.Logf("transport: %v", err)
		checkScrubbed(t, "the transport error", err.Error())
		if !strings.Contains(err.Error(), ln.Addr().String()) {
			t.Errorf("the transport error does not name the endpoint: %v", err)
		}
	})

	t.Run("a base URL that does not parse", func(t *testing.T) {
		_, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: "ftp://bob:" + secretPass + "@h/?api_key=" + secretQuery, APIKey: secretKey})
		if err == nil {
			t.Fatal("an ftp base URL was accepted")
		}
		checkScrubbed(t, "the configuration error", err.Error())
	})

	checkScrubbed(t, "the client's logs", logs.String())
}

func TestScrubberEscapedForms(t *testing.T) {
	s := model.NewScrubber("k/ey+with spaces", "https://u:p%40ss%2Fword@h.example/v1")
	for _, in := range []string{"k/ey+with spaces", "k%2Fey%2Bwith+spaces", "k%2Fey+with%20spaces", "p@ss/word", "p%40ss%2Fword"} {
		if got := s.Scrub("x " + in + " y"); got != "x [REDACTED] y" {
			t.Errorf("Scrub(%q) = %q", in, got)
		}
	}
	if got := s.Scrub("a user message"); got != "a user message" {
		t.Errorf("ordinary text changed: %q", got)
	}
}
