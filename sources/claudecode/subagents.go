package claudecode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"prism/core"
	"prism/sources/dsh"
)

// Subagent transcripts. Claude Code writes a subagent's lines in a file of
// its own, in one of these layouts (their lines keep the parent's
// sessionId):
//
//   - <project>/<sessionId>/subagents/agent-<agentId>.jsonl, with a sidecar
//     agent-<agentId>.meta.json whose toolUseId names the spawning call
//     (workflow subagents one level deeper, under workflows/<id>/);
//   - the older <project>/agent-<agentId>.jsonl beside the session, linked
//     by the toolUseResult.agentId of the parent's Task/Agent result.
//
// Failing both links, the child's first prompt is matched to the prompt
// of a Task/Agent call of the parent, and the link is marked inferred.
// Each child is its own session: its id derived from its file
// (<sessionId>-agent-<agentId>), parentSession the session's id, origin
// "subagent". A child whose parent transcript is gone (Claude Code deletes
// old transcripts) is a top-level session whose source info names the
// missing parent.

// AgentID returns the agent id of a subagent transcript's file name
// (agent-<id>.jsonl), or "".
func AgentID(path string) string {
	base := filepath.Base(path)
	if !strings.HasPrefix(base, "agent-") || !strings.HasSuffix(base, ".jsonl") {
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(base, "agent-"), ".jsonl")
}

// ChildID is the session id of a subagent transcript of session sid.
func ChildID(sid, agentID string) string { return sid + "-agent-" + agentID }

// parentTranscript returns the main transcript of session sid for the
// subagent file at path.
func parentTranscript(path, sid string) string {
	dir := filepath.Dir(path)
	// <project>/<sid>/subagents[/workflows/<wf>]/agent-X.jsonl
	for d := dir; d != "." && d != string(filepath.Separator); d = filepath.Dir(d) {
		if filepath.Base(d) == sid {
			return filepath.Join(filepath.Dir(d), sid+".jsonl")
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return filepath.Join(dir, sid+".jsonl") // the older layout: beside it
}

// asChild makes l, decoded from the subagent file at path, a child
// session: its id, its parent (or the missing parent) and the call that
// spawned it.
func asChild(l *dsh.Log, path, agentID string) {
	sid := l.Header.ID
	l.Header.ID = ChildID(sid, agentID)
	parent := parentTranscript(path, sid)
	if _, err := os.Stat(parent); err != nil {
		l.Source.MissingParent = sid // top-level: no parentSession, no origin
		return
	}
	l.Header.ParentSession = sid
	l.Header.Origin = "subagent"
	l.Source.SpawnedBy = spawnOf(path, parent, agentID, l.FirstPrompt())
}

// spawnOf finds the parent's call that spawned the child: the sidecar's
// toolUseId, else the parent result whose toolUseResult.agentId is the
// child's, else a Task/Agent call whose prompt is the child's (inferred).
func spawnOf(path, parent, agentID, prompt string) *core.Spawn {
	var meta struct {
		ToolUseID string `json:"toolUseId"`
	}
	if b, err := os.ReadFile(strings.TrimSuffix(path, ".jsonl") + ".meta.json"); err == nil && json.Unmarshal(b, &meta) == nil && meta.ToolUseID != "" {
		sp := &core.Spawn{CallID: meta.ToolUseID}
		scanParent(parent, agentID, "", func(callID string, background bool) { sp.Background = background })
		return sp
	}
	var found *core.Spawn
	scanParent(parent, agentID, prompt, func(callID string, background bool) {
		if found == nil {
			found = &core.Spawn{CallID: callID, Background: background}
		}
	})
	if found != nil {
		return found
	}
	var inferred *core.Spawn
	if prompt != "" {
		scanPrompts(parent, func(callID, p string) {
			if inferred == nil && strings.TrimSpace(p) == strings.TrimSpace(prompt) {
				inferred = &core.Spawn{CallID: callID, Inferred: true}
			}
		})
	}
	return inferred
}

// scanParent calls found for each result line of the parent transcript
// whose toolUseResult names agentID.
func scanParent(parent, agentID, _ string, found func(callID string, background bool)) {
	needle := []byte(`"agentId":"` + agentID + `"`)
	eachLine(parent, func(line []byte) {
		if !bytes.Contains(line, needle) {
			return
		}
		var r struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
			ToolUseResult struct {
				AgentID string `json:"agentId"`
				Status  string `json:"status"`
			} `json:"toolUseResult"`
		}
		if json.Unmarshal(line, &r) != nil || r.ToolUseResult.AgentID != agentID {
			return
		}
		var blocks []struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
		}
		if json.Unmarshal(r.Message.Content, &blocks) != nil {
			return
		}
		for _, b := range blocks {
			if b.Type == "tool_result" && b.ToolUseID != "" {
				found(b.ToolUseID, r.ToolUseResult.Status == "async_launched")
				return
			}
		}
	})
}

// scanPrompts calls each for every Task/Agent call of the parent
// transcript, with its prompt.
func scanPrompts(parent string, each func(callID, prompt string)) {
	eachLine(parent, func(line []byte) {
		if !bytes.Contains(line, []byte(`"tool_use"`)) {
			return
		}
		var r struct {
			Message struct {
				Content []struct {
					Type  string `json:"type"`
					ID    string `json:"id"`
					Name  string `json:"name"`
					Input struct {
						Prompt string `json:"prompt"`
					} `json:"input"`
				} `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &r) != nil {
			return
		}
		for _, b := range r.Message.Content {
			if b.Type == "tool_use" && (b.Name == "Task" || b.Name == "Agent") {
				each(b.ID, b.Input.Prompt)
			}
		}
	})
}

// eachLine calls fn with each line of the file at path (nothing when it
// cannot be read).
func eachLine(path string, fn func(line []byte)) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
}

// subagentFiles lists the subagent transcripts of the main transcript at
// path (session sid): the current layout's, then the older layout's
// agent-*.jsonl beside it whose lines name sid.
func subagentFiles(path, sid string) []string {
	dir := filepath.Dir(path)
	var out []string
	for _, pattern := range []string{
		filepath.Join(dir, sid, "subagents", "agent-*.jsonl"),
		filepath.Join(dir, sid, "subagents", "workflows", "*", "agent-*.jsonl"),
	} {
		m, _ := filepath.Glob(pattern)
		out = append(out, m...)
	}
	older, _ := filepath.Glob(filepath.Join(dir, "agent-*.jsonl"))
	needle := []byte(`"sessionId":"` + sid + `"`)
	for _, p := range older {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		head := make([]byte, 64<<10)
		n, _ := f.Read(head)
		f.Close()
		if bytes.Contains(head[:n], needle) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// related is the Foreign's Related: a main transcript's subagent files.
func related(path string) []string {
	if AgentID(path) != "" {
		return nil
	}
	sid := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	return subagentFiles(path, sid)
}
