package web

// LiveStats is what the live path has done so far (liveStats), for tests
// and benchmarks that hold it to a count.
type LiveStats struct {
	// Folded counts events folded by hubs; Redacted those redacted by
	// share links' hubs.
	Folded, Redacted int64
	// Frames counts frames the hubs rendered; CatchUps catch-up frames.
	Frames, CatchUps int64
	// Dropped counts subscribers that passed their queue's byte bound.
	Dropped int64
	// Hubs is the number of hubs open now.
	Hubs int
}

// LiveStats returns the server's live path counters.
func (s *Server) LiveStats() LiveStats {
	st := &s.broker.stats
	s.broker.mu.Lock()
	hubs := len(s.broker.hubs)
	s.broker.mu.Unlock()
	return LiveStats{Folded: st.folded.Load(), Redacted: st.redacted.Load(), Frames: st.frames.Load(),
		CatchUps: st.catchUps.Load(), Dropped: st.dropped.Load(), Hubs: hubs}
}

// SharePagesRendered counts the share pages the server rendered (a page
// served from sharePages is not rendered again).
func (s *Server) SharePagesRendered() int64 { return s.broker.stats.pages.Load() }
