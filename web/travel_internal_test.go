package web

import (
	"context"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"prism/core"
)

var frameID = regexp.MustCompile(`(?m)^id: \d+$`)

// TestPlayback_Pacing: a playback waits the events' own gaps divided by its
// speed, an idle gap longer than Tuning.PlaybackIdle counting as that, and
// sends each event's frame after its wait.
func TestPlayback_Pacing(t *testing.T) {
	src := &logSource{h: core.SessionHeader{ID: "s"}}
	src.add(core.EventTurnStart, map[string]any{"turn": 1})
	src.add(core.EventStepStart, map[string]any{"turn": 1, "step": 1})
	src.add(core.EventUserMessage, core.NewUserMessage("u", "go"))
	src.add(core.EventStepEnd, map[string]any{"turn": 1, "step": 1})
	src.add(core.EventTurnEnd, map[string]any{"turn": 1, "reason": map[string]any{"kind": "completed"}})
	times := []int64{1000, 1100, 10100, 10100, 10150} // gaps 100 ms, 9 s, 0, 50 ms
	for i := range src.events {
		src.events[i].Time = times[i]
	}
	for _, tc := range []struct {
		speed int
		want  []time.Duration
	}{
		{1, []time.Duration{100 * time.Millisecond, 2 * time.Second, 50 * time.Millisecond}},
		{10, []time.Duration{10 * time.Millisecond, 200 * time.Millisecond, 5 * time.Millisecond}},
		{50, []time.Duration{2 * time.Millisecond, 40 * time.Millisecond, time.Millisecond}},
	} {
		s := New(Deps{Sessions: src, Presenter: genericPresenter{}})
		rec := httptest.NewRecorder()
		w := s.newStreamConn(s.e.NewContext(httptest.NewRequest("GET", "/", nil), rec))
		var waits []time.Duration
		var sentBefore []int // frames written when each wait began
		s.wait = func(_ context.Context, d time.Duration) bool {
			waits = append(waits, d)
			sentBefore = append(sentBefore, len(frameID.FindAllString(rec.Body.String(), -1)))
			return true
		}
		cursor, done := s.playback(context.Background(), w, s.ownerSource("s"), -1, playback{speed: tc.speed, until: -1})
		s.Close()
		if done || cursor != 4 {
			t.Errorf("speed %d: playback ended at %d (done %v), want the end of the log, not done", tc.speed, cursor, done)
		}
		if diff := cmp.Diff(tc.want, waits); diff != "" {
			t.Errorf("speed %d: waits (-want +got):\n%s", tc.speed, diff)
		}
		// Each wait comes after the frames of the events before it.
		if diff := cmp.Diff([]int{1, 2, 4}, sentBefore); diff != "" {
			t.Errorf("speed %d: frames sent before each wait (-want +got):\n%s", tc.speed, diff)
		}
	}
}
