package mcp_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/mcp"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		spec string
		want mcp.Config
		err  string
	}{
		{`fs=npx -y "@modelcontextprotocol/server-filesystem" '/tmp/my dir'`, mcp.Config{Name: "fs", Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp/my dir"}}, ""},
		{`git=uvx mcp-server-git --repository a\ b`, mcp.Config{Name: "git", Command: []string{"uvx", "mcp-server-git", "--repository", "a b"}}, ""},
		{`x=echo "$HOME" ; rm -rf /`, mcp.Config{Name: "x", Command: []string{"echo", "$HOME", ";", "rm", "-rf", "/"}}, ""},
		{`docs=https://example.com/mcp`, mcp.Config{Name: "docs", URL: "https://example.com/mcp"}, ""},
		{`local=http://127.0.0.1:9000/mcp`, mcp.Config{Name: "local", URL: "http://127.0.0.1:9000/mcp"}, ""},
		{`my_srv-2=cmd`, mcp.Config{Name: "my_srv-2", Command: []string{"cmd"}}, ""},
		{`noequals`, mcp.Config{}, `want NAME=COMMAND`},
		{`=cmd`, mcp.Config{}, `want NAME=COMMAND`},
		{`a__b=cmd`, mcp.Config{}, `no "__"`},
		{`a b=cmd`, mcp.Config{}, `the name must be`},
		{`a=`, mcp.Config{}, `no command`},
		{`a=cmd "open`, mcp.Config{}, `no closing quote for the " at byte 4`},
		{`a=cmd 'open`, mcp.Config{}, `no closing quote for the ' at byte 4`},
		{`a=cmd x\`, mcp.Config{}, `a backslash at the end escapes nothing`},
		{`a=""`, mcp.Config{}, `no command`},
		{`q=run "a \"b\" \$c" 'd\e' f\ g`, mcp.Config{Name: "q", Command: []string{"run", `a "b" $c`, `d\e`, "f g"}}, ""},
		{`c=server --flag # a comment`, mcp.Config{Name: "c", Command: []string{"server", "--flag"}}, ""},
		{`e=server "" --x=#1`, mcp.Config{Name: "e", Command: []string{"server", "", "--x=#1"}}, ""},
		{`a=https://`, mcp.Config{}, `not a valid URL`},
		{`a=https://x y`, mcp.Config{}, `not a valid URL`},
	}
	for _, tt := range tests {
		got, err := mcp.ParseSpec(tt.spec)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseSpec(%q) error = %v, want %q", tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", tt.spec, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseSpec(%q) (-want +got):\n%s", tt.spec, diff)
		}
	}
}

func TestParseSpecs(t *testing.T) {
	got, err := mcp.ParseSpecs([]string{"a=one"}, "# servers\n\n  b=two x  \nc=https://h/mcp\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []mcp.Config{{Name: "a", Command: []string{"one"}}, {Name: "b", Command: []string{"two", "x"}}, {Name: "c", URL: "https://h/mcp"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := mcp.ParseSpecs([]string{"a=one"}, "a=two"); err == nil || !strings.Contains(err.Error(), `"a" is configured twice`) {
		t.Errorf("duplicate = %v", err)
	}
}

func TestToolNames(t *testing.T) {
	if got := mcp.ToolName("fs", "read.file/v2"); got != "mcp__fs__read_file_v2" {
		t.Errorf("ToolName = %q", got)
	}
	for name, want := range map[string][2]string{"mcp__fs__read_file": {"fs", "read_file"}, "mcp__a-b__c__d": {"a-b", "c__d"}} {
		s, tool, ok := mcp.SplitToolName(name)
		if !ok || s != want[0] || tool != want[1] {
			t.Errorf("SplitToolName(%q) = %q %q %v", name, s, tool, ok)
		}
	}
	for _, name := range []string{"read", "mcp__", "mcp__x", "mcp____t", "mcp__x__"} {
		if _, _, ok := mcp.SplitToolName(name); ok {
			t.Errorf("SplitToolName(%q) accepted", name)
		}
	}
}

// FuzzParseSpec: any input gives a config or a clear error, never a panic;
// a config always has a valid name and exactly one of command and URL.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{`fs=npx -y "a b"`, `d=https://h/mcp`, `a=cmd 'x`, `a__b=c`, "a=\\", `a=""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		c, err := mcp.ParseSpec(spec)
		if err != nil {
			return
		}
		if c.Name == "" || strings.Contains(c.Name, "__") || (c.URL == "") == (len(c.Command) == 0) {
			t.Fatalf("ParseSpec(%q) = %+v", spec, c)
		}
		if c.URL == "" && c.Command[0] == "" {
			t.Fatalf("ParseSpec(%q) has an empty program", spec)
		}
	})
}
