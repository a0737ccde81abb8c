package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"prism/core"
	"prism/core/coretest"
	"prism/core/redact"
	"prism/core/tools"
	"prism/web"
)

// splitSample is one redaction rule's sample: the text a file holds and
// the secret in it (what must never leave, nor any 16-byte piece of it).
type splitSample struct {
	rule, text string
	secret     []string // the secret's lines (one for a single-line secret)
}

// pemBody returns n lines of 64 base64 characters: the body of a key as
// PEM writes it, different for each seed.
func pemBody(seed string, n int) []string {
	var lines []string
	h := sha256.Sum256([]byte(seed))
	var stream []byte
	for len(stream) < n*48 {
		h = sha256.Sum256(h[:])
		stream = append(stream, h[:]...)
	}
	enc := base64.StdEncoding.EncodeToString(stream[:n*48])
	for i := range n {
		lines = append(lines, enc[i*64:(i+1)*64])
	}
	return lines
}

// splitCustomRule is a user rule whose matches span lines.
const splitCustomRule = `BEGIN VAULT BLOB[\s\S]*?END VAULT BLOB`

// splitSamples has a sample of every built-in rule, of the .env-file rule
// and of a multi-line user rule.
func splitSamples() []splitSample {
	one := func(rule, text, secret string) splitSample {
		return splitSample{rule: rule, text: text, secret: []string{secret}}
	}
	rsa := pemBody("rsa", 12)
	openssh := pemBody("openssh", 6)
	vault := pemBody("vault", 3)
	return []splitSample{
		{rule: "private-key", secret: rsa,
			text: "-----BEGIN RSA " + "PRIVATE KEY-----\n" + strings.Join(rsa, "\n") + "\n-----END RSA " + "PRIVATE KEY-----"},
		{rule: "private-key (openssh)", secret: openssh,
			text: "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + strings.Join(openssh, "\n") + "\n-----END OPENSSH " + "PRIVATE KEY-----"},
		one("aws-access-key", "key id AKIA"+"IOSFODNN7EXAMPLE in use", "AKIA"+"IOSFODNN7EXAMPLE"),
		one("aws-secret-key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/"+"bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/"+"bPxRfiCYEXAMPLEKEY"),
		one("gcp-api-key", "maps key AIza"+"SyB4a9fKx8sW2-7rTqvY0nZmPcLhJdEoUiQ", "AIza"+"SyB4a9fKx8sW2-7rTqvY0nZmPcLhJdEoUiQ"),
		one("google-oauth-token", "oauth ya29."+"a0AfH6SMBx3Jk9Qw2Lz8Vb1Nc4Xd7Ye5Rf0Tg", "ya29."+"a0AfH6SMBx3Jk9Qw2Lz8Vb1Nc4Xd7Ye5Rf0Tg"),
		one("github-token", "push with ghp_"+"1234567890abcdefghijABCDEFGHIJ123456", "ghp_"+"1234567890abcdefghijABCDEFGHIJ123456"),
		one("gitlab-token", "PRIVATE-TOKEN: glpat-"+"xYz12345678901234567", "glpat-"+"xYz12345678901234567"),
		one("anthropic-key", "x-api-key sk-ant-"+"api03-"+strings.Repeat("aB3_", 23)+"xAA", "sk-ant-"+"api03-"+strings.Repeat("aB3_", 23)+"xAA"),
		one("openai-key", "client sk-"+"proj-"+strings.Repeat("Ab1", 20)+"T3BlbkFJ"+strings.Repeat("Zz9", 20), "sk-"+"proj-"+strings.Repeat("Ab1", 20)+"T3BlbkFJ"+strings.Repeat("Zz9", 20)),
		one("deepseek-key", "using sk-"+"0123456789abcdef0123456789abcdef now", "sk-"+"0123456789abcdef0123456789abcdef"),
		one("api-key", "moonshot sk-"+"Mooncake7Provider0Key1234", "sk-"+"Mooncake7Provider0Key1234"),
		one("stripe-key", "stripe sk_"+"live_"+"4eC39HqLyjWDarjtT1zdp7dc", "sk_"+"live_"+"4eC39HqLyjWDarjtT1zdp7dc"),
		one("slack-token", "SLACK xoxb-"+"1234567890-0987654321-AbCdEfGhIjKl", "xoxb-"+"1234567890-0987654321-AbCdEfGhIjKl"),
		one("slack-webhook", "post to https://hooks.slack.com/services/"+"T000/B000/QwErTyUiOpAsDfGhJkLzXcVb", "QwErTyUiOpAsDfGhJkLzXcVb"),
		one("huggingface-token", "login hf_"+"AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "hf_"+"AbCdEfGhIjKlMnOpQrStUvWxYz01234567"),
		one("npm-token", "//registry/:_authToken npm_"+"AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "npm_"+"AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
		one("jwt", "cookie eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."+"eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
			"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."+"eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"),
		one("bearer-token", "curl -H 'Authorization: Bearer bEaRer0123456789abcdefZZ0123456789'", "bEaRer0123456789abcdefZZ0123456789"),
		one("basic-auth", "Authorization: Basic dXNlcjpodW50ZXIyaHVudGVyMw==", "dXNlcjpodW50ZXIyaHVudGVyMw"),
		one("authorization", "Authorization: token 0123456789aUtHoRiZaTiOn", "0123456789aUtHoRiZaTiOn"),
		one("url-password", "postgres://app:Url5ecretPassw0rd@db:5432/x", "Url5ecretPassw0rd"),
		one("url-secret", "GET /cb?code=1&access_token=UrlT0kenQuerySecret&x=1", "UrlT0kenQuerySecret"),
		one("password", "password=Hunter2HorseBattery", "Hunter2HorseBattery"),
		one("token", "token = 'abc.def-123-TokenAssign'", "abc.def-123-TokenAssign"),
		one("secret", "client_secret: S3cretClientValue99", "S3cretClientValue99"),
		one("env", "DATABASE_PASSWORD=EnvLinePassw0rdValue", "EnvLinePassw0rdValue"),
		{rule: "custom (multi-line)", secret: vault,
			text: "BEGIN VAULT BLOB\n" + strings.Join(vault, "\n") + "\nEND VAULT BLOB"},
	}
}

// fragments are the pieces of a secret no output may hold: every 16-byte
// substring of each of its lines (the whole line when it is shorter).
func fragments(s splitSample) []string {
	var out []string
	for _, l := range s.secret {
		if len(l) <= 16 {
			out = append(out, l)
			continue
		}
		for i := 0; i+16 <= len(l); i++ {
			out = append(out, l[i:i+16])
		}
	}
	return out
}

// TestShareRedactsSplitSecrets: every redaction rule's sample, written to a
// file and passed through every built-in tool's meta shape — read's lines,
// write's and edit's diff hunks (an edit next to a key holds only its
// tail), grep's matches, glob's paths, bash's output, note's title, an MCP
// result's content blocks and a call's arguments, one line per string, and
// windows that hold a key's body without its BEGIN and END lines —
// leaves no 16-byte fragment of any secret in any read of a redacted link:
// the page, the JSONL, export.html, a call page and its files, the live
// stream, a playback and a seek.
func TestShareRedactsSplitSecrets(t *testing.T) {
	samples := splitSamples()
	e, _ := shareEnv(t, func(d *web.Deps) {
		r, err := redact.New(splitCustomRule)
		if err != nil {
			t.Fatal(err)
		}
		d.Redactor = r
		d.Tuning.PlaybackIdle = time.Millisecond
	})
	ws := t.TempDir()
	var file strings.Builder
	for i, s := range samples {
		fmt.Fprintf(&file, "before %d\n%s\nafter %d\n", i, s.text, i)
	}
	text := file.String()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("secrets.txt", text)
	write("edited.txt", text)
	const envValue = "PlainEnvFileValue1234"
	write(".env", "PLAIN_NAME="+envValue+"\n")
	samples = append(samples, splitSample{rule: "env file", secret: []string{envValue}})
	// glob lists names: the secrets known by their form alone as file
	// names.
	selfEvident := map[string]bool{"aws-access-key": true, "gcp-api-key": true, "google-oauth-token": true, "github-token": true,
		"gitlab-token": true, "anthropic-key": true, "openai-key": true, "deepseek-key": true, "api-key": true, "stripe-key": true,
		"slack-token": true, "huggingface-token": true, "npm-token": true, "jwt": true}
	globbed := 0
	for _, s := range samples {
		if selfEvident[s.rule] {
			write(s.secret[0]+".txt", "")
			globbed++
		}
	}
	if globbed != len(selfEvident) {
		t.Fatalf("%d of %d self-evident samples named files", globbed, len(selfEvident))
	}

	builtins, err := tools.Builtins(tools.Options{Workspace: ws, AllowBash: true})
	if err != nil {
		t.Fatal(err)
	}
	reg := core.NewRegistry(nil)
	reg.MustRegister(builtins...)
	args := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ctx := context.Background()
	b := coretest.NewBuilder(t0)
	b.TurnStart().StepStart().User("Look at the secrets.")
	b.Exec(ctx, reg, ws, "c-read", "read", `{"file_path":"secrets.txt"}`)
	b.Exec(ctx, reg, ws, "c-env", "read", `{"file_path":".env"}`)
	b.Exec(ctx, reg, ws, "c-write", "write", args(map[string]string{"file_path": "copy.txt", "content": text}))
	// Edits next to each sample: the hunks hold the lines around the
	// change, the tail of a multi-line secret without its head, or its
	// head without its tail. (Not next to the user rule's sample: a hunk
	// holding half of it holds no match of the rule; a private key's
	// halves are known by their form.)
	custom := func(i int) bool { return i < len(samples) && strings.HasPrefix(samples[i].rule, "custom") }
	for i := range samples[:len(samples)-1] {
		if !custom(i) && !custom(i+1) {
			b.Exec(ctx, reg, ws, "c-edit-after-"+strconv.Itoa(i), "edit",
				args(map[string]string{"file_path": "edited.txt", "old_string": fmt.Sprintf("after %d\n", i), "new_string": fmt.Sprintf("AFTER %d\n", i)}))
		}
		if !custom(i) && (i == 0 || !custom(i-1)) {
			b.Exec(ctx, reg, ws, "c-edit-before-"+strconv.Itoa(i), "edit",
				args(map[string]string{"file_path": "edited.txt", "old_string": fmt.Sprintf("before %d\n", i), "new_string": fmt.Sprintf("BEFORE %d\n", i)}))
		}
	}
	// Windows inside a key, holding neither of its marker lines: a read
	// with an offset and a limit, a search matching some of its lines, an
	// edit of two of its lines (the hunk and the arguments).
	b.Exec(ctx, reg, ws, "c-read-inside", "read", `{"file_path":"secrets.txt","offset":4,"limit":5}`)
	b.Exec(ctx, reg, ws, "c-grep-inside", "grep", `{"pattern":"[0-9][A-Z]","path":"secrets.txt"}`)
	rsa := samples[0].secret
	b.Exec(ctx, reg, ws, "c-edit-inside", "edit", args(map[string]string{"file_path": "edited.txt",
		"old_string": rsa[5] + "\n" + rsa[6] + "\n", "new_string": rsa[6] + "\n" + rsa[5] + "\n"}))
	b.Exec(ctx, reg, ws, "c-grep", "grep", `{"pattern":".","path":"secrets.txt"}`)
	b.Exec(ctx, reg, ws, "c-grep-env", "grep", `{"pattern":".","path":".env"}`)
	b.Exec(ctx, reg, ws, "c-glob", "glob", `{"pattern":"*.txt"}`)
	b.Exec(ctx, reg, ws, "c-bash", "bash", `{"command":"cat secrets.txt .env","description":"show"}`)
	b.Exec(ctx, reg, ws, "c-note", "note", args(map[string]string{"title": text}))
	// An MCP tool's call and result: the arguments hold the text one line
	// per string, the result one content block per line.
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	b.Call("c-mcp", "mcp__vault__store", args(map[string]any{"lines": lines}))
	blocks := core.Content{}
	for _, l := range lines {
		blocks = append(blocks, &core.TextBlock{Text: l})
	}
	callSeq := b.Events[len(b.Events)-1].Seq
	b.Add(core.EventToolResult, core.ToolResultData{Turn: 1, Step: 1, Message: core.NewToolResultMessage("r-mcp", "c-mcp", blocks, false),
		Meta: json.RawMessage(args(map[string]any{"lines": lines}))}, core.AppendOp()).SourceEventSeqs = []int64{callSeq}
	b.StepEnd().TurnEnd(core.TurnCompleted)
	events := b.Events

	// The owner sees the secrets: the test proves something.
	var stored strings.Builder
	for _, ev := range events {
		stored.Write(ev.Data)
	}
	for _, s := range samples {
		if !strings.Contains(stored.String(), s.secret[len(s.secret)-1]) {
			t.Fatalf("the log does not hold the %s sample: the test proves nothing", s.rule)
		}
	}

	e.session(t, "s1", events[:2]) // the rest arrives while a stream is open
	_, live := e.share(t, "s1", "{}")
	last := strconv.Itoa(len(events) - 1)
	st := e.stream(t, live+"/stream?after=-1")
	var frames strings.Builder
	for _, ev := range st.until(t, func(ev sseEvent) bool { return ev.ID == "1" }) {
		frames.WriteString(ev.Elements())
	}
	e.append(t, "s1", events[2:]...)
	for _, ev := range st.until(t, func(ev sseEvent) bool { return ev.ID == last }) {
		frames.WriteString(ev.Elements())
	}
	outputs := map[string]string{"live stream": frames.String()}

	_, scoped := e.share(t, "s1", fmt.Sprintf(`{"upToSeq":%s}`, last))
	var played strings.Builder
	for ev := range e.stream(t, scoped+"/stream?after=-1&speed=50").events {
		played.WriteString(ev.Elements())
	}
	outputs["playback"] = played.String()
	var moved strings.Builder
	for ev := range e.stream(t, scoped+"/seek?at="+last).events {
		moved.WriteString(ev.Elements())
	}
	outputs["seek"] = moved.String()

	reads := []string{live, live + "/events", live + "/export.html", scoped, scoped + "/events"}
	for _, ev := range events {
		if ev.Type != core.EventToolCall {
			continue
		}
		var c struct {
			CallID string `json:"callId"`
		}
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"", "/content.txt", "/arguments.txt", "/meta.json"} {
			reads = append(reads, live+"/calls/"+c.CallID+f)
		}
	}
	for _, p := range reads {
		status, body := e.raw(t, "GET", p)
		if status != 200 && !strings.HasSuffix(p, "/meta.json") {
			t.Fatalf("GET %s: %d", p, status)
		}
		outputs[p] = body
	}

	for name, body := range outputs {
		if body == "" {
			t.Errorf("%s: empty", name)
			continue
		}
		// What a reader sees, too: highlighting may cut a line into spans.
		if d, err := goquery.NewDocumentFromReader(strings.NewReader(body)); err == nil {
			body += "\n" + d.Text()
		}
		for _, s := range samples {
			for _, f := range fragments(s) {
				if strings.Contains(body, f) {
					t.Errorf("%s leaks %q of the %s sample", strings.ReplaceAll(name, live, "/s/LIVE"), f, s.rule)
					break
				}
			}
		}
	}
}
