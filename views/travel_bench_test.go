package views_test

import (
	"strconv"
	"strings"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
)

// longLog is a session of about n events: turns of steps that stream a
// message and run a command, a read and an edit.
func longLog(n int) []core.Event {
	b := coretest.NewBuilder(1767225600000)
	call := 0
	for len(b.Events) < n {
		b.TurnStart()
		for range 3 {
			b.StepStart().User("go on")
			b.Chunks(strings.Repeat("word ", 20))
			b.Assistant(strings.Repeat("word ", 20))
			for k := range 3 {
				call++
				id := "c" + strconv.Itoa(call)
				switch k {
				case 0:
					b.Call(id, "bash", `{"command":"go build ./..."}`).Result(id, "ok\n[exit code: 0]", false, nil, nil)
				case 1:
					b.Call(id, "read", `{"file_path":"main.go"}`).Result(id, "1: package main", false, nil, nil)
				default:
					b.Call(id, "edit", `{"file_path":"main.go","old_string":"a","new_string":"b"}`).Result(id, "updated", false, nil, nil)
				}
			}
			b.StepEnd()
		}
		b.TurnEnd(core.TurnCompleted)
	}
	return b.Events[:n]
}

// BenchmarkReplay10k: what a page at an event folds — the whole log (for
// the transport's chapters) and the log up to the event — and the
// chapters alone.
func BenchmarkReplay10k(b *testing.B) {
	events := longLog(10000)
	p := presenters(b)
	h := core.SessionHeader{ID: "s"}
	b.Run("fold", func(b *testing.B) {
		for b.Loop() {
			views.Fold(h, events, p)
		}
	})
	b.Run("chapters", func(b *testing.B) {
		for b.Loop() {
			views.Fold(h, events, p).Chapters()
		}
	})
	b.Run("replay-at-middle", func(b *testing.B) {
		for b.Loop() {
			views.NewReplay(h, events, 5000, p, views.Reader{})
		}
	})
}
