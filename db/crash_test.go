package db

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"prism/core"
	"prism/store"
	"prism/store/storetest"
)

const crashEnv = "PRISM_CRASH_CHILD_DB"

// TestMain runs the crash child instead of the tests when TestCrash
// spawned this binary with crashEnv set.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		crashChild(path)
		return
	}
	os.Exit(m.Run())
}

// crashChild is the child process of TestCrash: it group-commits turns to
// four sessions from four goroutines forever and prints "ACK id seq" after
// each acknowledged append, until it is killed.
func crashChild(path string) {
	ctx := context.Background()
	st, err := Open(ctx, path, Options{Logger: quietLogger()})
	if err != nil {
		fmt.Println("OPEN FAILED", err)
		os.Exit(3)
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint("crash-", g)
			if _, err := st.Session(ctx, id); core.ErrorCode(err) == core.CodeNotFound {
				if err := st.CreateSession(ctx, storetest.Header(id)); err != nil {
					panic(err)
				}
			}
			l, err := st.LoadSession(ctx, id)
			if err != nil {
				panic(err)
			}
			next, turn := int64(len(l.Events)), 1
			for _, e := range l.Events {
				if e.Type == core.EventTurnStart {
					turn++
				}
			}
			r := rand.New(rand.NewSource(int64(g) + time.Now().UnixNano()))
			for ; ; turn++ {
				events := storetest.TurnEvents(next, turn, r.Intn(3) == 0)
				for len(events) > 0 {
					n := min(len(events), 1+r.Intn(3))
					if err := st.AppendEvents(ctx, id, events[:n]); err != nil {
						panic(err)
					}
					out.Lock()
					fmt.Printf("ACK %s %d\n", id, events[n-1].Seq)
					out.Unlock()
					events, next = events[n:], next+int64(n)
				}
			}
		}()
	}
	wg.Wait()
}

// openTurn describes the open last turn of a log for checkRepair: the calls
// of its open step without results (call seq, or -1 when no tool/call was
// logged), and whether a step is open.
func openTurn(events []core.Event) (pending map[string]int64, stepOpen, open bool) {
	start := -1
	for i, e := range events {
		switch e.Type {
		case core.EventTurnStart:
			start, open = i, true
		case core.EventTurnEnd:
			open = false
		}
	}
	pending = map[string]int64{}
	if !open {
		return pending, false, false
	}
	for _, e := range events[start:] {
		switch e.Type {
		case core.EventStepStart:
			stepOpen, pending = true, map[string]int64{}
		case core.EventStepEnd:
			stepOpen, pending = false, map[string]int64{}
		case core.EventAssistantMessage:
			var d core.AssistantMessage
			json.Unmarshal(e.Data, &d)
			for _, b := range d.Message.Content {
				if c, ok := b.(*core.ToolCallBlock); ok {
					pending[c.ID] = -1
				}
			}
		case core.EventToolCall:
			var d core.ToolCall
			json.Unmarshal(e.Data, &d)
			pending[d.CallID] = e.Seq
		case core.EventToolResult:
			var d core.ToolResultData
			json.Unmarshal(e.Data, &d)
			delete(pending, d.CallID())
		}
	}
	return pending, stepOpen, true
}

// TestCrash kills a group-committing writer with SIGKILL at random moments
// and checks, after each kill, that every acknowledged seq is stored, seqs
// are contiguous, and open turns are repaired as dsh's crash repair does (core.InterruptedTurnClosers).
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills child processes")
	}
	const trials = 12
	path := t.TempDir() + "/crash.db"
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	lagged := 0 // trials whose kill left sessions behind their index
	for trial := 0; trial < trials; trial++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := map[string]int64{}
		firstAck := make(chan struct{})
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			sc := bufio.NewScanner(stdout)
			first := true
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 3 || f[0] != "ACK" {
					continue
				}
				seq, _ := strconv.ParseInt(f[2], 10, 64)
				acked[f[1]] = max(acked[f[1]], seq)
				if first {
					close(firstAck)
					first = false
				}
			}
			if first {
				close(firstAck)
			}
		}()
		select {
		case <-firstAck:
		case <-time.After(60 * time.Second): // a failure guard, not synchronisation
			cmd.Process.Kill()
			t.Fatalf("trial %d: the child acknowledged nothing within a minute", trial)
		}
		time.Sleep(time.Duration(5+rng.Intn(150)) * time.Millisecond) // the random moment of the kill
		cmd.Process.Signal(syscall.SIGKILL)
		<-readDone
		cmd.Wait()
		if len(acked) == 0 {
			t.Fatalf("trial %d: the child acknowledged nothing", trial)
		}

		// The search index lags the log: the kill leaves events committed
		// but not indexed, which Open catches up.
		raw, err := sql.Open("sqlite3", path)
		if err != nil {
			t.Fatal(err)
		}
		behind := 0
		for _, m := range watermarks(t, raw) {
			if m[0] < m[1] {
				behind++
			}
		}
		raw.Close()
		if behind > 0 {
			lagged++
		}
		st, err := Open(context.Background(), path, Options{Logger: quietLogger()})
		if err != nil {
			t.Fatalf("trial %d: reopen: %v", trial, err)
		}
		for id, m := range watermarks(t, st.rdb) {
			if m[0] != m[1] {
				t.Errorf("trial %d: after Open, %s is indexed through seq %d of %d", trial, id, m[0], m[1])
			}
		}
		ctx := context.Background()
		type openLog struct {
			events   []core.Event
			pending  map[string]int64
			stepOpen bool
		}
		opened := map[string]openLog{}
		total := 0
		for id, seq := range acked {
			l, err := st.LoadSession(ctx, id)
			if err != nil {
				t.Fatalf("trial %d: %s: %v", trial, id, err)
			}
			for i, e := range l.Events {
				if e.Seq != int64(i) {
					t.Fatalf("trial %d: %s: event %d has seq %d (not contiguous)", trial, id, i, e.Seq)
				}
			}
			if last := int64(len(l.Events)) - 1; last < seq {
				t.Fatalf("trial %d: %s: acknowledged seq %d lost (stored up to %d)", trial, id, seq, last)
			}
			total += len(l.Events)
		}
		// Every stored session, acknowledged or not (the child may have been
		// killed after a commit it never got to acknowledge), is a candidate
		// for repair.
		page, err := st.ListSessions(ctx, store.ListOptions{Limit: 1000})
		if err != nil {
			t.Fatalf("trial %d: list: %v", trial, err)
		}
		empty := map[string]bool{} // created, killed before their first event
		for _, info := range page.Sessions {
			l, err := st.LoadSession(ctx, info.ID)
			if err != nil {
				t.Fatalf("trial %d: %s: %v", trial, info.ID, err)
			}
			if len(l.Events) == 0 {
				empty[info.ID] = true
			}
			if pending, stepOpen, open := openTurn(l.Events); open {
				opened[info.ID] = openLog{l.Events, pending, stepOpen}
			}
		}
		repaired, err := st.RepairOpenTurns(ctx)
		if err != nil {
			t.Fatalf("trial %d: RepairOpenTurns: %v", trial, err)
		}
		t.Logf("trial %d: %d events in %d sessions (%d behind the search index at the kill), %d open turns, %d empty, %d repaired or removed", trial, total, len(acked), behind, len(opened), len(empty), len(repaired))
		t.Run(fmt.Sprintf("trial%d/repair", trial), func(t *testing.T) {
			// RepairOpenTurns removes the empty sessions, then repairs
			// the open turns.
			if len(repaired) != len(opened)+len(empty) {
				t.Errorf("repaired or removed %v, want the %d sessions with an open turn and the %d empty ones", repaired, len(opened), len(empty))
			}
			for id := range empty {
				if _, err := st.LoadSession(ctx, id); core.ErrorCode(err) != core.CodeNotFound {
					t.Errorf("%s: empty session after repair: %v, want it removed (not found)", id, err)
				}
			}
			for id, o := range opened {
				l, err := st.LoadSession(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				storetest.CheckRepair(t, o.events, l.Events, o.pending, o.stepOpen)
				if l.Info.Status != StatusInterrupted {
					t.Errorf("%s: status %s, want interrupted", id, l.Info.Status)
				}
			}
		})
		// After the kill, the catch-up and the repair, the search index
		// holds exactly the stored logs: nothing lost, nothing twice.
		t.Run(fmt.Sprintf("trial%d/search", trial), func(t *testing.T) { storetest.CheckSearchIndex(t, st) })
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if lagged == 0 {
		t.Errorf("no kill left an event unindexed: the search index's catch-up went untested")
	}
}
