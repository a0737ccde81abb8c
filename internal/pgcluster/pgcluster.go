// Package pgcluster starts a throwaway PostgreSQL cluster from Debian's
// packages in a temporary directory: initdb and postgres run as an
// unprivileged user (the postgres account when the caller is root, since
// both refuse to run as root), listening on a free loopback port and on a
// Unix socket inside the directory. Stop ends the server and removes the
// directory. The tests (internal/pgtest) and `make cluster` use it.
package pgcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// User is the cluster's superuser (trust authentication, loopback only).
const User = "prism"

// Options configure a cluster. The zero value is a durable server.
type Options struct {
	// Fast turns fsync and full-page writes off: commits are still
	// acknowledged only after PostgreSQL wrote them, but a power loss of
	// the machine could lose them. For tests, never for benchmarks.
	Fast bool
	// Log receives the server's log lines (nil: discarded).
	Log io.Writer
	// Settings are extra server settings (name → value).
	Settings map[string]string
}

// Cluster is a running throwaway PostgreSQL server.
type Cluster struct {
	// Dir holds the data directory and the Unix socket.
	Dir string
	// Port is the loopback TCP port.
	Port int

	cmd    *exec.Cmd
	exited chan struct{}
	once   sync.Once

	// What Restart needs to start the server again.
	bin, data string
	cred      *syscall.Credential
	opts      Options
}

// BinDir returns the directory of initdb and postgres: $PG_BIN when set,
// else the newest /usr/lib/postgresql/<version>/bin that has both.
func BinDir() (string, error) {
	if d := os.Getenv("PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL is not installed: no /usr/lib/postgresql/<version>/bin/initdb " +
		"(apt-get install postgresql, or `make postgresql` as root; or set PG_BIN)")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&0o111 != 0
}

// credential returns who initdb and postgres run as: the postgres account
// when we are root, else ourselves (nil).
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL must run as another user, and there is no postgres account: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("postgres account: uid %q gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// Start creates and starts a cluster. The caller must Stop it.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "prism-pg-")
	if err != nil {
		return nil, fmt.Errorf("postgres: temp dir: %w", err)
	}
	c := &Cluster{Dir: dir, exited: make(chan struct{}), bin: bin, cred: cred, opts: o}
	fail := func(err error) (*Cluster, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fail(fmt.Errorf("postgres: chown %s: %w", dir, err))
		}
	}
	data := filepath.Join(dir, "data")
	c.data = data
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", User, "--auth=trust",
		"-E", "UTF8", "--no-locale", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("postgres: initdb: %w\n%s", err, out))
	}
	// A port found free may be taken before the server binds it: retry.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return fail(err)
		}
		err = c.run(ctx, bin, data, port, cred, o)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, errPortTaken) || attempt == 4 {
			return fail(err)
		}
	}
}

var errPortTaken = errors.New("port taken")

// run starts postgres on port and waits until it accepts connections.
func (c *Cluster) run(ctx context.Context, bin, data string, port int, cred *syscall.Credential, o Options) error {
	args := []string{"-D", data, "-p", strconv.Itoa(port), "-k", c.Dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300", "-c", "log_min_messages=warning"}
	if o.Fast {
		args = append(args, "-c", "fsync=off", "-c", "full_page_writes=off")
	}
	keys := make([]string, 0, len(o.Settings))
	for k := range o.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-c", k+"="+o.Settings[k])
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	// SIGQUIT (immediate shutdown) if this process dies without Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("postgres: start: %w", err)
	}
	exited := make(chan struct{})
	ready := make(chan error, 1)
	go func() {
		// The server says when it accepts connections; everything it
		// logs goes to o.Log.
		sc := bufio.NewScanner(stderr)
		var lines []string
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			if o.Log != nil {
				fmt.Fprintln(o.Log, line)
			}
			if signalled {
				continue
			}
			lines = append(lines, line)
			switch {
			case strings.Contains(line, "ready to accept connections"):
				ready <- nil
				signalled = true
			case strings.Contains(line, "could not bind") || strings.Contains(line, "Address already in use"):
				ready <- errPortTaken
				signalled = true
			}
		}
		if !signalled {
			ready <- fmt.Errorf("postgres exited before accepting connections:\n%s", strings.Join(lines, "\n"))
		}
		io.Copy(io.Discard, stderr) //nolint:errcheck
	}()
	go func() {
		cmd.Wait() //nolint:errcheck
		close(exited)
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(2 * time.Minute):
		err = errors.New("postgres did not accept connections within 2 minutes")
	}
	if err != nil {
		cmd.Process.Signal(syscall.SIGQUIT) //nolint:errcheck
		<-exited
		return err
	}
	c.cmd, c.exited, c.Port = cmd, exited, port
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("postgres: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// URL returns the connection URL of database name over loopback TCP.
func (c *Cluster) URL(name string) string {
	u := url.URL{Scheme: "postgres", User: url.User(User), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)), Path: "/" + name}
	u.RawQuery = "sslmode=disable"
	return u.String()
}

// CreateDatabase creates an empty database and returns its URL.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("postgres: create database %s: %w", name, err)
	}
	return c.URL(name), nil
}

// Crash ends the server as a crash would: an immediate shutdown (SIGQUIT
// to the postmaster), which ends every connection at once without a
// checkpoint; the next start recovers from the WAL. It returns once the
// server exited. Restart starts it again.
func (c *Cluster) Crash() {
	c.cmd.Process.Signal(syscall.SIGQUIT) //nolint:errcheck // exits below either way
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill() //nolint:errcheck
		<-c.exited
	}
}

// Restart starts a crashed server again on the same port and data
// directory, and returns once it accepts connections (after its
// recovery).
func (c *Cluster) Restart(ctx context.Context) error {
	select {
	case <-c.exited:
	default:
		return errors.New("postgres: restart: the server is running")
	}
	if err := c.run(ctx, c.bin, c.data, c.Port, c.cred, c.opts); err != nil {
		return fmt.Errorf("postgres: restart on port %d: %w", c.Port, err)
	}
	return nil
}

// Stop shuts the server down (fast: open sessions are ended) and removes
// its directory.
func (c *Cluster) Stop() error {
	var err error
	c.once.Do(func() {
		if c.cmd != nil {
			c.cmd.Process.Signal(syscall.SIGINT) //nolint:errcheck
			select {
			case <-c.exited:
			case <-time.After(30 * time.Second):
				c.cmd.Process.Kill() //nolint:errcheck
				<-c.exited
			}
		}
		err = os.RemoveAll(c.Dir)
	})
	return err
}
