package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"prism/core"
	"prism/core/coretest"
	"prism/sources/dsh"
)

// shareMemoryLimitMiB is the data-segment limit the server runs under in
// TestShareStalledReadersMemory: room for the runtime, SQLite and the
// session, far below what its stalled readers took when each share stream
// kept its own fold of the session (~8.7 MB each: 3.4 GB for 400).
const shareMemoryLimitMiB = 400

// stalledReaders is how many readers stop reading: the 400
// (PRISM_TEST_STALLED_READERS sets another number).
func stalledReaders() int {
	if n, err := strconv.Atoi(os.Getenv("PRISM_TEST_STALLED_READERS")); err == nil && n > 0 {
		return n
	}
	return 400
}

// TestShareStalledReadersMemory runs `prism serve` under a memory limit,
// opens stalledReaders streams of one live share link that never read a
// byte (a small receive buffer each), and makes the session go on: the
// server stays up and answers, its RSS grows by a bounded amount per
// stalled reader (their frames are the link's hub's, shared; each queue
// holds at most 256 KiB), a reader that does read follows the session to
// its end, and once the stalled readers leave the RSS is back within 1.5×
// of its figure before them within 30 s.
//
// The same holds for the owner's stream of the session.
func TestShareStalledReadersMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a process test")
	}
	for _, which := range []string{"share", "owner"} {
		t.Run(which, func(t *testing.T) { stalledReadersMemory(t, which == "owner") })
	}
}

// stalledReadersMemory is TestShareStalledReadersMemory on a link's stream,
// or on the owner's.
func stalledReadersMemory(t *testing.T, owner bool) {
	dir := t.TempDir()
	id := "0b1c6d2e-5f4a-4e3b-9c8d-7a6b5c4d3e2f"
	events, half := bigShareSession()
	write := func(name string, evs []core.Event) string {
		var buf bytes.Buffer
		if err := dsh.WriteJSONL(&buf, core.SessionHeader{ID: id, CreatedAt: 1767225600000, Cwd: "/work"}, evs); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first, whole := write("first.jsonl", events[:half]), write("whole.jsonl", events)

	srv := startServer(t, shareMemoryLimitMiB, filepath.Join(t.TempDir(), "prism.db"))
	importFile := func(p string) {
		t.Helper()
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if res, body := post(t, srv.url+"/api/sessions/import?name="+filepath.Base(p), "application/octet-stream", bytes.NewReader(data)); res.StatusCode != http.StatusCreated {
			t.Fatalf("import %s: %d %s", p, res.StatusCode, body)
		}
	}
	importFile(first)
	res, body := post(t, srv.url+"/api/sessions/"+id+"/shares", "application/json", strings.NewReader(`{}`))
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("share: %d %s", res.StatusCode, body)
	}
	var link struct{ URL string }
	if err := json.Unmarshal([]byte(body), &link); err != nil {
		t.Fatal(err)
	}
	path := link.URL[strings.Index(link.URL, "/s/"):]
	if owner {
		path = "/sessions/" + id
	}
	host := strings.TrimPrefix(srv.url, "http://")

	// The baseline: the server with the link's page served and one reader
	// following it (the link's hub open).
	for range 3 {
		if res, err := http.Get(srv.url + path); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("the link's page: %v %v", res, err)
		} else {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	reader, err := http.Get(srv.url + path + "/stream?after=" + strconv.Itoa(half-1))
	if err != nil || reader.StatusCode != http.StatusOK {
		t.Fatalf("the reading stream: %v %v", reader, err)
	}
	defer reader.Body.Close()
	lastID := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(reader.Body)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		want := "id: " + strconv.Itoa(len(events)-1)
		for sc.Scan() {
			if sc.Text() == want {
				lastID <- want
				return
			}
		}
		lastID <- ""
	}()
	base := rssKiB(t, srv)

	// The stalled readers: each asks for the whole session and reads
	// nothing.
	stalled := stalledReaders()
	conns := make([]net.Conn, 0, stalled)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
		if err != nil {
			return err
		}
		return serr
	}}
	for range stalled {
		c, err := d.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, "GET "+path+"/stream?after=-1 HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	// The session goes on while they stall.
	importFile(whole)
	select {
	case got := <-lastID:
		if got == "" {
			t.Fatal("the reading stream ended before the session's last event")
		}
	case <-time.After(60 * time.Second): // a failure bound
		t.Fatal("the reading stream did not follow the session to its end while readers stalled")
	}
	peak := rssKiB(t, srv)
	// The owner's list answers while they stall (its latency is logged,
	// not held to a bound: this machine is shared).
	var took []time.Duration
	for range 50 {
		start := time.Now()
		res, err := http.Get(srv.url + "/api/sessions")
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("/api/sessions while readers stall: %v %v", res, err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		took = append(took, time.Since(start))
		peak = max(peak, rssKiB(t, srv))
	}
	slices.Sort(took)
	perReader := float64(peak-base) / float64(stalled)
	t.Logf("RSS %d KiB before, %d KiB peak with %d stalled readers: %.0f KiB each; /api/sessions p50 %v p99 %v",
		base, peak, stalled, perReader, took[len(took)/2], took[len(took)*99/100])
	if perReader > 512 {
		t.Errorf("each stalled reader holds %.0f KiB, want at most 512", perReader)
	}
	if !srv.alive() {
		t.Fatalf("the server died under a %d MiB limit\n%s", shareMemoryLimitMiB, tail(srv.log()))
	}

	// They leave: the memory is returned.
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	deadline := time.Now().Add(30 * time.Second)
	var after int64
	for {
		after = rssKiB(t, srv)
		if float64(after) <= 1.5*float64(base) || time.Now().After(deadline) {
			break
		}
		<-time.After(250 * time.Millisecond) // polling a measurement, not waiting for an event
	}
	t.Logf("RSS %d KiB after the stalled readers left", after)
	if float64(after) > 1.5*float64(base) {
		t.Errorf("RSS %d KiB 30 s after the stalled readers left, want at most 1.5× the %d KiB before them", after, base)
	}
	if err := srv.stop(t); err != nil {
		t.Errorf("prism serve exited with %v\n%s", err, tail(srv.log()))
	}
}

// rssKiB reads the server process's resident set size.
func rssKiB(t *testing.T, s *server) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}

// bigShareSession is a session like the issue's: about 400 events in two
// turns, calls with results of a few KB and one read of 2,000 lines. It
// returns the events and how many the first turn holds (a log that ends
// there is complete: importing it adds no repair).
func bigShareSession() ([]core.Event, int) {
	b := coretest.NewBuilder(1767225600000)
	firstTurn := 0
	for turn := range 2 {
		b.TurnStart().StepStart().User(fmt.Sprintf("Read the code and take notes, part %d.", turn+1))
		for j := range 50 {
			i := turn*50 + j
			callID := fmt.Sprintf("call-%03d", i)
			args := fmt.Sprintf(`{"title":"note %d"}`, i)
			b.Assistant(fmt.Sprintf("Step %d.", i), [3]string{callID, "note", args})
			b.Call(callID, "note", args)
			text := strings.Repeat(fmt.Sprintf("line of result %d with some words in it\n", i), 60)
			if i == 70 {
				var sb strings.Builder
				for n := range 2000 {
					fmt.Fprintf(&sb, "%5d\tfunc example%d() { return compute(%d) }\n", n+1, n, n)
				}
				text = sb.String()
			}
			b.Result(callID, text, false, nil, nil)
			if j%10 == 9 {
				b.StepEnd().StepStart()
			}
		}
		b.StepEnd().TurnEnd(core.TurnCompleted)
		if turn == 0 {
			firstTurn = len(b.Events)
		}
	}
	return b.Events, firstTurn
}
