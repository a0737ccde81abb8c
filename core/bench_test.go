package core_test

import (
	"context"
	"testing"

	"prism/core"
	"prism/core/coretest"
	"prism/core/tools"
)

// BenchmarkPipelineNote measures the pipeline's overhead for one call of the
// seed's note tool: parse the raw arguments, validate, execute, validate the
// value, render, project meta, and one post-execute hook.
func BenchmarkPipelineNote(b *testing.B) {
	reg := core.NewRegistry(nil)
	reg.MustRegister(tools.NewNote())
	reg.UsePostExecute(func(_ context.Context, _ *core.Execution, _ core.Result, next func() (core.PostDecision, error)) (core.PostDecision, error) {
		return next()
	})
	ctx := context.Background()
	call := core.Call{CallID: "c1", Name: "note", RawArguments: `{"title":"Demo"}`}
	b.ReportAllocs()
	cpu0, n := coretest.CPUTime(b), 0
	for b.Loop() {
		n++
		if r := reg.Execute(ctx, call); r.IsError() {
			b.Fatal(r.Projection().Content.PlainText())
		}
	}
	b.ReportMetric(float64((coretest.CPUTime(b)-cpu0).Nanoseconds())/float64(n), "cpu-ns/op")
}
