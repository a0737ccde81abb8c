package web_test

import (
	"context"
	"fmt"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/core/notes"
)

// BenchmarkParentFirstPaint: the first paint of a parent whose 20
// subagent calls each started a child of 200 calls (the children nested,
// collapsed), against the same parent log without children, in the same
// run.
func BenchmarkParentFirstPaint(b *testing.B) {
	const kids, calls = 20, 200
	for _, withKids := range []bool{false, true} {
		name := map[bool]string{false: "without-children", true: "20x200-children"}[withKids]
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, withNotes)
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
				pb.Result(fmt.Sprintf("s%02d", i), "done", false, nil, nil)
			}
			pb.StepEnd().TurnEnd(core.TurnCompleted)
			e.session(b, "p", pb.Events)
			if withKids {
				one := int64(1)
				for i := range kids {
					kid := fmt.Sprintf("k%02d", i)
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
					in, err := notes.Link("p", fmt.Sprintf("s%02d", i), seqs[fmt.Sprintf("s%02d", i)], notes.LinkData{Child: kid})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := e.store.PutNote(ctx, in); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ResetTimer()
			var size int
			for b.Loop() {
				res, page := e.get(b, "/sessions/p")
				if res.StatusCode != 200 {
					b.Fatal(res.StatusCode)
				}
				size = len(page)
			}
			b.ReportMetric(float64(size)/1024, "KB/page")
		})
	}
}
