package approval_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"prism/core"
	"prism/core/approval"
	"prism/db"
)

// sessions serves one session.
type sessions struct{ s *core.Session }

func (ss sessions) Session(id string) (*core.Session, error) {
	if id != ss.s.Header().ID {
		return nil, errors.New("no such session")
	}
	return ss.s, nil
}

// TestAskedIsDurableBeforeTheWait: a session whose appends would wait an
// hour for a commit still has its waiting call and approval/asked in the
// SQLite file — and published to observers, which is what pages see — while
// the approval waits for a person.
func TestAskedIsDurableBeforeTheWait(t *testing.T) {
	ctx := context.Background()
	st, err := db.Open(ctx, filepath.Join(t.TempDir(), "prism.db"), db.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sess, err := core.NewSession(ctx, core.SessionHeader{Cwd: t.TempDir()},
		core.SessionOptions{Store: st, FlushDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	committed := make(chan core.Event, 16)
	sess.OnAppend(func(e core.Event) { committed <- e })
	if _, err := sess.AppendMany(ctx,
		core.Draft{Type: core.EventTurnStart, Data: core.TurnStart{Turn: 1}},
		core.Draft{Type: core.EventToolCall, Data: core.ToolCall{CallID: "c1", Name: "note", Arguments: `{"title":"Plan"}`}},
	); err != nil {
		t.Fatal(err)
	}
	svc, err := approval.NewService(approval.Config{Sessions: sessions{sess}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	id := sess.Header().ID
	answered := make(chan core.ApprovalAnswer, 1)
	go func() {
		a, err := svc.Approve(ctx, core.ApprovalRequest{SessionID: id, ToolName: "note", CallID: "c1", RawArguments: `{"title":"Plan"}`})
		if err != nil {
			t.Error(err)
		}
		answered <- a
	}()

	var asked core.Event
	timeout := time.After(10 * time.Second)
	for asked.Type == "" {
		select {
		case e := <-committed:
			if e.Type == core.EventApprovalAsked {
				asked = e
			}
		case a := <-answered:
			t.Fatalf("the approval was answered (%+v) before anyone decided", a)
		case <-timeout:
			t.Fatal("approval/asked not committed within 10s of being asked: the wait began before it was durable")
		}
	}
	stored, err := st.EventsAfter(ctx, id, -1)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range stored {
		types = append(types, e.Type)
	}
	want := []string{core.EventTurnStart, core.EventToolCall, core.EventApprovalAsked}
	if len(types) != len(want) || types[0] != want[0] || types[1] != want[1] || types[2] != want[2] {
		t.Fatalf("stored while waiting: %v, want %v", types, want)
	}
	var d core.ApprovalAsked
	mustDecode(t, asked, &d)
	if _, err := svc.Decide(ctx, id, d.ID, approval.Decision{Approve: true, By: "test"}); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answered:
		if a.Outcome != core.ApprovalAllowedOnce {
			t.Fatalf("outcome %q, want %q", a.Outcome, core.ApprovalAllowedOnce)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10s of the decision")
	}
}

// TestDecidedIsDurableBeforeTheAnswer: a session whose appends would wait
// an hour for a commit has the decision in the SQLite file when Decide
// returns: a decider is told "decided" only once the decision is durable.
func TestDecidedIsDurableBeforeTheAnswer(t *testing.T) {
	ctx := context.Background()
	st, err := db.Open(ctx, filepath.Join(t.TempDir(), "prism.db"), db.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sess, err := core.NewSession(ctx, core.SessionHeader{Cwd: t.TempDir()},
		core.SessionOptions{Store: st, FlushDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan core.Event, 16)
	sess.OnAppend(func(e core.Event) {
		if e.Type == core.EventApprovalAsked {
			asked <- e
		}
	})
	if _, err := sess.AppendMany(ctx,
		core.Draft{Type: core.EventTurnStart, Data: core.TurnStart{Turn: 1}},
		core.Draft{Type: core.EventToolCall, Data: core.ToolCall{CallID: "c1", Name: "note", Arguments: `{"title":"Plan"}`}},
	); err != nil {
		t.Fatal(err)
	}
	svc, err := approval.NewService(approval.Config{Sessions: sessions{sess}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	id := sess.Header().ID
	go func() {
		if _, err := svc.Approve(ctx, core.ApprovalRequest{SessionID: id, ToolName: "note", CallID: "c1", RawArguments: `{"title":"Plan"}`}); err != nil {
			t.Error(err)
		}
	}()
	var e core.Event
	select {
	case e = <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("approval/asked not committed within 10s")
	}
	var d core.ApprovalAsked
	mustDecode(t, e, &d)
	if _, err := svc.Decide(ctx, id, d.ID, approval.Decision{Approve: true, By: "test"}); err != nil {
		t.Fatal(err)
	}
	stored, err := st.EventsAfter(ctx, id, -1)
	if err != nil {
		t.Fatal(err)
	}
	if last := stored[len(stored)-1]; last.Type != core.EventApprovalDecided {
		t.Fatalf("when Decide returned the store's last event was %s, want %s: the decision was acknowledged before it was durable",
			last.Type, core.EventApprovalDecided)
	}
}
