package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"prism/core"
	"prism/db"
)

// TestStartSurvivesSIGKILLAtAcknowledgement starts sessions through both
// start routes and SIGKILLs the server the moment each acknowledgement (201
// or 303) arrives: every acknowledged session keeps its prompt, and after a
// restart no session is left without a logged turn.
func TestStartSurvivesSIGKILLAtAcknowledgement(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "prism.db")
	acked := map[string]string{} // session id → prompt
	for trial := range 6 {
		srv := startServer(t, 0, dbPath)
		prompt := fmt.Sprintf("trial %d: remember this prompt", trial)
		var id string
		if trial%2 == 0 {
			res, body := post(t, srv.url+"/api/sessions", "application/json", strings.NewReader(fmt.Sprintf(`{"prompt":%q}`, prompt)))
			_ = srv.cmd.Process.Kill()
			var got struct{ ID string }
			if res.StatusCode != http.StatusCreated || json.Unmarshal([]byte(body), &got) != nil {
				t.Fatalf("trial %d: POST /api/sessions = %d %s", trial, res.StatusCode, body)
			}
			id = got.ID
		} else {
			res, body := post(t, srv.url+"/sessions", "application/x-www-form-urlencoded", strings.NewReader(url.Values{"prompt": {prompt}}.Encode()))
			_ = srv.cmd.Process.Kill()
			loc := res.Header.Get("Location")
			if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/sessions/") {
				t.Fatalf("trial %d: POST /sessions = %d %q %s", trial, res.StatusCode, loc, body)
			}
			id, _ = url.PathUnescape(strings.TrimPrefix(loc, "/sessions/"))
		}
		<-srv.exited
		srv.exited <- nil
		acked[id] = prompt
	}

	// Restart once more (startup repair runs), then read the store.
	srv := startServer(t, 0, dbPath)
	if err := srv.stop(t); err != nil {
		t.Fatalf("restart: %v\n%s", err, srv.log())
	}
	ctx := context.Background()
	st, err := db.Open(ctx, dbPath, db.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for id, prompt := range acked {
		l, err := st.LoadSession(ctx, id)
		if err != nil {
			t.Errorf("acknowledged session %s: %v", id, err)
			continue
		}
		var texts []string
		for _, e := range l.Events {
			if e.Type == core.EventUserMessage {
				var m core.Message
				if err := json.Unmarshal(e.Data, &m); err != nil {
					t.Fatal(err)
				}
				texts = append(texts, m.Content.PlainText())
			}
		}
		if len(texts) == 0 || texts[0] != prompt {
			t.Errorf("acknowledged session %s lost its prompt: %d events, user messages %q", id, len(l.Events), texts)
		}
		if l.Info.Status == db.StatusRunning || l.Info.Status == db.StatusIdle && len(texts) == 0 {
			t.Errorf("session %s after restart: status %s with %d events", id, l.Info.Status, len(l.Events))
		}
	}
	page, err := st.ListSessions(ctx, db.ListOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range page.Sessions {
		if s.Events == 0 {
			t.Errorf("session %s has no events after startup repair (status %s)", s.ID, s.Status)
		}
	}
}
