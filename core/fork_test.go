package core_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"prism/core"
	"prism/core/coretest"
)

// forkSource is a log of two completed turns and a third still open.
func forkSource() []core.Event {
	b := coretest.NewBuilder(1_000)
	for turn := 1; turn <= 2; turn++ {
		b.TurnStart().StepStart().User("go").Assistant("", [3]string{"c" + string(rune('0'+turn)), "read", `{"file_path":"a"}`}).
			Call("c"+string(rune('0'+turn)), "read", `{"file_path":"a"}`).Result("c"+string(rune('0'+turn)), "x", false, nil, nil).
			StepEnd().TurnEnd(core.TurnCompleted)
	}
	b.TurnStart().StepStart().User("more")
	return b.Events
}

func TestForkPrefix_table(t *testing.T) {
	events := forkSource()
	var ends []int64
	for _, e := range events {
		if e.Type == core.EventTurnEnd {
			ends = append(ends, e.Seq)
		}
	}
	turn := func(n int) core.ForkBoundary { return core.ForkBoundary{AtTurn: &n} }
	seq := func(n int64) core.ForkBoundary { return core.ForkBoundary{AtSeq: &n} }
	for _, tc := range []struct {
		name string
		b    core.ForkBoundary
		want int    // prefix length when no error
		code string // fork code when an error
		text string // part of the error's text
	}{
		{name: "turn 0: before the first turn", b: turn(0), want: 0},
		{name: "turn 1", b: turn(1), want: int(ends[0]) + 1},
		{name: "turn 2", b: turn(2), want: int(ends[1]) + 1},
		{name: "at a turn/end seq", b: seq(ends[0]), want: int(ends[0]) + 1},
		{name: "open turn", b: turn(3), code: core.CodeOpenTurn, text: `cannot fork session "src" at turn 3: the turn is still open (it has no turn/end)`},
		{name: "seq inside the open turn", b: seq(int64(len(events) - 1)), code: core.CodeOpenTurn, text: "inside turn 3, which has not ended there"},
		{name: "seq inside a completed turn", b: seq(ends[0] - 1), code: core.CodeOpenTurn, text: "inside turn 1"},
		{name: "past the end", b: turn(9), code: core.CodeInvalidBoundary, text: `cannot fork session "src" at turn 9: past the end, the session has 2 completed turns`},
		{name: "seq past the end", b: seq(int64(len(events))), code: core.CodeInvalidBoundary, text: "its log has events 0 to"},
		{name: "negative turn", b: turn(-1), code: core.CodeInvalidBoundary, text: "a turn number is 0 or more"},
		{name: "no boundary", b: core.ForkBoundary{}, code: core.CodeInvalidBoundary, text: "give exactly one boundary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := core.ForkPrefix("src", events, tc.b)
			if tc.code == "" {
				if err != nil || n != tc.want {
					t.Fatalf("ForkPrefix = %d, %v; want %d", n, err, tc.want)
				}
				return
			}
			var ce *core.Error
			if !errors.As(err, &ce) || ce.Code != tc.code || ce.Name != core.ForkErrorName {
				t.Fatalf("error %v (%#v); want %s %s", err, ce, core.ForkErrorName, tc.code)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("error %q does not say %q", err, tc.text)
			}
		})
	}
}

// A boundary between turns that is not a turn/end (an event after one)
// is INVALID_BOUNDARY naming the event's type.
func TestForkPrefix_seqBetweenTurnsIsNotATurnEnd(t *testing.T) {
	b := coretest.NewBuilder(1_000)
	b.TurnStart().StepStart().User("go").StepEnd().TurnEnd(core.TurnCompleted)
	b.Add(core.EventSessionTitle, map[string]string{"title": "x"}, nil)
	at := int64(len(b.Events) - 1)
	_, err := core.ForkPrefix("src", b.Events, core.ForkBoundary{AtSeq: &at})
	if core.ErrorCode(err) != core.CodeInvalidBoundary || !strings.Contains(err.Error(), "is a session/title, not a turn/end") {
		t.Fatalf("err = %v", err)
	}
}

func TestForkSeed_isTheSourcePrefixEventForEvent(t *testing.T) {
	events := forkSource()
	two := 2
	n, err := core.ForkPrefix("src", events, core.ForkBoundary{AtTurn: &two})
	if err != nil {
		t.Fatal(err)
	}
	h, seed, err := core.ForkSeed(core.SessionHeader{ID: "fork", CreatedAt: 5, ParentSession: "src"}, events, n, 99)
	if err != nil {
		t.Fatal(err)
	}
	if h.SeedLength == nil || *h.SeedLength != int64(n) || h.ParentSession != "src" || h.Origin != "" {
		t.Fatalf("header %+v", h)
	}
	if len(seed) != n+1 {
		t.Fatalf("seed has %d events, want %d + session/end-seed", len(seed), n)
	}
	for i := range n {
		if !reflect.DeepEqual(seed[i], events[i]) {
			t.Fatalf("seed event %d = %+v, source has %+v", i, seed[i], events[i])
		}
	}
	last := seed[n]
	if last.Type != core.EventSessionEndSeed || last.Seq != int64(n) || last.Time != 99 || string(last.Data) != "{}" {
		t.Fatalf("last seed event %+v", last)
	}
	// The copy is deep: changing the seed leaves the source as it was.
	seed[0].Data[0] = ' '
	if events[0].Data[0] == ' ' {
		t.Fatal("the seed shares its data with the source")
	}
}

func TestForkSeed_refusesAnInvalidSeed(t *testing.T) {
	events := forkSource()
	events[1].Seq = 7 // not contiguous
	_, _, err := core.ForkSeed(core.SessionHeader{ID: "fork", CreatedAt: 5, ParentSession: "src"}, events, 4, 9)
	if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "not a valid seed") || !strings.Contains(err.Error(), "index 1") {
		t.Fatalf("err = %v", err)
	}
}
