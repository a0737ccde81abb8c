package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"prism/internal/pgtest"
	"prism/mcp/mcptest"
)

// These tests run prism as its own process — what a user runs — to prove
// what only a process shows: how it fares under a hard memory limit and
// what a SIGKILL leaves behind. The binary is built once per test run
// without the race detector (whose shadow memory a memory limit cannot
// accommodate), so `make test`, which runs with -race, exercises them too.

var prismBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// TestMain runs the MCP test server when the test binary is started as
// one (mcptest), or prism when a test started it as a child process
// (runChildIfAsked) or as a cluster node (runIfNode), else the tests —
// with the PostgreSQL server the cluster tests share (pgtest) — and
// removes the prism binary they built.
func TestMain(m *testing.M) {
	// Demos in this test binary, and in the prism children it starts, run
	// at the tests' pace.
	os.Setenv("PRISM_DEMO_CALL_TIME", "0")
	mcptest.RunIfChild()
	runChildIfAsked()
	runIfNode()
	code := pgtest.Main(m)
	if prismBin.dir != "" {
		os.RemoveAll(prismBin.dir)
	}
	os.Exit(code)
}

// prismBinary returns the path of a prism binary built from this package,
// without -race whatever the test binary was built with.
func prismBinary(t testing.TB) string {
	t.Helper()
	prismBin.once.Do(func() {
		prismBin.dir, prismBin.err = os.MkdirTemp("", "prism-bin-")
		if prismBin.err != nil {
			return
		}
		prismBin.path = filepath.Join(prismBin.dir, "prism")
		cmd := exec.Command("go", "build", "-o", prismBin.path, ".")
		var flags []string
		for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
			if f != "-race" {
				flags = append(flags, f)
			}
		}
		cmd.Env = append(os.Environ(), "GOFLAGS="+strings.Join(flags, " "))
		if out, err := cmd.CombinedOutput(); err != nil {
			prismBin.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if prismBin.err != nil {
		t.Fatal(prismBin.err)
	}
	return prismBin.path
}

// prismCmd returns a command running the prism binary with args under a
// data-segment limit of limitMiB (RLIMIT_DATA: every heap and anonymous
// mapping the Go runtime makes counts against it; 0 = no limit), with a
// clean environment: no API key, so the scripted model is the default.
func prismCmd(t testing.TB, limitMiB int, args ...string) *exec.Cmd {
	t.Helper()
	bin := prismBinary(t)
	var cmd *exec.Cmd
	if limitMiB > 0 {
		// The shell sets the limit on itself and execs prism, which
		// inherits it (os/exec has no way to set a child's rlimit).
		cmd = exec.Command("/bin/sh", append([]string{"-c", `ulimit -d "$0" && exec "$@"`, fmt.Sprint(limitMiB << 10), bin}, args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir()}
	return cmd
}

// server is a prism serve process.
type server struct {
	cmd    *exec.Cmd
	url    string
	stderr *strings.Builder // everything it logged
	mu     *sync.Mutex
	exited chan error
}

// startServer starts `prism serve` on a free loopback port and waits for
// the URL it logs.
func startServer(t testing.TB, limitMiB int, dbPath string, extra ...string) *server {
	t.Helper()
	cmd := prismCmd(t, limitMiB, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", dbPath, "--no-demo"}, extra...)...)
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, stderr: &strings.Builder{}, mu: &sync.Mutex{}, exited: make(chan error, 1)}
	urlRE := regexp.MustCompile(`url=(http://\S+)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.mu.Lock()
			s.stderr.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		s.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.exited
	})
	select {
	case s.url = <-found:
	case err := <-s.exited:
		s.exited <- err
		t.Fatalf("prism serve exited before serving: %v\n%s", err, s.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("prism serve never logged its url\n%s", s.log())
	}
	return s
}

func (s *server) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// alive reports whether the server process is still running.
func (s *server) alive() bool {
	select {
	case err := <-s.exited:
		s.exited <- err
		return false
	default:
		return s.cmd.Process.Signal(syscall.Signal(0)) == nil
	}
}

// stop ends the server with SIGTERM and returns its exit error.
func (s *server) stop(t testing.TB) error {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		s.exited <- err
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("prism serve did not stop on SIGTERM\n%s", s.log())
		return nil
	}
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func post(t *testing.T, url, contentType string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, string(b)
}
