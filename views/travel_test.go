package views_test

import (
	"net/url"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
	"prism/core/coretest"
	"prism/views"
)

// chapterLog is a log with one of each landmark: two turns, an edit, an
// error, a call stopped by the end of its step, and a turn closed by crash
// repair (a call whose outcome is unknown, one never started).
func chapterLog() []core.Event {
	b := coretest.NewBuilder(1767225600000)
	b.TurnStart().StepStart().User("go")                                                        // 0 1 2
	b.Call("e1", "edit", `{"file_path":"a.go","old_string":"x","new_string":"y"}`)              // 3
	b.Result("e1", "updated", false, nil, nil)                                                  // 4
	b.Call("r1", "read", `{"file_path":"nope"}`)                                                // 5
	b.Result("r1", "no such file", true, nil, &core.ErrorInfo{Name: "FsError", Code: "ENOENT"}) // 6
	b.Call("s1", "note", `{"title":"t"}`)                                                       // 7
	b.StepEnd().TurnEnd(core.TurnCompleted)                                                     // 8 9
	b.TurnStart().StepStart().Call("k1", "bash", `{"command":"make"}`)                          // 10 11 12
	b.Repair()                                                                                  // 13…
	return b.Events
}

func TestChapters(t *testing.T) {
	events := chapterLog()
	tl := views.Fold(core.SessionHeader{ID: "s"}, events, presenters(t))
	ch := tl.Chapters()
	if ch.Last != events[len(events)-1].Seq {
		t.Errorf("Last = %d", ch.Last)
	}
	if diff := cmp.Diff([]int64{0, 10}, ch.Turns); diff != "" {
		t.Errorf("turns (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{3, 5, 7, 12}, ch.Calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	var got []string
	for _, m := range ch.Marks {
		got = append(got, strconv.FormatInt(m.Seq, 10)+" "+m.Kind+" "+m.Card)
	}
	want := []string{"3 edit call-e1", "6 error call-r1", "8 interrupted call-s1", "13 interrupted call-k1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("marks (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		at   int64
		kind string
		dir  int
		want int64
		ok   bool
	}{
		{5, views.StepEvent, 1, 6, true},
		{0, views.StepEvent, -1, 0, false},
		{ch.Last, views.StepEvent, 1, 0, false},
		{-1, views.StepEvent, -1, ch.Last - 1, true}, // live stands at the end
		{5, views.StepCall, 1, 7, true},
		{5, views.StepCall, -1, 3, true},
		{3, views.StepCall, -1, 0, false},
		{4, views.StepMark, 1, 6, true},
		{6, views.StepMark, -1, 3, true},
		{0, views.StepError, 1, 6, true},
		{6, views.StepError, 1, 0, false},
		{2, views.StepTurn, 1, 10, true},
		{-1, views.StepMark, 1, 0, false},
	} {
		seq, _, ok := ch.Step(tc.at, tc.kind, tc.dir)
		if ok != tc.ok || ok && seq != tc.want {
			t.Errorf("Step(%d, %s, %d) = %d %v, want %d %v", tc.at, tc.kind, tc.dir, seq, ok, tc.want, tc.ok)
		}
	}
}

func TestParseAt(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		of   int64
		want int64
		err  string
	}{
		{"", 9, -1, ""},
		{"0", 9, 0, ""},
		{"9", 9, 9, ""},
		{"10", 9, -1, ""}, // one past the end: live
		{"11", 9, 0, "INVALID: at 11 is past the end of the session: its last event is 9"},
		{"0", -1, -1, ""},
		{"1", -1, 0, "INVALID: at 1 is past the end of the session: it has no events"},
		{"-1", 9, 0, `INVALID: at must be an event's seq (a whole number from 0), not "-1"`},
		{"x\ny", 9, 0, `INVALID: at must be an event's seq (a whole number from 0), not "x y"`},
		{"99999999999999999999", 9, 0, `INVALID: at must be an event's seq (a whole number from 0), not "99999999999999999999"`},
	} {
		got, err := views.ParseAt(tc.raw, tc.of)
		msg := ""
		if err != nil {
			msg = core.ErrorCode(err) + ": " + err.Error()
		}
		if msg != tc.err || err == nil && got != tc.want {
			t.Errorf("ParseAt(%q, %d) = %d, %q; want %d, %q", tc.raw, tc.of, got, msg, tc.want, tc.err)
		}
	}
}

func TestWindowAround(t *testing.T) {
	events := chapterLog()
	tl := views.Fold(core.SessionHeader{ID: "s"}, events, presenters(t))
	segs := tl.Segments()
	cost := func(i int) int {
		if st, ok := segs[i].(*views.Step); ok {
			return 1 + len(st.Items)
		}
		return 1
	}
	for i := range segs {
		for _, w := range []int{1, 3, 6, 8, 100} {
			start, end := views.WindowAround(segs, i, w)
			if start > i || end <= i || start < 0 || end > len(segs) {
				t.Fatalf("WindowAround(%d, %d) = [%d, %d)", i, w, start, end)
			}
			used := 0
			for j := start; j < end; j++ {
				used += cost(j)
			}
			if used > max(w, cost(i)) {
				t.Errorf("WindowAround(%d, %d) = [%d, %d) holds %d items", i, w, start, end, used)
			}
			// It stops only when neither neighbour fits.
			if start > 0 && used+cost(start-1) <= w || end < len(segs) && used+cost(end) <= w {
				t.Errorf("WindowAround(%d, %d) = [%d, %d) stopped with room (%d items)", i, w, start, end, used)
			}
		}
	}
}

// FuzzPlace: no query string makes the page's parsers panic; a place they
// accept survives its own URL.
func FuzzPlace(f *testing.F) {
	for _, s := range []string{"at=3", "call=c1&card=call-c1__2", "event=12", "event=-1", "card=call-x", "at=&event=", "step=call%2B", "step=mark-", "call=%00&event=1", "at=1e3"} {
		f.Add(s, int64(20))
	}
	f.Fuzz(func(t *testing.T, raw string, of int64) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		if of < -1 {
			of = -1
		}
		if at, err := views.ParseAt(q.Get(views.ParamAt), of); err == nil && (at < -1 || at > of) {
			t.Fatalf("ParseAt(%q, %d) = %d", q.Get(views.ParamAt), of, at)
		}
		if kind, dir, err := views.ParseStep(q.Get("step")); err == nil && kind != "" && dir != 1 && dir != -1 {
			t.Fatalf("ParseStep(%q) = %s %d", q.Get("step"), kind, dir)
		}
		p, err := views.ParsePlace(q)
		if err != nil {
			return
		}
		u, err := url.Parse(p.URL("s"))
		if err != nil {
			t.Fatalf("%#v: URL %q: %v", p, p.URL("s"), err)
		}
		back, err := views.ParsePlace(u.Query())
		if err != nil || back != p {
			t.Fatalf("%#v → %q → %#v, %v", p, p.URL("s"), back, err)
		}
	})
}
