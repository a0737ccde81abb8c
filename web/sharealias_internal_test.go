package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/core/notes"
)

// TestAliasText_onlyStringValues: a child's id is replaced where a string
// value names it — after a JSON escape too — and never in a number or a
// literal, nor in a key unless the key is a distinctive id whole
// (TestAliasText_wholeKeys); the result stays JSON; an id that is a plain
// word is replaced only as the value of a field that names a child.
func TestAliasText_onlyStringValues(t *testing.T) {
	const id = "0194f3a2-aaaa-bbbb-cccc-0123456789ab"
	a := map[string]string{id: "child-1"}
	for _, text := range []string{"spawned:\n" + id, "x\t" + id, "<" + id + ">", "a\u2028" + id, "id=" + id + "\n", id} {
		b, err := json.Marshal(map[string]string{"output": text})
		if err != nil {
			t.Fatal(err)
		}
		out, changed := aliasText(b, a)
		if !changed || strings.Contains(string(out), id) || !json.Valid(out) {
			t.Errorf("%q: changed=%v, got %s; want the id replaced, valid JSON", text, changed, out)
			continue
		}
		var got map[string]string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if want := strings.ReplaceAll(text, id, "child-1"); got["output"] != want {
			t.Errorf("%q: output %q, want %q", text, got["output"], want)
		}
	}
	// Not a whole id: inside a longer run of id characters.
	for _, text := range []string{"x" + id, id + "9", "_" + id} {
		b, _ := json.Marshal(map[string]string{"output": text})
		if out, changed := aliasText(b, a); changed {
			t.Errorf("%q is not the id, but became %s", text, out)
		}
	}

	// Ids a hand-made log may use: keys, numbers and literals stay.
	for _, c := range []struct{ id, doc string }{
		{"text", `{"type":"text","text":"hi"}`},
		{"1733500000", `{"time":1733500000,"n":[1733500000]}`},
		{"true", `{"isError":true}`},
		{"summary", `{"content":"a summary of the summary"}`},
	} {
		out, changed := aliasText([]byte(c.doc), map[string]string{c.id: "child-1"})
		if changed || string(out) != c.doc {
			t.Errorf("id %q: %s became %s (changed=%v); want it untouched", c.id, c.doc, out, changed)
		}
	}
	// …but the field that names a child is replaced whatever the id.
	out, changed := aliasText([]byte(`{"meta":{"child": "text"},"type":"text"}`), map[string]string{"text": "child-1"})
	if want := `{"meta":{"child": "child-1"},"type":"text"}`; !changed || string(out) != want {
		t.Errorf("child field: got %s, want %s", out, want)
	}
	// A note's data: a value that is exactly an id, whatever it looks like.
	out, changed = aliasNoteData([]byte(`{"child":"kid","background":false}`), map[string]string{"kid": "child-2"})
	if want := `{"child":"child-2","background":false}`; !changed || string(out) != want {
		t.Errorf("note: got %s, want %s", out, want)
	}
}

// TestAliasText_wholeKeys: an object's key that is a child's id whole (or
// a named piece of one) is named — Codex keys its collab statuses by
// thread id —, a key that only contains an id is kept, and two keys that
// become one name keep the document JSON, decoded as the last of them.
func TestAliasText_wholeKeys(t *testing.T) {
	const id = "0196a1b2-0000-7000-8000-0000000000a2"
	a := map[string]string{id: "child-1", "r-agent-a7f2c1d": "child-2", "agent-a7f2c1d": "child-2"}
	for _, c := range []struct{ in, want string }{
		{`{"statuses":{"` + id + `":{"completed":"ok"}}}`, `{"statuses":{"child-1":{"completed":"ok"}}}`},
		{`{"statuses":{"` + id + `" : 1}}`, `{"statuses":{"child-1" : 1}}`},
		{`{"agent-a7f2c1d":"` + id + `"}`, `{"child-2":"child-1"}`},
		{`{"x-` + id + `":1,"` + id + `x":2}`, `{"x-` + id + `":1,"` + id + `x":2}`},
		{`{"0196a1b2-0000":1}`, `{"0196a1b2-0000":1}`},
	} {
		out, _ := aliasText([]byte(c.in), a)
		if string(out) != c.want {
			t.Errorf("%s became %s, want %s", c.in, out, c.want)
		}
	}
	out, changed := aliasText([]byte(`{"child-1":1,"`+id+`":2}`), a)
	var got map[string]int
	if err := json.Unmarshal(out, &got); !changed || err != nil || len(got) != 1 || got["child-1"] != 2 {
		t.Errorf("two keys naming one child: %s (changed=%v) decodes to %v, %v; want {child-1: 2}", out, changed, got, err)
	}
}

// FuzzAliasText: whatever the document, the result is JSON when the input
// is, and no distinctive id survives in any string value nor as a whole
// key.
func FuzzAliasText(f *testing.F) {
	const id = "kid-12345678"
	f.Add([]byte(`{"a":"kid-12345678","kid-12345678":1}`))
	f.Add([]byte(`["x\nkid-12345678\u003c", 5, true, null]`))
	f.Add([]byte(`"kid-12345678"`))
	f.Add([]byte(`{"child":"kid-9","receiver_thread_ids":["kid-12345678",1],"text":"{\"agent_id\":\"kid-12345678\"}"}`))
	f.Add([]byte(`{"text":"Started subagent kid-12345678 and Started subagent kid-2"}`))
	f.Add([]byte(`1E700`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, _ := aliasText(b, map[string]string{id: "child-1"})
		if !json.Valid(b) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%s became %s: not JSON", b, out)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber() // 1E700 is JSON, and no float64
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				if i := strings.Index(x, id); i >= 0 {
					before, after := byte(' '), byte(' ')
					if i > 0 {
						before = x[i-1]
					}
					if j := i + len(id); j < len(x) {
						after = x[j]
					}
					if !idChar(before) && !idChar(after) {
						t.Fatalf("%s: the id survives in value %q", b, x)
					}
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			case map[string]any:
				for k, e := range x {
					if k == id {
						t.Fatalf("%s: the id survives as a key", b)
					}
					walk(e)
				}
			}
		}
		walk(v)
	})
}

// TestFamilyNames_oneOrder: the descendants of a session are named in one
// order — its children by its link notes' order, then breadth first each
// child's own — a session met twice (a child linked twice, a cycle) keeps
// its first name, and the piece of a child's id beyond its parent's
// (Claude Code's agentId) is named as the child.
func TestFamilyNames_oneOrder(t *testing.T) {
	const cc = "r-agent-a7f2c1d"
	link := func(child string) notes.Note {
		in, err := notes.Link("x", "c", 0, notes.LinkData{Child: child})
		if err != nil {
			t.Fatal(err)
		}
		return notes.Note{Kind: notes.KindLink, Data: in.Data}
	}
	family := map[string][]notes.Note{
		"r":   {link("a"), link(cc), link("a")},
		"a":   {link("g1"), {Kind: notes.KindLabel, Data: []byte(`{"text":"not a link"}`)}},
		cc:    {link("g2"), link("r")},
		"g1":  {link("a"), link("gg1")},
		"gg1": nil,
	}
	var read []string
	got, _, err := familyNames("r", func(id string) ([]notes.Note, error) {
		read = append(read, id)
		return family[id], nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "child-1", cc: "child-2", "g1": "child-3", "g2": "child-4", "gg1": "child-5",
		"agent-a7f2c1d": "child-2", "a7f2c1d": "child-2"}
	if len(got) != len(want) {
		t.Errorf("names %v, want %v", got, want)
	}
	for id, name := range want {
		if got[id] != name {
			t.Errorf("%s is named %q, want %q (all: %v)", id, got[id], name, got)
		}
	}
	if strings.Join(read, " ") != "r a "+cc+" g1 g2 gg1" {
		t.Errorf("link notes read of %v, want breadth first, each session once", read)
	}
	if _, _, err := familyNames("r", func(string) ([]notes.Note, error) { return nil, errors.New("down") }); err == nil {
		t.Error("a failed read of link notes gave names")
	}
}

// TestIDPieces: only an id of Claude Code's shape <parent>-agent-<agentId>
// has pieces — "agent-<agentId>" and the agentId, which may hold '-' —;
// an id that merely extends its parent's has none.
func TestIDPieces(t *testing.T) {
	for _, c := range []struct {
		parent, id string
		want       []string
	}{
		{"s1", "s1-agent-a7f2c1d", []string{"agent-a7f2c1d", "a7f2c1d"}},
		{"s1", "s1-agent-afbecda", []string{"agent-afbecda", "afbecda"}},
		{"s1", "s1-agent-a1-b2", []string{"agent-a1-b2", "a1-b2"}},
		{"s1", "s1_x", nil},
		{"job-2026", "job-2026-step-000001", nil},
		{"s1", "s1x-agent-a", nil},
		{"s1", "0194f3a2-aaaa", nil},
		{"", "s1-agent-a", nil},
		{"s1", "s1-agent-", nil},
		{"s1", "s1-", nil},
	} {
		if got := idPieces(c.parent, c.id); !slices.Equal(got, c.want) {
			t.Errorf("idPieces(%q, %q) = %q, want %q", c.parent, c.id, got, c.want)
		}
	}
}

// oneChild is familyNames of root with one child, id.
func oneChild(t *testing.T, root, id string) map[string]string {
	t.Helper()
	in, err := notes.Link("x", "c", 0, notes.LinkData{Child: id})
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := familyNames(root, func(s string) ([]notes.Note, error) {
		if s != root {
			return nil, nil
		}
		return []notes.Note{{Kind: notes.KindLink, Data: in.Data}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAliasText_agentIDs: a Claude Code agentId is named in text even when
// it is letters alone; an all-digit one only as a child field's value and
// on the line of Claude Code's hint that says it is one, never in other
// numbers; an id that merely extends its parent's names no piece of it;
// and an ordinary id needs 8 bytes to be named in free text.
func TestAliasText_agentIDs(t *testing.T) {
	const root = "7c1e5d2a-0b3f-4e6a-9d8c-1f2e3a4b5c6d"
	check := func(a map[string]string, in, want string) {
		t.Helper()
		if out, _ := aliasText([]byte(in), a); string(out) != want {
			t.Errorf("%s became %s, want %s", in, out, want)
		}
	}
	letters := oneChild(t, root, root+"-agent-afbecda")
	check(letters, `{"text":"Commit abc changed it.\nagentId: afbecda (use SendMessage with to: 'afbecda' to continue this agent)"}`,
		`{"text":"Commit abc changed it.\nagentId: child-1 (use SendMessage with to: 'child-1' to continue this agent)"}`)
	check(letters, `{"task_id":"afbecda"}`, `{"task_id":"child-1"}`)
	check(letters, `{"agentId":"afbecda"}`, `{"agentId":"child-1"}`)
	check(letters, `{"text":"afbecdaa afbecda-x"}`, `{"text":"afbecdaa afbecda-x"}`)

	digits := oneChild(t, root, root+"-agent-4096000")
	check(digits, `{"text":"wrote 4096000 bytes","n":4096000}`, `{"text":"wrote 4096000 bytes","n":4096000}`)
	check(digits, `{"agentId":"4096000","meta":{"agent_id":"4096000"}}`, `{"agentId":"child-1","meta":{"agent_id":"child-1"}}`)
	check(digits, `{"text":"wrote 4096000 bytes\nagentId: 4096000 (use SendMessage with to: '4096000' to continue this agent)"}`,
		`{"text":"wrote 4096000 bytes\nagentId: child-1 (use SendMessage with to: 'child-1' to continue this agent)"}`)
	// A hint naming another agent: that one, with no name on this link, is
	// masked (TestAliasText_masksUnnamedSpawns); 4096000 is left alone.
	check(digits, `{"text":"agentId: 40960001 and 4096000"}`, `{"text":"agentId: child-? and 4096000"}`)
	check(digits, `{"text":"see agent-4096000"}`, `{"text":"see child-1"}`)

	generic := oneChild(t, "job-2026", "job-2026-step-000001")
	if len(generic) != 1 {
		t.Errorf("job-2026-step-000001 is named with pieces: %v", generic)
	}
	check(generic, `{"text":"wrote segment 000001 to disk; step-000001 done; job-2026-step-000001 ok"}`,
		`{"text":"wrote segment 000001 to disk; step-000001 done; child-1 ok"}`)

	check(map[string]string{"ab-1234": "child-1"}, `{"text":"ran ab-1234"}`, `{"text":"ran ab-1234"}`)
	check(map[string]string{"ab-12345": "child-1"}, `{"text":"ran ab-12345"}`, `{"text":"ran child-1"}`)
}

// chunkTexts returns the streamed text of each text-delta of events.
func chunkTexts(t *testing.T, events []core.Event) []string {
	t.Helper()
	var out []string
	for _, e := range events {
		var c core.AssistantChunk
		if e.Type != core.EventAssistantChunk {
			continue
		}
		if err := json.Unmarshal(e.Data, &c); err != nil {
			t.Fatalf("chunk %s: %v", e.Data, err)
		}
		if c.Chunk.Type == core.ChunkTextDelta && c.Chunk.Text != nil {
			out = append(out, *c.Chunk.Text)
		}
	}
	return out
}

// TestAliasEvents_chunkRuns: a child's id split across the chunks of a
// stream, wherever it is cut, is named over the run: no chunk shows the
// id or any piece of it, a run named in one batch gives the named text,
// and a run named chunk by chunk (a live hub, aliasRun) gives it too,
// holding back the start of an id until a later chunk finishes it.
func TestAliasEvents_chunkRuns(t *testing.T) {
	const id = "zqkid-1a2b3c4d"
	a := map[string]string{id: "child-1"}
	pieces := func(s string) []string { // every 4-byte piece of the id
		var out []string
		for i := 0; i+4 <= len(s); i++ {
			out = append(out, s[i:i+4])
		}
		return out
	}
	// A run that ends in an id keeps it back when its message comes in a
	// later batch: its chunks miss the name (the message has it).
	for _, tc := range []struct{ text, want, wantLive string }{
		{"Subagent " + id + " is counting (" + id + ").", "Subagent child-1 is counting (child-1).", "Subagent child-1 is counting (child-1)."},
		{"Subagent " + id + " is counting; zquack zqkid-1a2b3c4e " + id, "Subagent child-1 is counting; zquack zqkid-1a2b3c4e child-1",
			"Subagent child-1 is counting; zquack zqkid-1a2b3c4e "},
	} {
		text := tc.text
		for i := 1; i < len(text); i++ {
			for j := i + 1; j < len(text); j += 3 {
				parts := []string{text[:i], text[i:j], text[j:]}
				b := coretest.NewBuilder(0)
				b.TurnStart().StepStart().Chunks(parts...).Assistant(text).StepEnd()
				var r aliasRun
				var live []core.Event
				for _, e := range b.Events {
					live = append(live, r.events([]core.Event{e}, a)...)
				}
				for _, c := range []struct {
					how, want string
					got       []core.Event
				}{{"in one batch", tc.want, aliasEvents(b.Events, a)}, {"event by event", tc.wantLive, live}} {
					got := chunkTexts(t, c.got)
					if len(got) != 3 {
						t.Fatalf("%q %s: %d chunks, want 3", parts, c.how, len(got))
					}
					if s := strings.Join(got, ""); s != c.want {
						t.Errorf("%q %s: chunks %q give %q, want %q", parts, c.how, got, s, c.want)
					}
					for _, p := range pieces(id) {
						for _, g := range got {
							if strings.Contains(g, p) && !strings.Contains(strings.ReplaceAll(text, id, ""), p) {
								t.Errorf("%q %s: chunk %q shows %q of the id", parts, c.how, g, p)
							}
						}
					}
				}
			}
		}
	}
	// An id that is whole in a chunk but not in the run's text is kept.
	b0 := coretest.NewBuilder(0)
	b0.TurnStart().StepStart().Chunks("x", id+" y").Assistant("x" + id + " y")
	if got := chunkTexts(t, aliasEvents(b0.Events, a)); !slices.Equal(got, []string{"x", id + " y"}) {
		t.Errorf("xzqkid-…: chunks %q, want the text kept", got)
	}
	// A long stream (its given-out text dropped but for its last KiB)
	// still names an id split at its end, on a line that began long ago.
	long := []string{"agentId: "}
	for range 3000 {
		long = append(long, "more words ")
	}
	long = append(long, "then zqkid-1a", "2b3c4d.")
	var lr aliasRun
	bl := coretest.NewBuilder(0)
	bl.TurnStart().StepStart().Chunks(long...).Assistant(strings.Join(long, ""))
	var lout []core.Event
	for _, e := range bl.Events {
		lout = append(lout, lr.events([]core.Event{e}, a)...)
	}
	if got := strings.Join(chunkTexts(t, lout), ""); got != strings.ReplaceAll(strings.Join(long, ""), id, "child-1") {
		t.Errorf("a long stream gives %q", got[max(0, len(got)-60):])
	}
	// A tool call's arguments streamed in deltas are named over the run.
	ba := coretest.NewBuilder(0)
	ba.TurnStart().StepStart()
	one := 1
	for _, p := range []string{`{"ids":["zqkid-1`, `a2b3c4d"]}`} {
		ba.Add(core.EventAssistantChunk, core.AssistantChunk{Turn: 1, Step: 1,
			Chunk: core.StreamChunk{Type: core.ChunkToolCallDelta, Index: &one, ID: "w1", ArgumentsDelta: &p}}, nil)
	}
	ba.Assistant("", [3]string{"w1", "wait", `{"ids":["` + id + `"]}`})
	var args []string
	for _, e := range aliasEvents(ba.Events, a) {
		var c core.AssistantChunk
		if e.Type == core.EventAssistantChunk && json.Unmarshal(e.Data, &c) == nil && c.Chunk.ArgumentsDelta != nil {
			args = append(args, *c.Chunk.ArgumentsDelta)
		}
	}
	if !slices.Equal(args, []string{`{"ids":["`, `child-1"]}`}) {
		t.Errorf("arguments deltas %q, want the id named over them", args)
	}
	// A run still open at the end of a batch holds the start of an id back.
	b := coretest.NewBuilder(0)
	b.TurnStart().StepStart().Chunks("Subagent zqkid-1a")
	if got := chunkTexts(t, aliasEvents(b.Events, a)); len(got) != 1 || got[0] != "Subagent " {
		t.Errorf("open run: chunks %q, want [\"Subagent \"]", got)
	}
}

// TestAliasText_masksUnnamedSpawns: on a link that nests children, a
// spawn field's value (or array element) and prism's "Started subagent
// <id>" that name no child yet are shown as child-?, in a JSON document
// held in a string too; a named child is named, a name is kept, masking
// again changes nothing, and a link without children (nil names) masks
// nothing.
func TestAliasText_masksUnnamedSpawns(t *testing.T) {
	const kid1, kid2 = "zqkid-1a2b3c4d", "zqkid-5e6f7a8b"
	a := map[string]string{kid1: "child-1"}
	for _, c := range []struct{ in, want string }{
		{`{"meta":{"child":"` + kid2 + `","background":true}}`, `{"meta":{"child":"child-?","background":true}}`},
		{`{"meta":{"child":"` + kid1 + `"}}`, `{"meta":{"child":"child-1"}}`},
		{`{"agentId":"a5e6f7a","agent_id":"t","new_thread_id":"` + kid2 + `"}`, `{"agentId":"child-?","agent_id":"child-?","new_thread_id":"child-?"}`},
		{`{"receiver_thread_ids":["` + kid1 + `", "` + kid2 + `"],"other":["` + kid2 + `"]}`, `{"receiver_thread_ids":["child-1", "child-?"],"other":["` + kid2 + `"]}`},
		{`{"text":"Started subagent ` + kid2 + ` in the background."}`, `{"text":"Started subagent child-? in the background."}`},
		{`{"text":"Started subagent ` + kid1 + ` in the background."}`, `{"text":"Started subagent child-1 in the background."}`},
		{`{"text":"{\"agent_id\":\"` + kid2 + `\",\"nickname\":\"Lorentz\"}"}`, `{"text":"{\"agent_id\":\"child-?\",\"nickname\":\"Lorentz\"}"}`},
		{`{"child":"child-3","x":"Started subagent child-2 now"}`, `{"child":"child-3","x":"Started subagent child-2 now"}`},
		{`{"child":"","note":"` + kid2 + `"}`, `{"child":"","note":"` + kid2 + `"}`},
		// Claude Code's hint for an agent not named yet, and its id again on
		// the hint's line; not on another line.
		{`{"text":"Done.\nagentId: a5e6f7a9 (use SendMessage with to: 'a5e6f7a9' to continue this agent)\nsee a5e6f7a9"}`,
			`{"text":"Done.\nagentId: child-? (use SendMessage with to: 'child-?' to continue this agent)\nsee a5e6f7a9"}`},
		{`{"text":"agentId: ` + kid1 + ` (use SendMessage with to: '` + kid1 + `')"}`, `{"text":"agentId: child-1 (use SendMessage with to: 'child-1')"}`},
	} {
		out, _ := aliasText([]byte(c.in), a)
		if string(out) != c.want {
			t.Errorf("%s became %s, want %s", c.in, out, c.want)
		}
		if again, changed := aliasText(out, a); changed {
			t.Errorf("%s masked again became %s", out, again)
		}
		if out, changed := aliasText([]byte(c.in), nil); changed {
			t.Errorf("without children %s became %s", c.in, out)
		}
	}
	if out, _ := aliasText([]byte(`{"meta":{"child":"`+kid2+`"}}`), map[string]string{}); string(out) != `{"meta":{"child":"child-?"}}` {
		t.Errorf("no child named yet: %s", out)
	}
	if !namesFresh([]byte(`{"meta":{"child":"child-?"}}`), a) || namesFresh([]byte(`{"meta":{"child":"child-1"}}`), a) {
		t.Error("namesFresh does not tell a masked child from a named one")
	}
}
