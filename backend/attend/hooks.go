package attend

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"prism/core/attention"
	"prism/core/logkey"
)

// Payload is the JSON body of a webhook POST: one firing.
type Payload struct {
	ID      string `json:"id"`
	Rule    string `json:"rule"`
	Reason  string `json:"reason"`
	Session string `json:"session"`
	CallID  string `json:"callId,omitempty"`
	Seq     int64  `json:"seq"`
	URL     string `json:"url"`
}

// Delivery is one webhook's outcome, as /rules lists it.
type Delivery struct {
	ID       string    `json:"id"`
	Rule     string    `json:"rule"`
	Session  string    `json:"session"`
	Attempts int       `json:"attempts"`
	Status   int       `json:"status,omitempty"` // the last HTTP status (0: none)
	OK       bool      `json:"ok"`
	Error    string    `json:"error,omitempty"`
	At       time.Time `json:"at"`
}

// Sign returns the X-Prism-Signature value of body: "sha256=" and the hex
// HMAC-SHA256 of the body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Hooks delivers webhook POSTs from a bounded queue: Enqueue never waits
// (a full queue drops its oldest delivery and counts it), one goroutine
// (Run) posts each with a timeout, retrying with backoff, then gives up
// and records it.
type Hooks struct {
	cfg     attention.Webhook
	client  *http.Client
	log     *slog.Logger
	now     func() time.Time
	backoff time.Duration
	max     int

	mu      sync.Mutex
	queue   []Payload
	wake    chan struct{}
	recent  []Delivery // the newest last, at most keepDeliveries
	dropped atomic.Int64
}

// keepDeliveries is how many deliveries /rules shows.
const keepDeliveries = 50

// HookOptions tune Hooks (zero values: the defaults).
type HookOptions struct {
	// Queue bounds the deliveries waiting (default 1000).
	Queue int
	// Backoff is the wait before the first retry, doubled for each next
	// one (default 1s).
	Backoff time.Duration
	Now     func() time.Time
	Client  *http.Client
}

// NewHooks returns a deliverer to cfg's URL.
func NewHooks(cfg attention.Webhook, log *slog.Logger, o HookOptions) *Hooks {
	h := &Hooks{cfg: cfg, log: log, now: o.Now, backoff: o.Backoff, max: o.Queue, client: o.Client, wake: make(chan struct{}, 1)}
	if h.now == nil {
		h.now = time.Now
	}
	if h.backoff <= 0 {
		h.backoff = time.Second
	}
	if h.max <= 0 {
		h.max = 1000
	}
	if h.client == nil {
		h.client = &http.Client{}
	}
	return h
}

// URL returns where the hooks post (never the secret).
func (h *Hooks) URL() string { return h.cfg.URL }

// Dropped returns how many deliveries a full queue dropped.
func (h *Hooks) Dropped() int64 { return h.dropped.Load() }

// Recent returns the latest deliveries, newest first.
func (h *Hooks) Recent() []Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Delivery, len(h.recent))
	for i, d := range h.recent {
		out[len(out)-1-i] = d
	}
	return out
}

// Queued returns how many deliveries wait.
func (h *Hooks) Queued() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queue)
}

// Enqueue queues a delivery without waiting: past the bound the oldest
// waiting one is dropped (and counted).
func (h *Hooks) Enqueue(p Payload) {
	h.mu.Lock()
	if len(h.queue) >= h.max {
		h.queue = h.queue[1:]
		h.dropped.Add(1)
	}
	h.queue = append(h.queue, p)
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func (h *Hooks) next() (Payload, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.queue) == 0 {
		return Payload{}, false
	}
	p := h.queue[0]
	h.queue = h.queue[1:]
	return p, true
}

// Run delivers queued firings until ctx is done.
func (h *Hooks) Run(ctx context.Context) {
	for {
		p, ok := h.next()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-h.wake:
				continue
			}
		}
		d := h.deliver(ctx, p)
		h.mu.Lock()
		h.recent = append(h.recent, d)
		if len(h.recent) > keepDeliveries {
			h.recent = h.recent[len(h.recent)-keepDeliveries:]
		}
		h.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
	}
}

// deliver posts one firing, retrying a failure (a network error, a
// timeout, a status other than 2xx) cfg.Retries times with backoff.
func (h *Hooks) deliver(ctx context.Context, p Payload) Delivery {
	body, err := json.Marshal(p)
	d := Delivery{ID: p.ID, Rule: p.Rule, Session: p.Session}
	if err != nil {
		d.Error, d.At = "encode: "+err.Error(), h.now()
		return d
	}
	wait := h.backoff
	for attempt := 0; attempt <= h.cfg.Retries; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				d.Error = "stopped: " + ctx.Err().Error()
				d.At = h.now()
				return d
			case <-t.C:
			}
			wait *= 2
		}
		d.Attempts++
		status, err := h.post(ctx, p.ID, body)
		d.Status = status
		if err == nil {
			d.OK, d.Error, d.At = true, "", h.now()
			return d
		}
		d.Error = err.Error()
		h.log.Warn("webhook delivery failed", logkey.URL, h.cfg.URL, logkey.NoteID, p.ID, logkey.Attempt, d.Attempts, logkey.Err, err)
	}
	d.Error = fmt.Sprintf("gave up after %d attempts: %s", d.Attempts, d.Error)
	d.At = h.now()
	h.log.Error("webhook delivery given up", logkey.URL, h.cfg.URL, logkey.NoteID, p.ID, logkey.Err, d.Error)
	return d
}

func (h *Hooks) post(ctx context.Context, id string, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "prism-attention")
	req.Header.Set("X-Prism-Delivery", id)
	req.Header.Set("X-Prism-Signature", Sign(h.cfg.Secret, body))
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post to webhook: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("webhook answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}
