package backend

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"prism/core"
)

// SenderStat is what the trace receiver saw of one OTLP sender (a
// resource's service.name) since this server started: spans accepted and
// stored, spans rejected (partial_success), and when it last sent.
type SenderStat struct {
	Service  string    `json:"service"` // "" for a resource without service.name
	Received int64     `json:"received"`
	Rejected int64     `json:"rejected"`
	LastSeen time.Time `json:"lastSeen"`
	// LastRejection is why the latest rejected span was ("" when none).
	LastRejection string `json:"lastRejection,omitempty"`
}

var _ core.SourceReporter = (*SenderStats)(nil)

// SourceHealth implements core.SourceReporter: a row per sender, kind
// "otlp", its feed naming the endpoint, the sender and the spans it sent
// and that were stored; rejected spans are its skipped records.
func (s *SenderStats) SourceHealth() []core.SourceHealth {
	var out []core.SourceHealth
	for _, st := range s.Snapshot() {
		name := st.Service
		if name == "" {
			name = "(no service.name)"
		}
		out = append(out, core.SourceHealth{
			Feed:     fmt.Sprintf("OTLP /v1/traces · %s · %d spans received", name, st.Received),
			Kind:     "otlp",
			LastRead: st.LastSeen, Skipped: int(st.Rejected), SkippedWhy: st.LastRejection,
		})
	}
	return out
}

// SenderStats counts spans per OTLP sender for the source-health view.
// Traces records into it; Snapshot reads it. The zero value is ready to
// use; it is safe for concurrent use. Counts live in memory: they restart
// with the server and are this node's only.
type SenderStats struct {
	mu sync.Mutex
	by map[string]*SenderStat
}

// maxSenders bounds the senders SenderStats keeps (service.name is chosen
// by the sender): past it, new names are counted under "(other)".
const maxSenders = 1000

// record adds one export's accepted and rejected spans of service (why:
// the reason of its latest rejected one).
func (s *SenderStats) record(service string, received, rejected int, why string, at time.Time) {
	if s == nil || received == 0 && rejected == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[string]*SenderStat{}
	}
	st := s.by[service]
	if st == nil {
		if len(s.by) >= maxSenders {
			service = "(other)"
			st = s.by[service]
		}
		if st == nil {
			st = &SenderStat{Service: service}
			s.by[service] = st
		}
	}
	st.Received += int64(received)
	st.Rejected += int64(rejected)
	if why != "" {
		st.LastRejection = why
	}
	if at.After(st.LastSeen) {
		st.LastSeen = at
	}
}

// Snapshot returns a copy of every sender's counts, the most recently seen
// first (ties by service name).
func (s *SenderStats) Snapshot() []SenderStat {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	out := make([]SenderStat, 0, len(s.by))
	for _, st := range s.by {
		out = append(out, *st)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastSeen.Equal(out[j].LastSeen) {
			return out[i].LastSeen.After(out[j].LastSeen)
		}
		return out[i].Service < out[j].Service
	})
	return out
}
