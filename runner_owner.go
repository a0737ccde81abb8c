package main

import "prism/web"

var _ web.SessionOwner = webRunner{}

// Owns implements web.SessionOwner: the runner takes follow-up messages
// for, and cancels turns of, only the sessions it started in this process —
// not imported or watched ones, nor those of a previous run.
func (w webRunner) Owns(id string) bool {
	_, err := w.r.Status(id)
	return err == nil
}
