package core

import "strings"

// SourceInfo is what a session's source is — the agent and CLI that wrote
// the file it was read from, where and on which branch, the file itself —
// recorded beside the session header, never in it (dsh's header keys are
// fixed), alongside the session's source (live, import, watch).
type SourceInfo struct {
	// Kind is the source format: "claude-code", "codex".
	Kind string `json:"kind"`
	// Version is the CLI version that wrote the file.
	Version string `json:"version,omitempty"`
	// Cwd is the agent's working directory; GitBranch its git branch.
	Cwd       string `json:"cwd,omitempty"`
	GitBranch string `json:"gitBranch,omitempty"`
	// File is the path the session was read from.
	File string `json:"file,omitempty"`
	// Title is the title the source gave the session (Claude Code's
	// custom-title or ai-title lines), "" when it gave none.
	Title string `json:"title,omitempty"`
	// MissingParent names the parent session of a child whose parent's
	// transcript is gone: the child is imported top-level, and says so.
	MissingParent string `json:"missingParent,omitempty"`
	// ForkedFrom names the session a fork was made from (Codex's
	// forked_from_id).
	ForkedFrom string `json:"forkedFrom,omitempty"`
	// SpawnedBy is, for a child session, the parent's call that spawned
	// it, as far as the source says: what the link note on that call
	// records.
	SpawnedBy *Spawn `json:"spawnedBy,omitempty"`
}

// Spawn is the call of a parent session that spawned a child.
type Spawn struct {
	CallID string `json:"callId"`
	// Background: the call returned at once and the child went on after
	// it (Claude Code's async_launched).
	Background bool `json:"background,omitempty"`
	// Inferred: matched by the prompt's text, not named by the source.
	Inferred bool `json:"inferred,omitempty"`
}

// Agent names the kind for people: "Claude Code", "Codex".
func (s SourceInfo) Agent() string {
	switch s.Kind {
	case "claude-code":
		return "Claude Code"
	case "codex":
		return "Codex"
	}
	return s.Kind
}

// Line is the short line the session header shows: the agent and its
// version, the working directory (home shortened to ~ when home is given),
// the branch — "Claude Code 2.1.3 · ~/src/app · main".
func (s SourceInfo) Line(home string) string {
	var parts []string
	a := s.Agent()
	if s.Version != "" {
		a += " " + s.Version
	}
	parts = append(parts, a)
	if s.Cwd != "" {
		cwd := s.Cwd
		if home != "" && (cwd == home || strings.HasPrefix(cwd, home+"/")) {
			cwd = "~" + cwd[len(home):]
		}
		parts = append(parts, cwd)
	}
	if s.GitBranch != "" {
		parts = append(parts, s.GitBranch)
	}
	return strings.Join(parts, " · ")
}
