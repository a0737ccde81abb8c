package store

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"prism/core"
)

// SpanRecord is one received OpenTelemetry span as a store keeps it: its
// ids (hex), its own gen_ai.conversation.id ("" when it has none; the store
// finds a conversation's traces by it), the service.name that sent it, and
// its protobuf encoding. A store keeps one record per trace and span id:
// receiving the same span again changes nothing.
type SpanRecord struct {
	TraceID, SpanID string
	ConversationID  string
	Service         string
	Body            []byte
	// ReceivedAt is when it was received (epoch milliseconds), as a store
	// lists it for prism migrate; ReceiveSpans ignores it (now).
	ReceivedAt int64
}

// DerivedLog is one session derived from stored spans: its header, its
// whole log, and the traces (hex ids) whose spans it holds. A store
// remembers the sessions each trace was derived into, so the next batch of
// a trace derives once and still deletes the sessions it no longer gives.
type DerivedLog struct {
	Header core.SessionHeader
	Events []core.Event
	Traces []string
}

// SpanDeriver maps the stored spans of some traces (every span of each
// trace, and of every trace sharing a conversation id with them) to the
// sessions they make. It must be a pure function of the set of records:
// the store calls it once per batch on the spans it holds after it, and
// deletes a session that a trace of the batch was derived into before and
// that the new derivation does not give (a trace's session absorbed by its
// conversation's once a span naming the conversation arrived). For traces
// stored before the store kept that record, it also derives the spans it
// held before the batch.
type SpanDeriver func([]SpanRecord) ([]DerivedLog, error)

// SpanReceipt says what storing a batch of spans did.
type SpanReceipt struct {
	// Added is how many of the batch's spans were new (the rest were
	// stored already: an exporter's retry).
	Added int
	// Sessions are the sessions the batch changed, with their outcome
	// (ImportCreated, ImportExtended, ImportReplaced; ImportUnchanged is
	// left out), in the order they were written.
	Sessions []ImportResult
	// Removed are the sessions the batch made obsolete and deleted.
	Removed []string
}

// DerivedBefore returns, sorted, the ids of the sessions a batch's traces
// were derived into before the batch: records are the engine's
// otel_sessions rows of those traces as "TRACE SESSION"; all are the
// traces' stored spans and added those the batch added. When some trace
// that had spans before the batch has no record (stored before the table
// existed), the sessions of deriving the spans held before the batch are
// added. Both engines call it after their own query.
func DerivedBefore(records []string, all []SpanRecord, added map[[2]string]bool, derive SpanDeriver) ([]string, error) {
	ids := map[string]bool{}
	recorded := map[string]bool{}
	for _, r := range records {
		tr, id, _ := strings.Cut(r, " ")
		recorded[tr], ids[id] = true, true
	}
	var before []SpanRecord
	legacy := false
	for _, r := range all {
		if !added[[2]string{r.TraceID, r.SpanID}] {
			before = append(before, r)
			legacy = legacy || !recorded[r.TraceID]
		}
	}
	if legacy {
		old, err := derive(before)
		if err != nil {
			return nil, fmt.Errorf("derive sessions from spans: %w", err)
		}
		for _, l := range old {
			ids[l.Header.ID] = true
		}
	}
	return slices.Sorted(maps.Keys(ids)), nil
}
