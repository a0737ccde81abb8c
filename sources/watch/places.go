package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The names of the default places a --watch value may give instead of a
// folder (a folder of that name is given as ./claude or ./codex).
const (
	PlaceClaude = "claude" // Claude Code's projects: ~/.claude/projects, honouring CLAUDE_CONFIG_DIR
	PlaceCodex  = "codex"  // Codex CLI's sessions: ~/.codex/sessions, honouring CODEX_HOME
)

// Resolve returns the folders a --watch value names: the default place of
// claude or codex (ClaudeProjectsDirs may give several), else the value
// itself as a path.
func Resolve(arg string) ([]string, error) {
	switch arg {
	case PlaceClaude:
		return ClaudeProjectsDirs()
	case PlaceCodex:
		d, err := CodexSessionsDir()
		return []string{d}, err
	}
	return []string{arg}, nil
}

// ClaudeProjectsDirs returns Claude Code's projects folders: each root
// CLAUDE_CONFIG_DIR lists (separated by commas or the OS path-list
// separator) + /projects, else ~/.claude/projects.
func ClaudeProjectsDirs() ([]string, error) {
	if env := os.Getenv("CLAUDE_CONFIG_DIR"); strings.TrimSpace(env) != "" {
		var dirs []string
		for _, r := range strings.FieldsFunc(env, func(r rune) bool { return r == ',' || r == os.PathListSeparator }) {
			if r = strings.TrimSpace(r); r != "" {
				dirs = append(dirs, filepath.Join(r, "projects"))
			}
		}
		return dirs, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("locate Claude Code's projects: %w", err)
	}
	return []string{filepath.Join(home, ".claude", "projects")}, nil
}

// CodexSessionsDir returns $CODEX_HOME/sessions, else ~/.codex/sessions.
func CodexSessionsDir() (string, error) {
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return filepath.Join(h, "sessions"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("locate Codex's sessions: %w", err)
	}
	return filepath.Join(home, ".codex", "sessions"), nil
}

// Detected returns the --watch values of the default places that exist on
// this machine (claude, codex), for the list page's hint to a newcomer;
// nothing is read from them.
func Detected() []Place {
	var out []Place
	if dirs, err := ClaudeProjectsDirs(); err == nil {
		for _, d := range dirs {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				out = append(out, Place{Name: PlaceClaude, Dir: d, Label: "Claude Code"})
				break
			}
		}
	}
	if d, err := CodexSessionsDir(); err == nil {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, Place{Name: PlaceCodex, Dir: d, Label: "Codex"})
		}
	}
	return out
}

// Place is a default place found on this machine.
type Place struct {
	Name  string // the --watch value: claude, codex
	Dir   string
	Label string // the agent: Claude Code, Codex
}
