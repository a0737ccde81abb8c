package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"

	"prism/core"
	"prism/sources/dsh"
)

// sidechains collects a main transcript's inline subagent lines (the
// 1.0.x layout: isSidechain lines in the main file) and what the main
// lines say of their spawning calls, to make each sidechain a child
// session: grouped by agentId when the lines have one, else by their
// parentUuid chain from a root (parentUuid null).
type sidechains struct {
	groups []*sideGroup
	byKey  map[string]*sideGroup // agentId or a uuid of the group → group
	spawns map[string]core.Spawn // agentId → the call whose result names it
	calls  []taskCall            // the Task/Agent calls of the main lines, in order
	// mem is about the bytes the sidechain lines kept raw hold.
	mem int64
}

// lineOverhead is what one kept raw line costs beyond its bytes (its
// slice and its number).
const lineOverhead = 32

type sideGroup struct {
	key   string
	lines [][]byte
	nums  []int
}

type taskCall struct{ id, prompt string }

func newSidechains() *sidechains {
	return &sidechains{byKey: map[string]*sideGroup{}, spawns: map[string]core.Spawn{}}
}

// line looks at main transcript line n.
func (s *sidechains) line(n int, line []byte) {
	if bytes.Contains(line, []byte(`"isSidechain":true`)) {
		var r struct {
			IsSidechain bool            `json:"isSidechain"`
			AgentID     string          `json:"agentId"`
			UUID        string          `json:"uuid"`
			ParentUUID  json.RawMessage `json:"parentUuid"`
		}
		if json.Unmarshal(line, &r) != nil || !r.IsSidechain {
			return
		}
		var g *sideGroup
		switch {
		case r.AgentID != "":
			g = s.byKey[r.AgentID]
			if g == nil {
				g = &sideGroup{key: r.AgentID}
				s.byKey[r.AgentID] = g
				s.groups = append(s.groups, g)
			}
		case parentOf(r.ParentUUID) != "" && s.byKey[parentOf(r.ParentUUID)] != nil:
			g = s.byKey[parentOf(r.ParentUUID)]
		case string(r.ParentUUID) == "null" || len(s.groups) == 0: // a root
			g = &sideGroup{key: fmt.Sprintf("inline-%d", len(s.groups)+1)}
			s.groups = append(s.groups, g)
		default:
			g = s.groups[len(s.groups)-1]
		}
		if r.UUID != "" {
			s.byKey[r.UUID] = g
		}
		g.lines = append(g.lines, append([]byte(nil), line...))
		s.mem += int64(len(line)) + lineOverhead
		g.nums = append(g.nums, n)
		return
	}
	if bytes.Contains(line, []byte(`"agentId"`)) && bytes.Contains(line, []byte(`"tool_result"`)) {
		var r struct {
			Message struct {
				Content []struct {
					Type      string `json:"type"`
					ToolUseID string `json:"tool_use_id"`
				} `json:"content"`
			} `json:"message"`
			ToolUseResult struct {
				AgentID string `json:"agentId"`
				Status  string `json:"status"`
			} `json:"toolUseResult"`
		}
		if json.Unmarshal(line, &r) == nil && r.ToolUseResult.AgentID != "" {
			for _, b := range r.Message.Content {
				if b.Type == "tool_result" && b.ToolUseID != "" {
					s.spawns[r.ToolUseResult.AgentID] = core.Spawn{CallID: b.ToolUseID, Background: r.ToolUseResult.Status == "async_launched"}
					break
				}
			}
		}
	}
}

// parentOf is a parentUuid's value ("" when null or absent).
func parentOf(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// noteCalls takes the Task/Agent calls of the main log's events.
func (s *sidechains) noteCalls(events []core.Event) {
	for _, e := range events {
		if e.Type != core.EventToolCall {
			continue
		}
		var c core.ToolCall
		if json.Unmarshal(e.Data, &c) != nil || (c.Name != "Task" && c.Name != "Agent") {
			continue
		}
		var in struct {
			Prompt string `json:"prompt"`
		}
		_ = json.Unmarshal([]byte(c.Arguments), &in)
		s.calls = append(s.calls, taskCall{id: c.CallID, prompt: in.Prompt})
	}
}

// logs decodes each sidechain as a child session of the main session sid.
// A sidechain linked to no call (no result names its agentId, no prompt
// matches) makes none: its lines stay kept raw in the main log.
func (s *sidechains) logs(sid string, file string) []*dsh.Log {
	var out []*dsh.Log
	for _, g := range s.groups {
		d := NewDecoder()
		d.sidechain = true
		l := &dsh.Log{}
		for i, line := range g.lines {
			before := len(d.events)
			if err := d.Line(g.nums[i], line); err != nil {
				l.Notes = append(l.Notes, err.Error()+" (kept raw)")
			}
			for range d.events[before:] {
				l.Pos = append(l.Pos, dsh.Position{Frame: -1, Line: g.nums[i]})
			}
		}
		before := len(d.events)
		d.Flush()
		for range d.events[before:] {
			l.Pos = append(l.Pos, dsh.Position{Frame: -1, Line: g.nums[len(g.nums)-1]})
		}
		h, ok := d.Header()
		if !ok {
			continue
		}
		h.ID = ChildID(sid, g.key)
		h.ParentSession, h.Origin = sid, "subagent"
		l.Header, l.Events = h, d.Events()
		info := d.Info()
		l.Source = &core.SourceInfo{Kind: Source, Version: info.Version, Cwd: info.Cwd, GitBranch: info.GitBranch, File: file}
		if sp, ok := s.spawns[g.key]; ok {
			l.Source.SpawnedBy = &sp
		} else if p := l.FirstPrompt(); p != "" {
			for _, c := range s.calls {
				if c.prompt == p {
					l.Source.SpawnedBy = &core.Spawn{CallID: c.id, Inferred: true}
					break
				}
			}
		}
		if l.Source.SpawnedBy != nil {
			out = append(out, l)
		}
	}
	return out
}
