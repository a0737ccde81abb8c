package codex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"prism/core"
	"prism/sources/dsh"
)

// Child threads. A thread Codex spawned (spawn_agent) writes its own
// rollout, whose session_meta names its parent thread
// (source.subagent.thread_spawn.parent_thread_id, or the older top-level
// parent_thread_id) — the reliable link, since the parent's collab events
// are not always persisted. It becomes a child session (origin
// "subagent", parentSession the parent thread), linked to the parent's
// spawning call: the call whose output (or collab_tool_call event) names
// the child's id, else a spawn_agent call whose message is the child's
// first prompt (inferred). A child whose parent's rollout is not found
// beside it (under the same sessions tree) is a top-level session whose
// source info names the missing parent.

// asChild makes l, the rollout at path of a thread spawned by parent, a
// child session.
func asChild(l *dsh.Log, path, parent string) {
	pf := findRollout(path, parent)
	if pf == "" {
		l.Source.MissingParent = parent
		return
	}
	l.Header.ParentSession = parent
	l.Header.Origin = "subagent"
	l.Source.SpawnedBy = spawnOf(pf, l.Header.ID, l.FirstPrompt())
}

// findRollout looks for the rollout of session id in the sessions tree
// the rollout at path is in (<root>/YYYY/MM/DD/rollout-*.jsonl[.zst]), or
// beside it; "" when there is none.
func findRollout(path, id string) string {
	dir := filepath.Dir(path)
	root := filepath.Dir(filepath.Dir(filepath.Dir(dir)))
	for _, pattern := range []string{
		filepath.Join(dir, "rollout-*"+id+".jsonl"),
		filepath.Join(root, "*", "*", "*", "rollout-*"+id+".jsonl"),
	} {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

// spawnOf finds the parent's call that spawned child in the parent's
// rollout at path.
func spawnOf(path, child, prompt string) *core.Spawn {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var found, inferred *core.Spawn
	for sc.Scan() && found == nil {
		line := sc.Bytes()
		var env struct {
			Type    string `json:"type"`
			Payload struct {
				Type        string          `json:"type"`
				Name        string          `json:"name"`
				CallID      string          `json:"call_id"`
				Arguments   string          `json:"arguments"`
				Output      json.RawMessage `json:"output"`
				NewThreadID string          `json:"new_thread_id"`
			} `json:"payload"`
		}
		if !bytes.Contains(line, []byte(child)) && !bytes.Contains(line, []byte(`"spawn_agent"`)) {
			continue
		}
		if json.Unmarshal(line, &env) != nil {
			continue
		}
		p := env.Payload
		switch {
		case p.Type == "collab_tool_call" && p.NewThreadID == child && p.CallID != "":
			found = &core.Spawn{CallID: p.CallID}
		case p.Type == "function_call_output" && p.CallID != "":
			var s string
			if json.Unmarshal(p.Output, &s) != nil {
				s = string(p.Output)
			}
			var out struct {
				AgentID string `json:"agent_id"`
			}
			if json.Unmarshal([]byte(s), &out) == nil && out.AgentID == child {
				found = &core.Spawn{CallID: p.CallID}
			}
		case p.Type == "function_call" && p.Name == "spawn_agent" && inferred == nil && prompt != "":
			var args struct {
				Message string `json:"message"`
			}
			if json.Unmarshal([]byte(p.Arguments), &args) == nil && strings.TrimSpace(args.Message) == strings.TrimSpace(prompt) {
				inferred = &core.Spawn{CallID: p.CallID, Inferred: true}
			}
		}
	}
	if found != nil {
		return found
	}
	return inferred
}
