package redact_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"prism/core/redact"
)

// Fake credentials of each kind, built so that the repository holds no
// literal that a secret scanner would flag. The AWS pair is AWS's own
// documented example.
var (
	awsKeyID     = "AKIA" + "IOSFODNN7EXAMPLE"
	awsSecret    = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
	gcpKey       = "AIza" + "SyB4a9fKx8sW2-7rTqvY0nZmPcLhJdEoUiQ"
	oauthToken   = "ya29." + "a0AfH6SMBx3Jk9Qw2Lz8Vb1Nc4Xd7Ye5Rf0Tg"
	githubPAT    = "ghp_" + "1234567890abcdefghijABCDEFGHIJ123456"
	githubFine   = "github_pat_" + "11ABCDEFG0123456789abc_" + strings.Repeat("Zy9", 19) + "xy"
	gitlabPAT    = "glpat-" + "xYz12345678901234567"
	anthropicKey = "sk-ant-" + "api03-" + strings.Repeat("aB3_", 23) + "xAA"
	openaiKey    = "sk-" + "proj-" + strings.Repeat("Ab1", 20) + "T3BlbkFJ" + strings.Repeat("Zz9", 20)
	deepseekKey  = "sk-" + "0123456789abcdef0123456789abcdef"
	otherSKKey   = "sk-" + "Mooncake7Provider0Key1234"
	stripeKey    = "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	slackToken   = "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKl"
	slackHook    = "https://hooks.slack.com/services/" + "T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX"
	hfToken      = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
	npmToken     = "npm_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
	jwtToken     = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0" + "." + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	bearerValue  = "abcdef0123456789abcdef0123456789"
	basicValue   = "dXNlcjpodW50ZXIy" // user:hunter2
	privateKey   = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq8m9Yr\nq0JmZ3xYf8uQ2==\n-----END RSA " + "PRIVATE KEY-----"
)

func newRedactor(t testing.TB, rules ...string) *redact.Redactor {
	t.Helper()
	r, err := redact.New(rules...)
	if err != nil {
		t.Fatalf("redact.New: %v", err)
	}
	return r
}

// TestDetectors: each built-in kind, in the context it is usually met in,
// is replaced by its marker, and nothing of the secret is left.
func TestDetectors(t *testing.T) {
	r := newRedactor(t)
	for _, tc := range []struct {
		name, in, want, secret string
	}{
		{"aws access key", "key id " + awsKeyID + " in use", "key id [redacted:aws-access-key] in use", awsKeyID},
		{"aws secret key", "aws_secret_access_key = " + awsSecret, "aws_secret_access_key = [redacted:aws-secret-key]", awsSecret},
		{"gcp api key", "url?key=x&k=" + gcpKey + " done", "url?key=x&k=[redacted:gcp-api-key] done", gcpKey},
		{"google oauth", "token " + oauthToken, "token [redacted:google-oauth-token]", oauthToken},
		{"github pat", "git clone https://" + githubPAT + "@github.com/o/r", "git clone https://[redacted:github-token]@github.com/o/r", githubPAT},
		{"github fine-grained", "GH=" + githubFine, "GH=[redacted:github-token]", githubFine},
		{"gitlab pat", "PRIVATE-TOKEN: " + gitlabPAT, "PRIVATE-TOKEN: [redacted:gitlab-token]", gitlabPAT},
		{"anthropic", "x-api-key " + anthropicKey, "x-api-key [redacted:anthropic-key]", anthropicKey},
		{"openai", "client = OpenAI(" + openaiKey + ")", "client = OpenAI([redacted:openai-key])", openaiKey},
		{"deepseek", "using " + deepseekKey + " now", "using [redacted:deepseek-key] now", deepseekKey},
		{"other sk key", "moonshot " + otherSKKey, "moonshot [redacted:api-key]", otherSKKey},
		{"stripe", "stripe.api_key(" + stripeKey + ")", "stripe.api_key([redacted:stripe-key])", stripeKey},
		{"slack token", "SLACK " + slackToken, "SLACK [redacted:slack-token]", slackToken},
		{"slack webhook", "post to " + slackHook, "post to https://[redacted:slack-webhook]", "XXXXXXXXXXXXXXXXXXXXXXXX"},
		{"hugging face", "login " + hfToken, "login [redacted:huggingface-token]", hfToken},
		{"npm", "//registry/:_authToken " + npmToken, "//registry/:_authToken [redacted:npm-token]", npmToken},
		{"jwt", "cookie " + jwtToken + ";", "cookie [redacted:jwt];", jwtToken},
		{"bearer", "curl -H 'Authorization: Bearer " + bearerValue + "'", "curl -H 'Authorization: Bearer [redacted:bearer-token]'", bearerValue},
		{"basic", "Authorization: Basic " + basicValue, "Authorization: Basic [redacted:basic-auth]", basicValue},
		{"authorization raw", "Authorization: token " + "0123456789abcdef0123", "Authorization: token [redacted:authorization]", "0123456789abcdef0123"},
		{"url password", "postgres://app:s3cr3t-pw@db:5432/x", "postgres://app:[redacted:url-password]@db:5432/x", "s3cr3t-pw"},
		{"url secret", "GET /cb?code=1&access_token=tok123abc&x=1", "GET /cb?code=1&access_token=[redacted:url-secret]&x=1", "tok123abc"},
		{"password assignment", "password=hunter2", "password=[redacted:password]", "hunter2"},
		{"password quoted with space", `db_password: "correct horse"`, `db_password: "[redacted:password]"`, "correct horse"},
		{"token assignment", "token = 'abc.def-123'", "token = '[redacted:token]'", "abc.def-123"},
		{"secret json text", `{"client_secret": "s3cr3t"}`, `{"client_secret": "[redacted:secret]"}`, "s3cr3t"},
		{"api key header", "X-Api-Key: k-123456", "X-Api-Key: [redacted:secret]", "k-123456"},
		{"env line", "DATABASE_PASSWORD=pa ss word\nDEBUG=1", "DATABASE_PASSWORD=[redacted:env]\nDEBUG=1", "pa ss word"},
		{"env export", "export STRIPE_WEBHOOK_SECRET=whsec_abc", "export STRIPE_WEBHOOK_SECRET=[redacted:env]", "whsec_abc"},
		{"env numbered", "3: SESSION_SIGNING=abc def", "3: SESSION_SIGNING=[redacted:env]", "abc def"},
		{"private key", "key:\n" + privateKey + "\nend", "key:\n[redacted:private-key]\nend", "MIIEowIBAAKCAQEA7bq8m9Yr"},
		{"private key escaped newlines", `{"private_key":"-----BEGIN ` + `PRIVATE KEY-----\nMIIEvgIBADANBg\n-----END ` + `PRIVATE KEY-----\n"}`, `{"private_key":"[redacted:private-key]"}`, "MIIEvgIBADANBg"},
		{"private key truncated", "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n(output truncated)", "[redacted:private-key](output truncated)", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, hits := r.String(tc.in)
			if got != tc.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if strings.Contains(got, tc.secret) {
				t.Errorf("output still holds %q", tc.secret)
			}
			if len(hits) == 0 {
				t.Errorf("no hits reported")
			}
		})
	}
}

// TestNoFalsePositives: ordinary prose, code and prism's own data are left
// alone.
func TestNoFalsePositives(t *testing.T) {
	r := newRedactor(t)
	for _, in := range []string{
		"The file greet.go has 13 lines.",
		"func main() { fmt.Println(\"hello\") }",
		"the bearer instrument is valid",
		"basic functionality works",
		"password: string;",
		"token = tokenizer.next()",
		"secret := cfg.Secret",
		"password=${DB_PASSWORD}",
		"api_key: <your key here>",
		"token: null",
		"inputTokens: 1234, outputTokens: 56",
		"PWD=/home/user/project\nOLDPWD=/home/user",
		"PATH=/usr/bin:/bin\nHOME=/root",
		"https://example.com/path?page=2&sort=asc",
		"ssh://git@github.com:22/owner/repo.git",
		"password=[redacted:password]",
		"sk-learn is not a key",
		"-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
	} {
		if got, hits := r.String(in); got != in || len(hits) != 0 {
			t.Errorf("String(%q) = %q, %v; want it unchanged", in, got, hits)
		}
	}
}

func TestOverlappingHitsMerge(t *testing.T) {
	r := newRedactor(t)
	// The assignment and the DeepSeek detector both match the value; the
	// more specific kind names it, once.
	got, hits := r.String("api_key=" + deepseekKey)
	if got != "api_key=[redacted:deepseek-key]" || len(hits) != 1 {
		t.Errorf("got %q, %d hits; want one deepseek-key hit", got, len(hits))
	}
	// An .env line whose value holds a key: the whole value (the union of
	// both hits) goes, named by the specific detector.
	got, _ = r.String("OPENAI_API_KEY=" + openaiKey + " # prod")
	if got != "OPENAI_API_KEY=[redacted:openai-key]" {
		t.Errorf("got %q", got)
	}
}

func TestUserRules(t *testing.T) {
	r := newRedactor(t, `ACME-[0-9]{6}`, `employee id (?P<secret>\d+)`)
	got, hits := r.String("ticket ACME-123456 for employee id 4242")
	if want := "ticket [redacted:custom] for employee id [redacted:custom]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if len(hits) != 2 || hits[0].Kind != redact.KindCustom {
		t.Errorf("hits = %+v", hits)
	}
	for _, bad := range []struct{ rule, msg string }{
		{`(unclosed`, "missing closing )"},
		{`a*`, "matches the empty string"},
	} {
		_, err := redact.New(bad.rule)
		if err == nil || !strings.Contains(err.Error(), bad.msg) || !strings.Contains(err.Error(), bad.rule) {
			t.Errorf("New(%q) = %v; want an error naming the rule and %q", bad.rule, err, bad.msg)
		}
	}
}

// TestJSONKeepsBytes: a document without secrets comes back as the same
// bytes; one with secrets changes only the strings that hold them, and
// strings holding JSON (tool arguments) are redacted inside, keeping their
// own formatting.
func TestJSON(t *testing.T) {
	r := newRedactor(t)
	clean := []byte(`{"turn":1,"text":"a \u003c b","n":[1,2.5e3,null,true]}`)
	if out, kinds := r.JSON(clean); string(out) != string(clean) || len(kinds) != 0 {
		t.Errorf("clean document changed: %s %v", out, kinds)
	}
	args := "{\n  \"command\": \"curl -H 'Authorization: Bearer " + bearerValue + "' https://x\",\n  \"timeout\": 5\n}"
	doc, _ := json.Marshal(map[string]any{"callId": "call_1", "name": "bash", "arguments": args,
		"meta": map[string]any{"env": map[string]any{"API_TOKEN": "plain-value", "HOME": "/root"}, "password": ""}})
	out, kinds := r.JSON(doc)
	if !json.Valid(out) {
		t.Fatalf("invalid JSON out: %s", out)
	}
	var got struct {
		CallID    string `json:"callId"`
		Arguments string `json:"arguments"`
		Meta      struct {
			Env      map[string]string `json:"env"`
			Password string            `json:"password"`
		} `json:"meta"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	wantArgs := strings.Replace(args, bearerValue, "[redacted:bearer-token]", 1)
	if got.Arguments != wantArgs {
		t.Errorf("arguments:\n got %q\nwant %q", got.Arguments, wantArgs)
	}
	if got.Meta.Env["API_TOKEN"] != "[redacted:token]" || got.Meta.Env["HOME"] != "/root" || got.Meta.Password != "" {
		t.Errorf("meta = %+v", got.Meta)
	}
	if got.CallID != "call_1" {
		t.Errorf("callId changed: %q", got.CallID)
	}
	if diff := cmp.Diff([]string{"bearer-token", "token"}, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	// Not JSON at all: redacted as text, returned as a JSON string.
	out, _ = r.JSON([]byte("password=hunter2 {"))
	if string(out) != `"password=[redacted:password] {"` {
		t.Errorf("invalid JSON: got %s", out)
	}
}
