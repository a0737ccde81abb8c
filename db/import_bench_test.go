package db

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"prism/sources/dsh"
	"prism/store/storetest"
)

// BenchmarkImportTextHeavy imports 100 prism JSONL files of text-heavy
// sessions (storetest.Corpus: messages with reasoning, read, grep and bash
// results with text — about 334 events, 100 KB a file; 33,400 events in
// all) one file after another, as `prism import FILE...` does, each run
// into a fresh store. It compares, in the same run and alternating, how
// an import hands memory back: per-file is one debug.FreeOSMemory after
// every file (what imports did), policy the process's policy (memrelease:
// at most one per interval). Reported: events/s of the imports, and of the
// imports plus the search index's filing that follows them (the index
// lags the log: db's package doc), and the speed-up.
func BenchmarkImportTextHeavy(b *testing.B) {
	const files, perFile = 100, 334
	dir := b.TempDir()
	var paths []string
	events := 0
	c := storetest.NewCorpus(7)
	for i := range files {
		id := fmt.Sprintf("th%04d", i)
		log := c.Log(perFile, 1764500000000+int64(i)*3_600_000)
		events += len(log)
		path := filepath.Join(dir, id+".jsonl")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := dsh.WriteJSONL(f, storetest.Header(id), log); err != nil {
			b.Fatal(err)
		}
		f.Close()
		paths = append(paths, path)
	}
	defer func(r func()) { releaseMemory = r }(releaseMemory)
	policy := releaseMemory
	variants := []struct {
		name    string
		release func()
	}{{"per-file", debug.FreeOSMemory}, {"policy", policy}}
	var imp, total [2]time.Duration
	for i := 0; i < b.N; i++ {
		// Alternate, so that both see the same load (on a shared machine
		// it changes by the minute); the second first every other time.
		for k := range 2 {
			v := (i + k) % 2
			releaseMemory = variants[v].release
			st, err := Open(context.Background(), filepath.Join(b.TempDir(), fmt.Sprintf("import%d-%d.db", i, v)), Options{Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			for _, p := range paths {
				if _, err := st.ImportFile(context.Background(), p); err != nil {
					b.Fatal(err)
				}
			}
			imp[v] += time.Since(start)
			if err := st.catchUpIndex(context.Background()); err != nil {
				b.Fatal(err)
			}
			total[v] += time.Since(start)
			st.Close()
		}
	}
	for v, x := range variants {
		b.ReportMetric(float64(events*b.N)/imp[v].Seconds(), "events/s-"+x.name)
		b.ReportMetric(float64(events*b.N)/total[v].Seconds(), "events/s-indexed-"+x.name)
	}
	b.ReportMetric(imp[0].Seconds()/imp[1].Seconds(), "x-policy-vs-per-file")
	b.ReportMetric(0, "ns/op")
}
