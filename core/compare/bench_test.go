package compare_test

import (
	"fmt"
	"testing"

	"prism/core/compare"
)

// BenchmarkAlign_atBound: the LCS at its bound — two sessions of 5,000
// calls that share only every other call, so nothing is set aside as an
// equal head or tail and the table is the full 5,000 × 5,000 cells; the
// 2,501 calls left over pair by place (arguments differ).
func BenchmarkAlign_atBound(b *testing.B) {
	mk := func(side string) []compare.Call {
		cs := make([]compare.Call, 5000)
		for i := range cs {
			f := fmt.Sprintf("f%d", i)
			if i%2 == 1 || i == 0 || i == len(cs)-1 {
				f += side
			}
			cs[i] = compare.Call{Tool: "read", Args: `{"file_path":"` + f + `"}`, HasResult: true, Turn: 1, Step: i}
		}
		return cs
	}
	x, y := mk("a"), mk("b")
	for b.Loop() {
		r := compare.Align(x, y, compare.Options{})
		if len(r.Notes) != 0 || r.Differences != 2501 {
			b.Fatalf("%d differences, notes %q", r.Differences, r.Notes)
		}
	}
}
