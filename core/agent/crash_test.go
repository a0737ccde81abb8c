package agent_test

import (
	"bufio"
	"context"
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
	"prism/core/agent"
	"prism/core/model"
	"prism/db"
	"prism/store"
)

// Environment of the crash child: the database and the marker file.
const (
	crashDBEnv     = "PRISM_CRASH_CHILD_AGENT_DB"
	crashMarkerEnv = "PRISM_CRASH_CHILD_AGENT_MARKERS"
)

// TestMain runs the crash child instead of the tests when
// TestCrashDurabilityPoints spawned this binary.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashDBEnv); path != "" {
		crashChild(path, os.Getenv(crashMarkerEnv))
		return
	}
	os.Exit(m.Run())
}

// markerTool is a tool whose body first records "BODY <session> <call id>"
// in the marker file — its side effect — and only then does anything else.
func markerTool(name string, parallel bool, markers *os.File) *core.Tool {
	d := core.Definition[keyArgs, keyValue]{
		Name:       name,
		Parameters: `{"key": {"type": "string", "required": true}}`,
		Output: core.Output[keyArgs, keyValue]{
			Schema: `{"type": "object", "additionalProperties": false, "properties": {"key": {"type": "string", "required": true}}}`,
			Render: func(_ keyArgs, v keyValue) (core.Content, error) { return core.Text("marked " + v.Key), nil },
		},
		Execute: func(_ context.Context, a keyArgs, run *core.Run) (keyValue, error) {
			// One write(2) of one line with O_APPEND: it survives SIGKILL.
			if _, err := fmt.Fprintf(markers, "BODY %s %s\n", run.Execution.SessionID, run.Execution.CallID); err != nil {
				return keyValue{}, err
			}
			return keyValue(a), nil
		},
	}
	if parallel {
		d.IsConcurrencySafe = func(keyArgs) bool { return true }
	}
	return core.MustDefine(d)
}

// crashScript is one turn: steps of one exclusive call and of parallel
// batches, then a closing text. Call ids are unique per session.
func crashScript(r *rand.Rand, prefix string) model.Script {
	var steps []model.Step
	n := 0
	for range 3 + r.Intn(6) {
		var st model.Step
		tool, count := "mark", 1
		if r.Intn(2) == 0 {
			tool, count = "pmark", 2+r.Intn(12)
		}
		for range count {
			id := fmt.Sprintf("%s-%d", prefix, n)
			st.Calls = append(st.Calls, model.ScriptCall{ID: id, Name: tool, Arguments: fmt.Sprintf(`{"key":%q}`, id)})
			n++
		}
		steps = append(steps, st)
	}
	return model.Script{Steps: append(steps, model.Step{Text: "done"})}
}

// crashChild runs agents over three sessions of a real SQLite store, turn
// after turn, until it is killed. It prints "SAW <session> <seq> <type>"
// for every event the store's commit hook publishes (the feed of the web
// pages' SSE streams) and "OBS …" for every event a session observer gets;
// the tool bodies write their markers.
func crashChild(path, markerPath string) {
	ctx := context.Background()
	markers, err := os.OpenFile(markerPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Println("MARKERS FAILED", err)
		os.Exit(3)
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Printf(format, args...)
		out.Unlock()
	}
	st, err := db.Open(ctx, path, db.Options{Logger: quiet, Committed: func(c store.Commit) {
		for _, e := range c.Events {
			say("SAW %s %d %s\n", c.SessionID, e.Seq, e.Type)
		}
	}})
	if err != nil {
		fmt.Println("OPEN FAILED", err)
		os.Exit(3)
	}
	reg := core.NewRegistry(quiet)
	reg.MustRegister(markerTool("mark", false, markers), markerTool("pmark", true, markers))
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			r := rand.New(rand.NewSource(int64(g) + time.Now().UnixNano()))
			sess, err := core.NewSession(ctx, core.SessionHeader{Cwd: os.TempDir()}, core.SessionOptions{Store: st, Logger: quiet})
			if err != nil {
				panic(err)
			}
			id := sess.Header().ID
			sess.OnAppend(func(e core.Event) { say("OBS %s %d %s\n", id, e.Seq, e.Type) })
			for turn := 0; ; turn++ {
				a, err := agent.New(agent.Config{Session: sess, Tools: reg, Logger: quiet, MaxParallel: 4,
					Model: model.NewScripted(model.ScriptedConfig{Script: crashScript(r, fmt.Sprintf("t%d", turn))})})
				if err != nil {
					panic(err)
				}
				if _, err := a.Turn(ctx, core.NewUserMessage(core.NewID(), "mark")); err != nil {
					panic(err)
				}
				say("TURN %s %d\n", id, turn)
			}
		})
	}
	wg.Wait()
}

// seen is an event a subscriber was shown.
type seen struct {
	seq int64
	typ string
}

// TestCrashDurabilityPoints kills an agent process with SIGKILL at random
// moments, 20 times, and checks the rules durability points must keep: no
// tool body ever ran whose tool/call is not in the log (crash repair then
// closes each such call as TOOL_OUTCOME_UNKNOWN, never TOOL_NOT_STARTED);
// every event the commit feed or a session observer published is in the
// log, as published; and each turn reported finished is wholly in the log.
func TestCrashDurabilityPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills child processes")
	}
	const trials = 20
	dir := t.TempDir()
	path := dir + "/crash.db"
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var bodiesTotal, seenTotal, repairedTotal, unknownTotal int
	for trial := range trials {
		markerPath := fmt.Sprintf("%s/markers-%d", dir, trial)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashDBEnv+"="+path, crashMarkerEnv+"="+markerPath)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		saw := map[string][]seen{}        // SAW and OBS lines per session
		turnsDone := map[string]int{}     // TURN lines per session
		started := make(chan struct{}, 1) // the first published event
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				switch {
				case len(f) == 4 && (f[0] == "SAW" || f[0] == "OBS"):
					seq, _ := strconv.ParseInt(f[2], 10, 64)
					saw[f[1]] = append(saw[f[1]], seen{seq, f[3]})
					select {
					case started <- struct{}{}:
					default:
					}
				case len(f) == 3 && f[0] == "TURN":
					turnsDone[f[1]]++
				}
			}
		}()
		select {
		case <-started:
		case <-readDone:
			t.Fatalf("trial %d: the child exited before publishing anything", trial)
		case <-time.After(60 * time.Second): // a failure guard, not synchronisation
			cmd.Process.Kill()
			t.Fatalf("trial %d: the child published nothing within a minute", trial)
		}
		time.Sleep(time.Duration(5+rng.Intn(250)) * time.Millisecond) // the random moment of the kill
		cmd.Process.Signal(syscall.SIGKILL)
		<-readDone
		cmd.Wait()

		bodies := map[string]map[string]bool{} // session → call ids whose body ran
		data, err := os.ReadFile(markerPath)
		if err != nil {
			t.Fatalf("trial %d: markers: %v", trial, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 || f[0] != "BODY" {
				continue // an empty file, or a line cut by the kill
			}
			if bodies[f[1]] == nil {
				bodies[f[1]] = map[string]bool{}
			}
			bodies[f[1]][f[2]] = true
			bodiesTotal++
		}

		ctx := context.Background()
		st, err := db.Open(ctx, path, db.Options{Logger: quiet})
		if err != nil {
			t.Fatalf("trial %d: reopen: %v", trial, err)
		}
		logs := map[string][]core.Event{}
		load := func(id string) []core.Event {
			if l, ok := logs[id]; ok {
				return l
			}
			l, err := st.LoadSession(ctx, id)
			if err != nil {
				t.Fatalf("trial %d: load %s: %v", trial, id, err)
			}
			logs[id] = l.Events
			return l.Events
		}
		for id, calls := range bodies {
			logged := map[string]bool{}
			for _, e := range load(id) {
				if e.Type == core.EventToolCall {
					var d core.ToolCall
					if err := json.Unmarshal(e.Data, &d); err != nil {
						t.Fatal(err)
					}
					logged[d.CallID] = true
				}
			}
			for callID := range calls {
				if !logged[callID] {
					t.Errorf("trial %d: %s: the body of %s ran but its tool/call is not in the log", trial, id, callID)
				}
			}
		}
		for id, evs := range saw {
			log := load(id)
			for _, s := range evs {
				seenTotal++
				if s.seq >= int64(len(log)) || log[s.seq].Type != s.typ {
					t.Errorf("trial %d: %s: a subscriber saw seq %d (%s), the log holds %d events", trial, id, s.seq, s.typ, len(log))
				}
			}
			ended := 0
			for _, e := range log {
				if e.Type == core.EventTurnEnd {
					ended++
				}
			}
			if ended < turnsDone[id] {
				t.Errorf("trial %d: %s: %d turns reported finished, %d turn/end in the log", trial, id, turnsDone[id], ended)
			}
		}

		// Crash repair closes every call whose body ran as outcome unknown.
		repaired, err := st.RepairOpenTurns(ctx)
		if err != nil {
			t.Fatalf("trial %d: RepairOpenTurns: %v", trial, err)
		}
		for _, id := range repaired {
			before := len(logs[id])
			l, err := st.LoadSession(ctx, id)
			if core.ErrorCode(err) == core.CodeNotFound {
				// Removed: the kill came before its first event was
				// committed, so nothing of it can have run.
				if before != 0 || len(bodies[id]) != 0 {
					t.Errorf("trial %d: %s was removed by repair, yet it logged %d events and ran %d bodies", trial, id, before, len(bodies[id]))
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			repairedTotal++
			for _, e := range l.Events[before:] {
				if e.Type != core.EventToolResult {
					continue
				}
				var d core.ToolResultData
				if err := json.Unmarshal(e.Data, &d); err != nil || d.Error == nil {
					t.Fatalf("trial %d: %s: synthetic result %s (%v)", trial, id, e.Data, err)
				}
				ran := bodies[id][d.CallID()]
				switch {
				case d.Error.Code == core.CodeToolOutcomeUnknown:
					unknownTotal++
				case ran:
					t.Errorf("trial %d: %s: the body of %s ran, yet repair closed it as %s", trial, id, d.CallID(), d.Error.Code)
				}
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d trials: %d tool bodies ran, %d published events checked, %d sessions repaired, %d calls closed as outcome unknown",
		trials, bodiesTotal, seenTotal, repairedTotal, unknownTotal)
	if bodiesTotal == 0 || seenTotal == 0 {
		t.Errorf("the children ran no tool body (%d) or published nothing (%d): the test proved nothing", bodiesTotal, seenTotal)
	}
}
