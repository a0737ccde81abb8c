// Package mcp registers the tools of Model Context Protocol servers as prism
// tools, with the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// Each tool a server lists becomes a raw core tool named
// mcp__<server>__<tool> (dsh's naming): its input schema goes to the model
// as is and the server owns argument validation; the canonical value is
// dsh's {content, structuredContent?}; content blocks map to model content
// (text as text, resource links and embedded resources as text, images as
// image references added by finalizeContent); an isError result is a
// failure whose text is the server's; a crashed, unreachable or hung server
// is a clear tool failure and the next call reconnects. Images the server
// sent are kept as small, bounded thumbnails in the result's meta and
// presented by the image card.
//
// The package imports core and the SDK; core never imports it.
package mcp

import (
	"bufio"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Config is one MCP server: a command run over stdio, or a streamable HTTP
// endpoint.
type Config struct {
	// Name is the server's name in tool names (mcp__<name>__<tool>).
	Name string
	// Command is the program and its arguments, run without a shell.
	Command []string
	// URL is a streamable HTTP endpoint (http:// or https://); set instead
	// of Command.
	URL string
}

// String returns the specification the config was parsed from, roughly.
func (c Config) String() string {
	if c.URL != "" {
		return c.Name + "=" + c.URL
	}
	return c.Name + "=" + strings.Join(c.Command, " ")
}

var serverName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]|_[A-Za-z0-9-])*$`)

// ParseSpec parses one --mcp value: NAME=COMMAND ARG… (the command split
// into words as a POSIX shell would — quotes, backslashes and comments
// honoured, nothing expanded — but never run through a shell) or
// NAME=http(s)://… for a streamable HTTP server. NAME is letters, digits, '-' and single '_' (no "__", which
// separates the parts of a tool name).
func ParseSpec(spec string) (Config, error) {
	name, rest, ok := strings.Cut(spec, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return Config{}, fmt.Errorf("mcp server %q: want NAME=COMMAND ARG… or NAME=https://…", spec)
	}
	if !serverName.MatchString(name) {
		return Config{}, fmt.Errorf("mcp server %q: the name must be letters, digits, '-' and single '_' (no \"__\")", name)
	}
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, "https://") || strings.HasPrefix(rest, "http://") {
		u, err := url.Parse(rest)
		if err != nil || u.Host == "" || strings.ContainsAny(rest, " \t\r\n") {
			return Config{}, fmt.Errorf("mcp server %q: %q is not a valid URL", name, rest)
		}
		return Config{Name: name, URL: u.String()}, nil
	}
	words, err := splitWords(rest)
	if err != nil {
		return Config{}, fmt.Errorf("mcp server %q: command %q: %v", name, rest, err)
	}
	if len(words) == 0 || words[0] == "" {
		return Config{}, fmt.Errorf("mcp server %q: no command", name)
	}
	return Config{Name: name, Command: words}, nil
}

// ParseSpecs parses several specifications — the --mcp flags, then the
// lines of PRISM_MCP (one per line; blank lines and lines starting with #
// are skipped) — and refuses a name given twice.
func ParseSpecs(flags []string, env string) ([]Config, error) {
	specs := append([]string(nil), flags...)
	sc := bufio.NewScanner(strings.NewReader(env))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		specs = append(specs, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("PRISM_MCP: %w", err)
	}
	var out []Config
	seen := map[string]bool{}
	for _, s := range specs {
		c, err := ParseSpec(s)
		if err != nil {
			return nil, err
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("mcp server %q is configured twice", c.Name)
		}
		seen[c.Name] = true
		out = append(out, c)
	}
	return out, nil
}
