package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"prism/core"
	"prism/core/logkey"
	"prism/sources/otel"
)

// pushQueue bounds the turns waiting to be pushed; past it a turn is
// dropped (and logged), never waited for: the commit feed must not block.
const pushQueue = 1024

// pushTimeout bounds one upload, the SDK client's retries included.
const pushTimeout = 30 * time.Second

// SessionLoader loads a session's header and log (Source does).
type SessionLoader interface {
	LoadSession(ctx context.Context, id string) (core.SessionHeader, []core.Event, error)
}

// Pusher sends each committed turn of every session to an OTLP/HTTP
// collector as GenAI spans (otel.Export: the turn's trace), with the
// OpenTelemetry SDK's OTLP/HTTP protobuf client (its retries and backoff;
// OTEL_EXPORTER_OTLP_HEADERS and the other OTEL_EXPORTER_OTLP_* variables
// apply). Observe, the commit-feed function, only queues; Run uploads. A
// collector that is down delays or drops pushes, never the local log.
type Pusher struct {
	client otlptrace.Client
	load   SessionLoader
	log    *slog.Logger
	queue  chan pushJob
}

type pushJob struct {
	session string
	turn    int
}

// NewPusher returns a pusher to the collector's traces endpoint (a full
// URL, e.g. http://127.0.0.1:4318/v1/traces), loading sessions with load.
func NewPusher(endpoint string, load SessionLoader, log *slog.Logger) (*Pusher, error) {
	client := otlptracehttp.NewClient(otlptracehttp.WithEndpointURL(endpoint))
	if err := client.Start(context.Background()); err != nil {
		return nil, fmt.Errorf("otlp endpoint %s: %w", endpoint, err)
	}
	return &Pusher{client: client, load: load, log: log, queue: make(chan pushJob, pushQueue)}, nil
}

// Observe queues the turns that events end (a CommitFeed.OnCommit function).
func (p *Pusher) Observe(sessionID string, events []core.Event) {
	for i := range events {
		if events[i].Type != core.EventTurnEnd {
			continue
		}
		var d core.TurnEnd
		if err := json.Unmarshal(events[i].Data, &d); err != nil {
			continue
		}
		select {
		case p.queue <- pushJob{session: sessionID, turn: d.Turn}:
		default:
			p.log.Warn("otlp push queue full: a turn is not pushed", logkey.SessionID, sessionID)
		}
	}
}

// Run uploads queued turns until ctx ends, then stops the client.
func (p *Pusher) Run(ctx context.Context) {
	defer func() {
		stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.client.Stop(stop)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-p.queue:
			if err := p.push(ctx, j); err != nil {
				p.log.Warn("otlp push failed", logkey.SessionID, j.session, logkey.Err, err)
			}
		}
	}
}

func (p *Pusher) push(ctx context.Context, j pushJob) error {
	h, events, err := p.load.LoadSession(ctx, j.session)
	if err != nil {
		return err
	}
	req, err := otel.Export(h, events)
	if err != nil {
		return err
	}
	trace := otel.TurnTraceID(j.session, j.turn)
	var out []*tracepb.ResourceSpans
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			var keep []*tracepb.Span
			for _, s := range ss.Spans {
				if string(s.TraceId) == string(trace) {
					keep = append(keep, s)
				}
			}
			ss.Spans = keep
		}
		out = append(out, rs)
	}
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	return p.client.UploadTraces(ctx, out)
}
