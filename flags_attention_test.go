package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"prism/backend/attend"
	"prism/core/attention"
	"prism/db"
)

// TestServeRefusesBadRules: a rules file that does not validate stops
// serve at startup with a usage error naming the file's line.
func TestServeRefusesBadRules(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		text, want string
		more       []string
	}{
		"kind":   {"[[rule]]\nname = \"x\"\nwhen = \"slowly\"\n", `rules.toml:3: rule x: unknown kind "slowly"`, nil},
		"usd":    {"[[rule]]\nname = \"spend\"\nwhen = \"budget\"\nusd = 2.0\n", `rules.toml:4: rule spend: a budget in usd needs a price table (--prices)`, nil},
		"itself": {"[[rule]]\nname = \"x\"\nwhen = \"loop\"\ncount = 2\nactions = [\"webhook\"]\n[webhook]\nurl = \"http://127.0.0.1:18499/hook\"\n", `rules.toml:7: webhook: url "http://127.0.0.1:18499/hook" is prism's own listen address`, nil},
		"otlp": {"[webhook]\nurl = \"http://localhost:18500/v1/traces\"\n", `rules.toml:2: webhook: url "http://localhost:18500/v1/traces" is prism's own listen address 127.0.0.1:18500 (--otlp-addr)`,
			[]string{"--otlp-addr", "127.0.0.1:18500"}},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, "rules.toml")
			if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
				t.Fatal(err)
			}
			err := runServe(context.Background(), append([]string{"--addr", "127.0.0.1:18499", "--db", filepath.Join(dir, "p.db"), "--no-demo", "--rules", path}, c.more...), io.Discard, io.Discard)
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("serve = %v, want a usage error containing %q", err, c.want)
			}
		})
	}
}

// TestReloadOnSIGHUP: SIGHUP reads the rules file again; a file that
// does not load keeps the old rules and says why on /rules' model.
func TestReloadOnSIGHUP(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.toml")
	write := func(text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("[[rule]]\nname = \"repeat\"\nwhen = \"loop\"\ncount = 3\n")
	cfg := serveConfig{Rules: path, Addr: "127.0.0.1:0"}
	rules, err := loadRules(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), db.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := attend.New(attend.Options{Store: st, Rules: rules, File: path, Every: -1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go svc.Run(ctx)
	reloaded := make(chan error, 1)
	stop := reloadOnHUP(cfg, svc, func(err error) { reloaded <- err })
	defer stop()

	write("[[rule]]\nname = \"repeat\"\nwhen = \"sometimes\"\n")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var e *attention.Error
	if err := <-reloaded; !errors.As(err, &e) || e.Line != 3 {
		t.Fatalf("reload of a bad file: %v", err)
	}
	if p := svc.Page(); len(p.Rules) != 1 || p.Rules[0].When != "loop" || !strings.Contains(p.LoadError, `unknown kind "sometimes"`) {
		t.Fatalf("after a bad reload: %+v", p)
	}

	write("[[rule]]\nname = \"fails\"\nwhen = \"error-streak\"\ncount = 2\n")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if err := svc.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if p := svc.Page(); len(p.Rules) != 1 || p.Rules[0].Name != "fails" || p.LoadError != "" {
		t.Fatalf("after a good reload: %+v", p)
	}
}
