package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"prism/db"
	"prism/store/storetest"
)

// growthPerSession is the events of each session of BenchmarkGrowth's
// databases (storetest.Corpus: text-heavy turns — messages with
// reasoning, read, grep and bash results with text).
const growthPerSession = 334

// BenchmarkGrowth shows how prism's costs grow with its history: for each
// size (PRISM_GROWTH_SESSIONS, default "300,3000": about 100k and 1M
// events) it builds a SQLite database of that many text-heavy sessions
// once, cached on disk between runs (PRISM_GROWTH_DIR, default
// $TMPDIR/prism-growth; delete it to rebuild), then starts `prism serve`
// on it and reports the database's size per event, the start (process
// start → serving), the idle RSS, and p50/p99 of the session list, a
// session page and searches (a common word by rank, tool:grep), each over
// GROWTH_REQUESTS requests (default 30). `make bench-growth` runs it.
func BenchmarkGrowth(b *testing.B) {
	sizes := os.Getenv("PRISM_GROWTH_SESSIONS")
	if sizes == "" {
		sizes = "300,3000"
	}
	dir := os.Getenv("PRISM_GROWTH_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "prism-growth")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	requests := 30
	if v, err := strconv.Atoi(os.Getenv("GROWTH_REQUESTS")); err == nil && v > 0 {
		requests = v
	}
	for _, f := range strings.Split(sizes, ",") {
		sessions, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || sessions < 1 {
			b.Fatalf("PRISM_GROWTH_SESSIONS: %q is not a number of sessions", f)
		}
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			path, info := growthDB(b, dir, sessions)
			b.ReportMetric(float64(info.Events), "events")
			b.ReportMetric(float64(info.Bytes)/float64(info.Events), "B/event")
			b.ReportMetric(info.BuildSeconds, "build-s")
			for range b.N {
				measureGrowth(b, path, sessions, requests)
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// growthInfo is what a cached database holds, kept beside it.
type growthInfo struct {
	Events       int64   `json:"events"`
	Bytes        int64   `json:"bytes"`
	BuildSeconds float64 `json:"buildSeconds"`
}

// growthDB returns the cached database of n sessions, building it first
// when it is not there (under another name, renamed when complete).
func growthDB(b *testing.B, dir string, n int) (string, growthInfo) {
	path := filepath.Join(dir, fmt.Sprintf("growth-%dx%d.db", n, growthPerSession))
	var info growthInfo
	if data, err := os.ReadFile(path + ".json"); err == nil && json.Unmarshal(data, &info) == nil {
		if _, err := os.Stat(path); err == nil {
			return path, info
		}
	}
	tmp := path + ".building"
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(tmp + suffix)
	}
	ctx := context.Background()
	start := time.Now()
	st, err := db.Open(ctx, tmp, db.Options{SyncNormal: true})
	if err != nil {
		b.Fatal(err)
	}
	c := storetest.NewCorpus(1)
	for i := range n {
		id := fmt.Sprintf("s%05d", i)
		h := storetest.Header(id)
		h.Cwd = "/work/" + c.Word()
		if err := st.CreateSession(ctx, h); err != nil {
			b.Fatal(err)
		}
		log := c.Log(growthPerSession, 1764500000000+int64(i)*600_000)
		if err := st.AppendEvents(ctx, id, log); err != nil {
			b.Fatal(err)
		}
		info.Events += int64(len(log))
	}
	if err := st.Close(); err != nil { // files what the search index lags
		b.Fatal(err)
	}
	info.BuildSeconds = time.Since(start).Seconds()
	fi, err := os.Stat(tmp)
	if err != nil {
		b.Fatal(err)
	}
	info.Bytes = fi.Size()
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	data, _ := json.Marshal(info)
	if err := os.WriteFile(path+".json", data, 0o644); err != nil {
		b.Fatal(err)
	}
	return path, info
}

// measureGrowth starts prism serve on the database and reports its start,
// idle RSS and pages' latencies.
func measureGrowth(b *testing.B, path string, sessions, requests int) {
	prismBinary(b) // built before the clock starts
	start := time.Now()
	srv := startServer(b, 0, path)
	b.ReportMetric(time.Since(start).Seconds(), "start-s")
	time.Sleep(2 * time.Second)
	b.ReportMetric(float64(procRSSKiB(b, srv.cmd.Process.Pid))/1024, "idle-RSS-MB")
	mid := fmt.Sprintf("s%05d", sessions/2)
	for _, p := range []struct{ name, path string }{
		{"list", "/"},
		{"session", "/sessions/" + mid},
		{"search-word", "/search?q=config"},
		{"search-tool", "/search?q=tool:grep"},
	} {
		var lat []time.Duration
		for range requests {
			t0 := time.Now()
			res, err := http.Get(srv.url + p.path)
			if err != nil {
				b.Fatal(err)
			}
			_, err = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if err != nil || res.StatusCode != http.StatusOK {
				b.Fatalf("GET %s: %d %v", p.path, res.StatusCode, err)
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(lat[len(lat)/2]), p.name+"-p50-ms")
		b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), p.name+"-p99-ms")
	}
	b.ReportMetric(float64(procRSSKiB(b, srv.cmd.Process.Pid))/1024, "RSS-after-MB")
	if err := srv.stop(b); err != nil {
		b.Errorf("prism serve exited with %v", err)
	}
}

// procRSSKiB reads a process's resident set size.
func procRSSKiB(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no VmRSS in /proc status")
	return 0
}
