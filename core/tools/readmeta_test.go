package tools

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core"
)

var readMetaSeeds = []string{
	`{"path":"/a","offset":1,"lines":[{"number":1,"text":"x"},{"number":2,"text":"y"}],"totalLines":9,"lang":"go"}`,
	`{"path":"/a","offset":3,"totalLines":3,"lines":[]}`,
	`{"path":"/a","offset":1,"totalLines":3,"lines":[{"number":2,"text":"y"},{"number":2,"text":"z"}]}`,
	`{"path":"/a","offset":1,"totalLines":3,"lines":[{"number":4,"text":"y"}]}`,
	`{"path":"/a","offset":1.5,"totalLines":3,"lines":[]}`,
	`{"path":"/a","offset":1,"totalLines":3,"lines":[],"lang":null}`,
	`{"path":"/a","offset":1,"totalLines":3,"lines":[],"lang":7}`,
	`{"path":"/a","offset":1,"totalLines":3,"lines":[null]}`,
	`{"path":"/a","offset":1,"totalLines":3,"lines":[{"number":1}]}`,
	`{"path":"/a","offset":1,"totalLines":3,"lines":[{"number":1,"text":"x","extra":1e400}]}`,
	`{"Path":"/a","offset":1,"totalLines":3,"lines":[]}`,
	`{"path":"/a","path":"/b","offset":1,"totalLines":3,"lines":[]}`,
	`{"path":"/a","offset":1,"totalLines":3,"lines":[],"n":1e400}`,
	`{"path":"/a","offset":1e400,"totalLines":3,"lines":[]}`,
	"{\"path\":\"\xff\",\"offset\":1,\"totalLines\":3,\"lines\":[]}",
	`{"path":"\ud800","offset":1,"totalLines":3,"lines":[]}`,
	`{"path":null,"offset":1,"totalLines":3,"lines":[]}`,
	`{"path":"/a","offset":1,"totalLines":3,"lines":null}`,
	``, `null`, `[]`, `{}`, `"x"`,
}

// checkReadMeta holds readMetaFromMeta (typed fast path first) to the
// generic narrowing it replaces for the read tool's own meta.
func checkReadMeta(t *testing.T, meta []byte) {
	t.Helper()
	want, wantOK := readMetaGeneric(meta)
	got, gotOK := readMetaFromMeta(meta)
	if gotOK != wantOK {
		t.Fatalf("readMetaFromMeta(%s) ok = %v, the generic narrowing says %v", meta, gotOK, wantOK)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("readMetaFromMeta(%s) differs from the generic narrowing (-want +got):\n%s", meta, diff)
	}
}

func TestReadMetaFastMatchesGeneric(t *testing.T) {
	for _, s := range readMetaSeeds {
		checkReadMeta(t, []byte(s))
	}
	// The read tool's own meta takes the fast path (else the speed-up is
	// silently gone).
	b, err := json.Marshal(ReadMeta{Path: "/w/a.go", Offset: 1, TotalLines: 2, Lang: "go", Lines: []core.ReadFileLine{{Number: 1, Text: "a"}, {Number: 2, Text: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, handled := readMetaFast(b); !ok || !handled {
		t.Fatalf("readMetaFast(%s) = ok %v, handled %v: the tool's own meta missed the fast path", b, ok, handled)
	}
}

func FuzzReadMetaFromMeta(f *testing.F) {
	for _, s := range readMetaSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkReadMeta)
}

// BenchmarkReadMeta20k narrows the meta of a 20,000-line read: typed (the
// fast path readMetaFromMeta takes) and through the generic tree.
func BenchmarkReadMeta20k(b *testing.B) {
	m := ReadMeta{Path: "/work/big.go", Offset: 1, TotalLines: 20000, Lang: "go"}
	for i := range 20000 {
		m.Lines = append(m.Lines, core.ReadFileLine{Number: i + 1, Text: "\tfmt.Println(\"line <of> & output\")"})
	}
	meta, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    func(json.RawMessage) (ReadMeta, bool)
	}{{"typed", readMetaFromMeta}, {"generic", readMetaGeneric}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := c.f(meta); !ok {
					b.Fatal("not a read window")
				}
			}
		})
	}
}
