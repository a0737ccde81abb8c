package db

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"prism/core/sessionlog"
	"prism/store/storetest"
)

// BenchmarkImportTextHeavy imports 100 prism JSONL files of text-heavy
// sessions (storetest.Corpus: messages with reasoning, read, grep and bash
// results with text — about 334 events, 100 KB a file; 33,400 events in
// all) one file after another, as `prism import FILE...` does, each run
// into a fresh store. It compares, in the same run and alternating, how
// an import hands memory back: release=per-file is one
// debug.FreeOSMemory after every file (what imports did), release=policy
// the process's policy (memrelease: at most one per interval). Reported:
// events/s of the imports, and of the imports plus the search index's
// filing that follows them (the index lags the log: db's package doc).
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
		if err := sessionlog.WriteJSONL(f, storetest.Header(id), log); err != nil {
			b.Fatal(err)
		}
		f.Close()
		paths = append(paths, path)
	}
	defer func(r func()) { releaseMemory = r }(releaseMemory)
	policy := releaseMemory
	for _, variant := range []struct {
		name    string
		release func()
	}{{"per-file", debug.FreeOSMemory}, {"policy", policy}} {
		b.Run("release="+variant.name, func(b *testing.B) {
			releaseMemory = variant.release
			var imp, total time.Duration
			for i := 0; i < b.N; i++ {
				st, err := Open(context.Background(), filepath.Join(b.TempDir(), fmt.Sprintf("import%d.db", i)), Options{Logger: quietLogger()})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				for _, p := range paths {
					if _, err := st.ImportFile(context.Background(), p); err != nil {
						b.Fatal(err)
					}
				}
				imp += time.Since(start)
				if err := st.catchUpIndex(context.Background()); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				st.Close()
			}
			b.ReportMetric(float64(events*b.N)/imp.Seconds(), "events/s")
			b.ReportMetric(float64(events*b.N)/total.Seconds(), "events/s-indexed")
			b.ReportMetric(0, "ns/op")
		})
	}
}
