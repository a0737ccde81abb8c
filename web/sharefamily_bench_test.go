package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/core/notes"
)

// BenchmarkShareChildrenFirstPaint: the first paint of a link made with
// its children (not redacted) of a parent whose 20 subagent calls each
// started a child of 50 calls — the link names its children by reading
// every descendant's link notes (familyNames) — beside, in the same run,
// the owner's page of the same parent as the baseline.
func BenchmarkShareChildrenFirstPaint(b *testing.B) {
	const kids, calls = 20, 50
	e, _ := shareEnv(b, withNotes)
	ctx := context.Background()
	pb := coretest.NewBuilder(t0)
	pb.TurnStart().StepStart().User("delegate")
	seqs := map[string]int64{}
	for i := range kids {
		id := fmt.Sprintf("s%02d", i)
		pb.Call(id, "subagent", fmt.Sprintf(`{"description":"task %d","prompt":"Do it."}`, i))
		seqs[id] = pb.Events[len(pb.Events)-1].Seq
	}
	for i := range kids {
		pb.Result(fmt.Sprintf("s%02d", i), "done", false, map[string]any{"child": fmt.Sprintf("zqkid-%08d", i)}, nil)
	}
	pb.StepEnd().TurnEnd(core.TurnCompleted)
	e.session(b, "p", pb.Events)
	one := int64(1)
	for i := range kids {
		kid := fmt.Sprintf("zqkid-%08d", i)
		if err := e.store.CreateSession(ctx, core.SessionHeader{ID: kid, CreatedAt: t0, Cwd: "/work", ParentSession: "p",
			Origin: core.OriginSubagent, DelegationDepth: &one}); err != nil {
			b.Fatal(err)
		}
		kb := coretest.NewBuilder(t0)
		kb.TurnStart().StepStart().User("Do it.")
		for c := range calls {
			cid := fmt.Sprintf("c%d", c)
			kb.Call(cid, "note", `{"title":"x"}`).Result(cid, "# x\n- line one", false, nil, nil)
		}
		kb.StepEnd().TurnEnd(core.TurnCompleted)
		e.append(b, kid, kb.Events...)
		call := fmt.Sprintf("s%02d", i)
		in, err := notes.Link("p", call, seqs[call], notes.LinkData{Child: kid})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.store.PutNote(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	res, made := e.post(b, "/api/sessions/p/shares", "application/json", `{"children":true,"redact":false}`)
	if res.StatusCode != 201 {
		b.Fatalf("share: %d %s", res.StatusCode, made)
	}
	var sh struct{ URL string }
	if err := json.Unmarshal([]byte(made), &sh); err != nil {
		b.Fatal(err)
	}
	u, err := url.Parse(sh.URL)
	if err != nil {
		b.Fatal(err)
	}
	link := u.Path
	for _, c := range []struct{ name, path string }{{"owner-page", "/sessions/p"}, {"share-with-children", link}} {
		b.Run(c.name, func(b *testing.B) {
			var size int
			for b.Loop() {
				res, page := e.get(b, c.path)
				if res.StatusCode != 200 {
					b.Fatal(res.StatusCode)
				}
				size = len(page)
			}
			b.ReportMetric(float64(size)/1024, "KB/page")
		})
	}
}
