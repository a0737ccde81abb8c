package model

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// demoFiles is the workspace the demo script works in.
//
//go:embed all:demo/_workspace
var demoFiles embed.FS

const demoRoot = "demo/_workspace"

// DemoModelName is the catalog name of the scripted demo model.
const DemoModelName = "scripted"

// DemoChild is the description of the demo's one subagent call: the
// label of the child session it starts.
const DemoChild = "Check the greeting's test"

// demoChildScript is what the demo's subagent plays: one read of the test
// (edited by then), one answer.
func demoChildScript() Script {
	return Script{Steps: []Step{
		{Text: "Let me read the test.", Calls: []ScriptCall{{Name: "read", Arguments: `{"file_path":"greet/greet_test.go"}`}}},
		{Text: "`TestHello` expects `Hello(\"\")` to return `\"Ahoy, sailor! Welcome aboard.\"`: the test agrees with the new greeting."},
	}}
}

// DemoPrompt is the prompt the demo session starts with: what DemoScript
// answers (its narration and summary speak to it).
const DemoPrompt = "Show me around this workspace: its files, loose ends, a small fix, and failures."

// SeedDemoWorkspace writes the demo workspace's files into dir (created if
// needed). It refuses to overwrite an existing file, so it never clobbers a
// real project.
func SeedDemoWorkspace(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("seed demo workspace: %w", err)
	}
	return fs.WalkDir(demoFiles, demoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(demoRoot, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if d.IsDir() {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return fmt.Errorf("seed demo workspace: %w", err)
			}
			return nil
		}
		data, err := demoFiles.ReadFile(p)
		if err != nil {
			return fmt.Errorf("seed demo workspace: %w", err)
		}
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("seed demo workspace: %w", err)
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return fmt.Errorf("seed demo workspace: %w", err)
		}
		return f.Close()
	})
}

// NewDemo returns the scripted demo model: a fresh player of DemoScript
// with the given pacing (DemoPacing for a live demo, Pacing{} in tests).
// Its script expects the workspace SeedWorkspace prepares.
func NewDemo(p Pacing) *Demo {
	return &Demo{Scripted: NewScripted(ScriptedConfig{Script: DemoScript(), Pacing: p, Provider: "scripted", Model: "demo"})}
}

// DemoScript returns the built-in demo: one turn that exercises every card
// kind and every failure class a newcomer should see move, in the seeded
// workspace —
//
//  1. note (a structured value; the card shows the content the model read);
//  2. glob and grep, a parallel batch (search cards: paths and matches);
//  3. three reads, a parallel batch (read cards, one with a line window);
//  4. write creating CHANGELOG.md (diff card of a new file);
//  5. two edits, greet.go and its test (diff cards with real hunks);
//  6. bash exiting 0 and bash exiting 1 (terminal cards) — or, with bash
//     disabled, the UNKNOWN_TOOL path;
//  7. the failure classes: invalid JSON arguments (INVALID_ARGS), an
//     unknown tool (UNKNOWN_TOOL), a schema violation (INVALID_ARGS) and a
//     tool error (a missing file);
//  8. subagent: a child session of its own reads the greeting's test and
//     answers in one line (the card nests the child's cards; DemoChild);
//  9. a final summary (markdown), every claim of which the page shows
//     (web's TestDemo_SummaryHolds checks them).
func DemoScript() Script {
	return Script{Children: map[string]Script{DemoChild: demoChildScript()}, Steps: []Step{
		{
			Reasoning: "The user wants a tour of the workspace: what is in it, its loose ends, a small fix, and what failures look like. I'll note a plan first, then use each tool in turn.",
			Text:      "Hi! I'm prism's **scripted demo model**. Nothing here talks to a real LLM: every step is scripted, but every tool call runs for real in a fresh copy of a small Go package. Let me note a plan first.",
			Calls: []ScriptCall{
				{Name: "note", Arguments: `{"title":"Tour of the lighthouse workspace"}`},
			},
		},
		{
			Text: "Now let me see what is in the workspace and where the loose ends are: two searches at once.",
			Calls: []ScriptCall{
				{Name: "glob", Arguments: `{"pattern":"**/*"}`},
				{Name: "grep", Arguments: `{"pattern":"TODO"}`},
			},
		},
		{
			Text: "Three reads in parallel: the README, the greeting (lines 6 to 12) and the ideas file.",
			Calls: []ScriptCall{
				{Name: "read", Arguments: `{"file_path":"README.md"}`},
				{Name: "read", Arguments: `{"file_path":"greet/greet.go","offset":6,"limit":7}`},
				{Name: "read", Arguments: `{"file_path":"docs/ideas.md"}`},
			},
		},
		{
			Reasoning: "The README asks for a changelog, and greet.go has a TODO about the greeting. Create the changelog, then make the greeting friendlier and keep its test in step.",
			Text:      "The README asks for a changelog, so I'll create one.",
			Calls: []ScriptCall{
				{Name: "write", Arguments: `{"file_path":"CHANGELOG.md","content":"# Changelog\n\n## Unreleased\n\n- A friendlier greeting: \"Ahoy, sailor! Welcome aboard.\"\n"}`},
			},
		},
		{
			Text: "Now the greeting itself, and its test so the two agree.",
			Calls: []ScriptCall{
				{Name: "edit", Arguments: `{"file_path":"greet/greet.go","old_string":"\t// TODO: localize the greeting.\n\treturn fmt.Sprintf(\"Hello, %s!\", name)","new_string":"\treturn fmt.Sprintf(\"Ahoy, %s! Welcome aboard.\", name)"}`},
				{Name: "edit", Arguments: `{"file_path":"greet/greet_test.go","old_string":"\"Hello, sailor!\"","new_string":"\"Ahoy, sailor! Welcome aboard.\""}`},
			},
		},
		{
			Text: "Let me check the result from the shell: one command that succeeds and one that exits non-zero (there is no farewell function yet). If bash is disabled on this server, you'll see how an unavailable tool fails instead.",
			Calls: []ScriptCall{
				{Name: "bash", Arguments: `{"command":"ls -R && grep -n Ahoy greet/*.go","description":"List the workspace and find the new greeting"}`},
				{Name: "bash", Arguments: `{"command":"grep -n farewell greet/*.go","description":"Look for a farewell function"}`},
			},
		},
		{
			Reasoning: "Finally, show each failure class the tool core reports, so the cards for failures are familiar too.",
			Text:      "Finally, a few deliberate mistakes, so you can see how failures look: truncated JSON arguments, a tool that does not exist, arguments that break the schema, and a file that is not there.",
			Calls: []ScriptCall{
				{Name: "read", Arguments: `{"file_path": "README.md"`},
				{Name: "web_search", Arguments: `{"query":"how do lighthouses work"}`},
				{Name: "read", Arguments: `{"file_path":42}`},
				{Name: "read", Arguments: `{"file_path":"docs/missing.md"}`},
			},
		},
		{
			Text: "Last, I'll hand a small job to a **subagent**: a helper agent in a session of its own, in this same workspace. Its card shows the helper's calls as it works, and its answer comes back as the result.",
			Calls: []ScriptCall{
				{Name: "subagent", Arguments: `{"description":"` + DemoChild + `","prompt":"Read greet/greet_test.go and say in one line what the test expects."}`},
			},
		},
		{
			Text: "That's the tour. Here is what happened:\n\n" +
				"| step | tools | what you saw |\n" +
				"|---|---|---|\n" +
				"| plan | `note` | a note card: the title and the text the model read back |\n" +
				"| explore | `glob`, `grep` | two searches running in parallel |\n" +
				"| read | `read` ×3 | line-numbered files, one read as a window of lines |\n" +
				"| change | `write`, `edit` ×2 | a new `CHANGELOG.md` and two diffs |\n" +
				"| verify | `bash` ×2 | a command that succeeds and one that exits with code 1 (or, with bash switched off, two `UNKNOWN_TOOL` failures) |\n" +
				"| fail | four calls | `INVALID_ARGS` twice, `UNKNOWN_TOOL`, and a tool error (`FS_NOT_FOUND`) |\n" +
				"| delegate | `subagent` | a child session that read the test and answered in one line |\n\n" +
				"The greeting is now:\n\n" +
				"```go\nreturn fmt.Sprintf(\"Ahoy, %s! Welcome aboard.\", name)\n```\n\n" +
				"Every card on this page is drawn from the session's durable log: reload the page and the same cards come back. " +
				"Send a follow-up message to see the scripted model answer once more, or configure an API key to talk to a real model.",
		},
	}}
}
