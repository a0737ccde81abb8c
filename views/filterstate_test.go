package views

import "testing"

// TestFilterState: the filter bar's four states cover every card state; a
// call waiting for a person's approval is pending, a stopped or repaired
// call interrupted.
func TestFilterState(t *testing.T) {
	for _, tc := range []struct {
		state, outcome, want string
	}{
		{StatePending, "", filterPending},
		{StateAwaiting, "", filterPending},
		{StateRunning, "", filterPending},
		{StateOK, "", filterOK},
		{StateError, "", filterError},
		{StateStopped, "", filterInterrupted},
		{StateError, "outcome-unknown", filterInterrupted},
	} {
		v := &CardView{State: tc.state, Outcome: tc.outcome}
		if got := v.FilterState(); got != tc.want {
			t.Errorf("state %q outcome %q: %q, want %q", tc.state, tc.outcome, got, tc.want)
		}
	}
}
