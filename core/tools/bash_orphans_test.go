package tools_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"prism/core"
	"prism/core/tools"
)

// childEnv makes the test binary act as a server running one bash call
// (see TestMain) instead of running the tests.
const childEnv = "PRISM_TEST_BASH_SERVER"

func TestMain(m *testing.M) {
	if fifo := os.Getenv(childEnv); fifo != "" {
		bashServer(fifo)
		return
	}
	os.Exit(m.Run())
}

// bashServer runs a bash call whose shell starts a shell that starts a
// background sleep, reports the sleep's pid through fifo, and waits for it
// — until the test kills this process.
func bashServer(fifo string) {
	list, err := tools.Builtins(tools.Options{Workspace: filepath.Dir(fifo), AllowBash: true})
	if err != nil {
		panic(err)
	}
	reg := core.NewRegistry(nil)
	reg.MustRegister(list...)
	command := fmt.Sprintf(`bash -c 'sleep 60 & echo $! > %s; wait'`, fifo)
	args := fmt.Sprintf(`{"command":%q,"description":"Sleep in a grandchild"}`, command)
	reg.Execute(context.Background(), core.Call{CallID: "c1", Name: "bash", RawArguments: args})
	os.Exit(3) // only reached if the call ended, which it must not before the kill
}

// TestBashProcessesDieWithTheServer SIGKILLs a process in the middle of a
// bash call whose command runs `bash -c 'sleep 60 & wait'`: the
// grandchild sleep dies too (the server's death closes the lifeline of
// the group's guardian), instead of living on as an orphan.
func TestBashProcessesDieWithTheServer(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	server := exec.Command(os.Args[0], "-test.run=^$")
	server.Env = append(os.Environ(), childEnv+"="+fifo)
	server.Stderr = os.Stderr
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- server.Wait() }()
	f, err := os.Open(fifo) // returns once the sleep's shell opened it to write
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(f).ReadString('\n')
	f.Close()
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		t.Fatalf("reading the sleep's pid: %q, %v", line, err)
	}
	if err := server.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the server process ended with %v, want killed", err)
	}
	awaitGone(t, pid)
}

// TestBashLeavesNothingRunning: a call's background processes that do not
// hold its output end with the call.
func TestBashLeavesNothingRunning(t *testing.T) {
	e := bashEnv(t)
	o := e.call("bash", map[string]any{"command": "sleep 60 >/dev/null 2>&1 & echo $!", "description": "Leave a sleeper"})
	awaitGone(t, firstLinePID(t, o.ok(t)))
}
