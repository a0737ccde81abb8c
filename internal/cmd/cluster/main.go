// Command cluster tries prism's multi-node setup on one machine: it starts
// a throwaway PostgreSQL server in a temporary directory (package
// pgcluster) and two prism nodes on it, each on its own loopback port, and
// prints their addresses. A session started on one node streams live on
// the other; a follow-up sent to either reaches the node that runs it.
// Ctrl-C stops the nodes and the server and removes the directory.
//
//	go run ./internal/cmd/cluster ./prism [--addr-a 127.0.0.1:8080] [--addr-b 127.0.0.1:8081] [-- extra prism flags…]
//
// (make cluster builds ./prism and runs it.)
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"prism/internal/pgcluster"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run() error {
	addrA := flag.String("addr-a", "127.0.0.1:0", "node A's listen address (port 0: a free one)")
	addrB := flag.String("addr-b", "127.0.0.1:0", "node B's listen address")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: cluster PRISM-BINARY [--addr-a ADDR] [--addr-b ADDR] [-- prism flags…]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		return errors.New("the prism binary is missing")
	}
	bin, extra := flag.Arg(0), flag.Args()[1:]
	if len(extra) > 0 && extra[0] == "--" { // the usage's separator, not a flag of prism's
		extra = extra[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Println("starting PostgreSQL in a temporary directory…")
	c, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		return err
	}
	defer func() {
		c.Stop() //nolint:errcheck
		fmt.Println("PostgreSQL stopped, its directory removed")
	}()
	url, err := c.CreateDatabase(ctx, "prism")
	if err != nil {
		return err
	}
	fmt.Printf("PostgreSQL: %s (data in %s)\n", url, c.Dir)

	var wg sync.WaitGroup
	nodes := []*node{{name: "A", addr: *addrA}, {name: "B", addr: *addrB}}
	for _, n := range nodes {
		if err := n.start(bin, url, extra); err != nil {
			for _, m := range nodes {
				m.stop()
			}
			return err
		}
		wg.Go(n.wait)
	}
	for _, n := range nodes {
		select {
		case u := <-n.url:
			fmt.Printf("node %s: %s\n", n.name, u)
		case <-n.exited:
			return fmt.Errorf("node %s exited before it served", n.name)
		case <-ctx.Done():
		}
	}
	fmt.Println("both nodes share the database: open both URLs, start a session on one, watch it on the other. Ctrl-C stops everything.")
	select {
	case <-ctx.Done():
	case <-nodes[0].exited:
	case <-nodes[1].exited:
	}
	for _, n := range nodes {
		n.stop()
	}
	wg.Wait()
	return nil
}

// node is one prism process.
type node struct {
	name, addr string
	cmd        *exec.Cmd
	url        chan string
	exited     chan struct{}
}

var servingRE = regexp.MustCompile(`msg=serving url=(\S+)`)

func (n *node) start(bin, dbURL string, extra []string) error {
	args := append([]string{"serve", "--addr", n.addr, "--db", dbURL}, extra...)
	n.cmd = exec.Command(bin, args...)
	n.cmd.Stdout = os.Stdout
	stderr, err := n.cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := n.cmd.Start(); err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	n.url, n.exited = make(chan string, 1), make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintf(os.Stderr, "[%s] %s\n", n.name, line)
			if m := servingRE.FindStringSubmatch(line); m != nil && !strings.Contains(line, "share") {
				select {
				case n.url <- m[1]:
				default:
				}
			}
		}
	}()
	return nil
}

func (n *node) wait() {
	n.cmd.Wait() //nolint:errcheck
	close(n.exited)
}

// stop asks the node to shut down (SIGTERM), then kills it after 10 s.
func (n *node) stop() {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	n.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck
	select {
	case <-n.exited:
	case <-time.After(10 * time.Second):
		n.cmd.Process.Kill() //nolint:errcheck
	}
}
