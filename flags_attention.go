package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"prism/backend"
	"prism/backend/attend"
	"prism/core"
	"prism/core/attention"
	"prism/store"
	"prism/views"
	"prism/web"
)

// loadRules reads and validates the attention rules file (--rules).
func loadRules(cfg serveConfig) (*attention.Rules, error) {
	data, err := os.ReadFile(cfg.Rules)
	if err != nil {
		return nil, fmt.Errorf("read the rules file: %w", err)
	}
	return attention.Parse(cfg.Rules, data, attention.Options{Prices: cfg.prices != nil, ListenAddr: cfg.Addr, OTLPAddr: cfg.OTLPAddr})
}

// newAttention builds the attention service over the store: firings are
// notes, webhooks link to the session's page, cancel goes to this
// process's runner; on a PostgreSQL cluster a node evaluates only the
// sessions it runs.
func newAttention(cfg serveConfig, st store.Store, runner web.Runner, log *slog.Logger) *attend.Service {
	base := cfg.PublicURL
	if base == "" {
		base = "http://" + cfg.Addr
	}
	o := attend.Options{Store: st, Rules: cfg.rules, File: cfg.Rules, Log: log,
		SessionURL: func(id string) string { return base + views.SessionURL(id) }}
	if cfg.prices != nil {
		o.Cost = func(models []core.ModelUsage) float64 {
			by := make(map[string]core.TokenUsage, len(models))
			for _, m := range models {
				by[m.Model] = m.TokenUsage
			}
			usd, _ := cfg.prices.Sum(by)
			return usd
		}
	}
	if c, ok := runner.(attend.Canceller); ok {
		o.Cancel = c
	}
	if c, cluster := st.(backend.Cluster); cluster {
		// A live session is evaluated by the node that runs it (its
		// cancel works there); any other (imported, watched, idle) by
		// every node, a firing written once (notes.Input.Once) and its
		// actions run by the node that wrote it.
		o.Evaluates = func(id string) bool {
			if c.Holds(id) {
				return true
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			running, err := c.Running(ctx, id)
			return err == nil && !running
		}
	}
	return attend.New(o)
}

// reloadOnHUP reads the rules file again on each SIGHUP; a file that
// does not load leaves the old rules in force (the error is logged and
// shown on /rules); after, when set, hears each reload's error. The
// returned func stops listening.
func reloadOnHUP(cfg serveConfig, svc *attend.Service, after func(error)) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-ch:
				rules, err := loadRules(cfg)
				svc.Reload(rules, err)
				if after != nil {
					after(err)
				}
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
