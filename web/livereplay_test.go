package web_test

import (
	"strings"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/web"
)

// fixtures are the sessions live-equals-replay runs over. (When the store
// lands, its testdata/sessions fixtures join them.)
func fixtures(t testing.TB) map[string][]core.Event {
	long := coretest.NewBuilder(t0)
	for turn := range 3 {
		long.TurnStart().StepStart().User("turn " + itoa(int64(turn)))
		long.Chunks("thinking ", "about ", "it")
		long.Assistant("thinking about it", [3]string{"a", "bash", `{"command":"ls"}`})
		long.Call("a", "bash", `{"command":"ls"}`).Result("a", strings.Repeat("file\n", 40)+"[exit code: 0]", false, nil, nil)
		long.Call("b", "read", `{"path":"x.go"}`).Result("b", "…", false, map[string]any{"path": "x.go", "offset": 1, "totalLines": 1, "lines": []map[string]any{{"number": 1, "text": "package x"}}}, nil)
		long.StepEnd().TurnEnd(core.TurnCompleted)
	}
	crash := coretest.NewBuilder(t0)
	crash.TurnStart().StepStart().User("crash").Call("k1", "bash", `{"command":"rm -rf build"}`).Call("k2", "note", `{}`)
	crash.Result("k1", "The tool call was interrupted after it was recorded, but no result was durably recorded.", true, nil, &core.ErrorInfo{Name: "ToolOutcomeUnknownError", Code: core.CodeToolOutcomeUnknown})
	crash.Result("k3", "The tool call was interrupted before the Harness recorded it as started.", true, nil, &core.ErrorInfo{Name: "ToolNotStartedError", Code: core.CodeToolNotStarted})
	crash.StepEnd().TurnEnd(core.TurnInterrupted)
	return map[string][]core.Event{
		"demo":   demoEvents(t),
		"long":   long.Events,
		"crash":  crash.Events,
		"quoted": quotedSession(),
	}
}

func quotedSession() []core.Event {
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart()
	id := `a "quoted" call id with spaces`
	b.Call(id, "bash", `{"command":"echo '<script>alert(1)</script>'"}`).Result(id, "<script>alert(1)</script>\r\nx", false, nil, nil)
	b.Call("ü/ß", "note", `{}`)
	b.StepEnd().TurnEnd(core.TurnCompleted)
	return b.Events
}

// TestLiveEqualsReplay: for each fixture, the last HTML of each card that
// reached the browser over SSE — live as events are committed, and again
// through a resuming stream — equals that card in a full page render, byte
// for byte.
func TestLiveEqualsReplay(t *testing.T) {
	for name, events := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, func(d *web.Deps) { d.Tuning.Window = 100000 })
			e.session(t, "s1", nil)
			lastID := itoa(events[len(events)-1].Seq)

			// Live: the page is open before the first event; events are
			// committed one by one.
			sc := e.stream(t, "/sessions/s1/stream?after=-1")
			for _, ev := range events {
				e.append(t, "s1", ev)
			}
			live := map[string]string{}
			for _, ev := range sc.until(t, func(ev sseEvent) bool { return ev.ID == lastID }) {
				for id, c := range cards(ev.Elements()) {
					live[id] = c
				}
			}
			sc.cancel()

			// Resume: a fresh stream from the start renders from the log.
			resumed, _ := streamCards(t, e, "/sessions/s1/stream", lastID, "Last-Event-ID", "-1")

			_, page := e.get(t, "/sessions/s1")
			want := cards(page)
			if len(want) == 0 {
				t.Fatal("the page has no cards")
			}
			for _, got := range []struct {
				path  string
				cards map[string]string
			}{{"live", live}, {"resume", resumed}} {
				if len(got.cards) != len(want) {
					t.Errorf("%s: %d cards over SSE, %d on the page", got.path, len(got.cards), len(want))
				}
				for id, w := range want {
					if got.cards[id] != w {
						t.Errorf("%s: card %s differs\n SSE: %s\npage: %s", got.path, id, got.cards[id], w)
					}
				}
			}
		})
	}
}
