package redact

import (
	"encoding/base64"
	"regexp"
	"strings"
)

// Kinds of secret the built-in detectors find; a hit is replaced by
// "[redacted:KIND]".
const (
	KindPrivateKey    = "private-key"
	KindKeyMaterial   = "key-material" // lines shaped like a key's body, without its BEGIN or END line
	KindAWSAccessKey  = "aws-access-key"
	KindAWSSecretKey  = "aws-secret-key"
	KindGCPAPIKey     = "gcp-api-key"
	KindGoogleOAuth   = "google-oauth-token"
	KindGitHubToken   = "github-token"
	KindGitLabToken   = "gitlab-token"
	KindAnthropicKey  = "anthropic-key"
	KindOpenAIKey     = "openai-key"
	KindDeepSeekKey   = "deepseek-key"
	KindAPIKey        = "api-key" // other "sk-…" keys of OpenAI-compatible providers
	KindStripeKey     = "stripe-key"
	KindSlackToken    = "slack-token"
	KindSlackWebhook  = "slack-webhook"
	KindHuggingFace   = "huggingface-token"
	KindNPMToken      = "npm-token"
	KindJWT           = "jwt"
	KindBearer        = "bearer-token"
	KindBasicAuth     = "basic-auth"
	KindAuthorization = "authorization"
	KindURLPassword   = "url-password"
	KindURLSecret     = "url-secret" // ?token=, &key=, … in a URL
	KindPassword      = "password"   // password=…, "passwd": …
	KindToken         = "token"      // token=…, access_token: …
	KindSecret        = "secret"     // secret=…, api_key: …, client_secret …
	KindEnv           = "env"        // a .env line with a secret-looking name, or any line of a .env file
	KindCustom        = "custom"     // a --redact-rule
)

// rule is one detector: a regular expression, the submatch it replaces,
// and the literal keywords without which it cannot match (a cheap filter
// that keeps most strings away from most expressions).
type rule struct {
	kind string
	re   *regexp.Regexp
	// groups are the submatches replaced, the first that took part (none:
	// the whole match).
	groups []int
	// keywords: the rule runs only when the text contains one of them;
	// fold compares them with the text lower-cased (keywords are then
	// lower-case). No keywords: the rule always runs.
	keywords []string
	fold     bool
	// valid, if set, vets a match: s is the text, m the submatch indexes,
	// v the replaced text.
	valid func(s string, m []int, v string) bool
	// kindOf, if set, names the kind from the match (assignments name the
	// kind after the variable).
	kindOf func(s string, m []int) string
	// window, if set, confines the expression to the neighbourhood of each
	// keyword occurrence: for the keyword of n bytes at p it returns the
	// span [ws, we) of s to search, and next, the position before which no
	// later occurrence needs a search of its own (ok false: nothing can
	// match there). Rules whose keywords are common words use it, so that
	// text full of "key" costs a few comparisons per occurrence instead of
	// an automaton over every byte. Windows keep the work linear: each
	// byte is searched a bounded number of times.
	window func(s string, p, n int) (ws, we, next int, ok bool)
}

// maxWindow bounds a window past its keyword: no credential is longer.
const maxWindow = 64 << 10

// words returns a window from the byte before the keyword (so that \b
// sees its left neighbour) to the end of the k-th word after it, for a
// keyword that a space, tab, quote, colon or equals sign follows.
func words(k int) func(s string, p, n int) (int, int, int, bool) {
	return func(s string, p, n int) (int, int, int, bool) {
		i := p + n
		if i >= len(s) || !strings.ContainsRune(" \t\"':=", rune(s[i])) {
			return 0, 0, 0, false
		}
		limit := min(len(s), i+maxWindow)
		for w := 0; w < k && i < limit; w++ {
			for i < limit && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			for i < limit && !isSpaceByte(s[i]) {
				i++
			}
		}
		return max(p-1, 0), i, p + n, true
	}
}

// token returns a window from back bytes before the keyword (and one more,
// so that \b sees its left neighbour) to the end of the run of
// non-space, non-quote bytes that the keyword starts: a credential that
// begins with a fixed prefix.
func token(back int) func(s string, p, n int) (int, int, int, bool) {
	return func(s string, p, n int) (int, int, int, bool) {
		i := p + n
		limit := min(len(s), i+maxWindow)
		for i < limit && !isSpaceByte(s[i]) && !strings.ContainsRune("\"'`<>", rune(s[i])) {
			i++
		}
		return max(p-back-1, 0), i, i, true
	}
}

// span returns the window [p-back-1, p+n+fwd).
func span(back, fwd int) func(s string, p, n int) (int, int, int, bool) {
	return func(s string, p, n int) (int, int, int, bool) {
		return max(p-back-1, 0), min(len(s), p+n+fwd), p + n, true
	}
}

// line is the window of the line holding the keyword.
func line(s string, p, _ int) (int, int, int, bool) {
	ws := strings.LastIndexByte(s[:p], '\n') + 1
	we := strings.IndexByte(s[p:], '\n')
	if we < 0 {
		we = len(s)
	} else {
		we += p
	}
	return ws, we, we, true
}

// pemMarkerRoom bounds what stands between "-----BEGIN" or "-----END" and
// "PRIVATE KEY" in a block's marker line (the rules' {0,100}), plus the
// longest tail (" BLOCK-----").
const pemMarkerRoom = 100 + len(" BLOCK-----")

// pemBlock is the private key rule's window around "PRIVATE KEY" at p:
// from where its BEGIN marker may start to the end of the first END marker
// of a private key after it or, when none follows, to the end of the run
// of key characters after it (the rule's two alternatives). The expression
// then runs over the block alone, not over all the text around it.
func pemBlock(s string, p, n int) (int, int, int, bool) {
	ws := max(p-len("-----BEGIN")-100-1, 0)
	i := p + n
	limit := min(len(s), i+maxWindow) // no key block is longer
	for from := i; ; {
		e := strings.Index(s[from:limit], "-----END")
		if e < 0 {
			break
		}
		e += from
		marker := s[e:min(len(s), e+len("-----END")+pemMarkerRoom+len("PRIVATE KEY"))]
		if k := strings.Index(marker, "PRIVATE KEY"); k >= 0 {
			// The END marker's own keyword needs no search of its own;
			// a later one (the next block's BEGIN) does.
			next := e + k + len("PRIVATE KEY")
			return ws, min(len(s), next+len(" BLOCK-----")), next, true
		}
		from = e + len("-----END")
	}
	j := i
	for j < len(s) && (isKeyByte(s[j]) || s[j] == '\\') {
		j++
	}
	return ws, j, j, true
}

// pemTailWindow is the private key tail rule's window around "PRIVATE KEY"
// at p when it ends an END marker: back over the lines of key characters
// (with gutters and escaped newlines) before the marker, to the marker's
// end. A BEGIN marker's keyword has none.
func pemTailWindow(s string, p, n int) (int, int, int, bool) {
	from := max(p-len("-----END")-100, 0)
	e := strings.LastIndex(s[from:p], "-----END")
	if e < 0 {
		return 0, 0, 0, false
	}
	e += from
	ws := e
	for ws > 0 && e-ws < maxWindow && isTailByte(s[ws-1]) {
		ws--
	}
	we := min(len(s), p+n+len(" BLOCK-----"))
	// A tail right after its BEGIN marker is the whole block, which the
	// block rule finds: no second search.
	if strings.HasSuffix(s[:ws], "-----") {
		line := s[strings.LastIndexByte(s[:ws], '\n')+1 : ws]
		if strings.Contains(line, "-----BEGIN") && strings.Contains(line, "PRIVATE KEY") {
			return 0, 0, 0, false
		}
	}
	return ws, we, we, true
}

// isTailByte reports whether c may stand in the lines of a key's tail:
// base64, whitespace, escaped newlines and gutters ("Line 12: ", "12→").
// Not '-': the scan back stops at the marker line before, so the windows
// of consecutive markers do not overlap.
func isTailByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		strings.IndexByte("+/= \t\r\n\\:|", c) >= 0 || c >= 0x80
}

// isKeyByte reports whether c may be part of a key block's body: base64,
// whitespace and the header punctuation of encrypted keys.
func isKeyByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		strings.IndexByte("+/=:,.- \t\r\n", c) >= 0
}

// maxName bounds an assignment's name.
const maxName = 128

// assignment is the window of name=value around a secret name: from the
// start of the name to the end of its line (values do not span lines). A
// keyword that does not end a name, or that no assignment operator
// follows, has none.
func assignment(s string, p, n int) (int, int, int, bool) {
	i := p + n
	if i < len(s) && isNameByte(s[i]) {
		return 0, 0, 0, false // "password_hash", "keys": the name goes on
	}
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i >= len(s) || (s[i] != '=' && s[i] != ':' && s[i] != '?') {
		return 0, 0, 0, false
	}
	ws := p
	for ws > 0 && p-ws < maxName && isNameByte(s[ws-1]) {
		ws--
	}
	we := min(len(s), i+maxWindow)
	if nl := strings.IndexByte(s[i:we], '\n'); nl >= 0 {
		we = i + nl
	}
	return ws, we, p + n, true
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// Assignment names: the variable or key names whose value is a secret.
// A JSON object member with such a key has its whole string value
// redacted; in text, name=value, name: value and the like.
const secretNames = `password|passwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|client[_-]?secret|credentials?|auth[_-]?key|auth[_-]?token`

// secretKeyRE matches a JSON key whose string value is a secret; header
// names (authorization, cookie) count in JSON, where they are keys.
var secretKeyRE = regexp.MustCompile(`(?i)^[a-z0-9_.-]*(?:` + secretNames + `|authorization|cookie|session[_-]?id)$`)

// envNames are the parts of an upper-case .env name that mark its value as
// secret.
const envNames = `KEY|SECRET|TOKEN|PASSWORD|PASSWD|PASS|PWD|AUTH|CREDENTIALS?|PRIVATE|DSN|COOKIE|SESSION|SALT|SIGNATURE`

// gutter is a line number before a line ("12: ", "12\t", "12→", grep's
// "Line 12: "), as file-reading and search tools print them.
const gutter = `(?:(?:Line[ \t]+)?\d+(?::|\t|→|\|)[ \t]*)`

// linePrefix admits a gutter before a .env line.
const linePrefix = `^[ \t]*` + gutter + `?(?:export[ \t]+)?`

// pemEnd is the END line of a private key block.
const pemEnd = `-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----`

// pemTail matches the end of a private key block without its BEGIN line
// (a diff hunk or a search result that starts inside the key): the lines
// of base64 right before its END line, with or without gutters, the
// newlines real or escaped ("\n" in JSON text).
var pemTail = regexp.MustCompile(`(?:[A-Za-z0-9+/=]{8,}[ \t]*(?:\r?\n|(?:\\r)?\\n)[ \t]*` + gutter + `?)+` + pemEnd)

// builtinRules are the detectors, most specific first: where two hits
// overlap they are merged and the earlier rule names the kind.
//
// The vendor formats follow gitleaks' rule set (MIT, github.com/gitleaks/gitleaks,
// config/gitleaks.toml) where one exists; entropy thresholds are left out on
// purpose: a share must err towards hiding.
func builtinRules() []rule {
	return []rule{
		{kind: KindPrivateKey, keywords: []string{"PRIVATE KEY"}, window: pemBlock,
			re: regexp.MustCompile(`-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?` + pemEnd + `|(?:[A-Za-z0-9+/=:,.\s-]|\\[nrt])*)`)},
		{kind: KindPrivateKey, keywords: []string{"PRIVATE KEY"}, window: pemTailWindow, re: pemTail},
		{kind: KindAWSAccessKey, window: token(0), keywords: []string{"AKIA", "ASIA", "ABIA", "ACCA", "A3T"},
			re: regexp.MustCompile(`\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b`)},
		{kind: KindAWSSecretKey, window: span(8, 120), keywords: []string{"secret"}, fold: true, groups: []int{1},
			re: regexp.MustCompile(`(?i)(?:aws)?_?secret_?(?:access_?)?key["']?[ \t]*(?::|=|=>|:=)[ \t]*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)`)},
		{kind: KindGCPAPIKey, window: token(0), keywords: []string{"AIza"},
			re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`)},
		{kind: KindGoogleOAuth, window: token(0), keywords: []string{"ya29."},
			re: regexp.MustCompile(`\bya29\.[0-9A-Za-z_-]{20,}`)},
		{kind: KindGitHubToken, window: token(0), keywords: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
			re: regexp.MustCompile(`\b(?:gh[pousr]_[0-9A-Za-z]{36,255}|github_pat_[0-9A-Za-z_]{22,255})`)},
		{kind: KindGitLabToken, window: token(0), keywords: []string{"glpat-"},
			re: regexp.MustCompile(`\bglpat-[0-9A-Za-z_-]{20,}`)},
		{kind: KindAnthropicKey, window: token(0), keywords: []string{"sk-ant-"},
			re: regexp.MustCompile(`\bsk-ant-[a-z]{2,10}\d{2}-[0-9A-Za-z_-]{20,}`)},
		{kind: KindOpenAIKey, window: token(0), keywords: []string{"sk-"},
			re: regexp.MustCompile(`\bsk-(?:(?:proj|svcacct|admin|None)-[0-9A-Za-z_-]{20,}|[0-9A-Za-z_-]*T3BlbkFJ[0-9A-Za-z_-]*)`)},
		{kind: KindDeepSeekKey, window: token(0), keywords: []string{"sk-"},
			re: regexp.MustCompile(`\bsk-[0-9a-f]{32}\b`)},
		{kind: KindAPIKey, window: token(0), keywords: []string{"sk-"},
			re:    regexp.MustCompile(`\bsk-[0-9A-Za-z][0-9A-Za-z_-]{19,}`),
			valid: func(_ string, _ []int, v string) bool { return hasDigit(v) }},
		{kind: KindStripeKey, window: token(1), keywords: []string{"k_live_", "k_test_"},
			re: regexp.MustCompile(`\b[rs]k_(?:live|test)_[0-9A-Za-z]{10,}`)},
		{kind: KindSlackToken, window: token(0), keywords: []string{"xox"},
			re: regexp.MustCompile(`\bxox[abposr]-[0-9A-Za-z-]{10,}`)},
		{kind: KindSlackWebhook, window: token(0), keywords: []string{"hooks.slack.com"},
			re: regexp.MustCompile(`hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]+`)},
		{kind: KindHuggingFace, window: token(0), keywords: []string{"hf_"},
			re: regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`)},
		{kind: KindNPMToken, window: token(0), keywords: []string{"npm_"},
			re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`)},
		{kind: KindJWT, window: token(0), keywords: []string{"eyJ"},
			re: regexp.MustCompile(`\beyJ[0-9A-Za-z_-]{8,}\.eyJ[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]*`)},
		{kind: KindBearer, keywords: []string{"bearer"}, fold: true, groups: []int{1}, window: words(1),
			re: regexp.MustCompile(`(?i)\bbearer[ \t]+([0-9A-Za-z._~+/-]{8,}=*)`),
			// "bearer instrument": a token has a digit or is long.
			valid: func(_ string, _ []int, v string) bool { return hasDigit(v) || len(v) >= 20 }},
		{kind: KindBasicAuth, keywords: []string{"basic"}, fold: true, groups: []int{1}, window: words(1),
			re:    regexp.MustCompile(`(?i)\bbasic[ \t]+([A-Za-z0-9+/]{6,}={0,2})`),
			valid: func(_ string, _ []int, v string) bool { return isBasicCredential(v) }},
		{kind: KindAuthorization, keywords: []string{"authorization"}, fold: true, groups: []int{1}, window: words(3),
			re: regexp.MustCompile(`(?i)\bauthorization["']?[ \t]*[:=][ \t]*["']?(?:token[ \t]+)?([0-9A-Za-z._~+/-]{16,}=*)`)},
		{kind: KindURLPassword, window: token(22), keywords: []string{"://"}, groups: []int{1},
			re:    regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/:@'"<>]+:([^\s/@'"<>]+)@`),
			valid: func(_ string, _ []int, v string) bool { return !placeholder(v, true) }},
		{kind: KindURLSecret, window: token(64), fold: true, groups: []int{1},
			keywords: []string{"key=", "token=", "secret=", "password=", "sig=", "signature=", "auth="},
			re:       regexp.MustCompile(`(?i)[?&](?:access_token|id_token|refresh_token|api_?key|key|token|secret|client_secret|password|sig|signature|auth)=([^&\s#"'<>]+)`),
			valid:    func(_ string, _ []int, v string) bool { return !placeholder(v, true) }},
		{kind: KindEnv, groups: []int{2},
			keywords: []string{"KEY", "SECRET", "TOKEN", "PASS", "PWD", "AUTH", "CREDENTIAL", "PRIVATE", "DSN", "COOKIE", "SESSION", "SALT", "SIGNATURE"},
			window:   line,
			re:       regexp.MustCompile(`(?m)` + linePrefix + `((?:[A-Z_][A-Z0-9_]*)?(?:` + envNames + `)[A-Z0-9_]*)[ \t]*=[ \t]*(\S[^\n]*?)[ \t\r]*$`),
			valid: func(s string, m []int, v string) bool {
				name := s[m[2]:m[3]]
				return name != "PWD" && name != "OLDPWD" && !placeholder(v, true)
			}},
		{kind: KindSecret, fold: true, groups: []int{2, 3, 4}, window: assignment,
			keywords: []string{"password", "passwd", "passphrase", "secret", "token", "key", "credential", "credentials"},
			re: regexp.MustCompile(`(?i)^([a-z0-9_.-]*(?:` + secretNames + `))["']?[ \t]*(?:=|:=|=>|:|\?=)[ \t]*` +
				`(?:"((?:[^"\\\n]|\\.)+)(?:"|$)|'([^'\n]+)(?:'|$)|([^\s"'` + "`" + `,;&)\]}<>]+))`),
			valid: func(s string, m []int, v string) bool {
				quoted := m[4] >= 0 || m[6] >= 0
				return !placeholder(v, quoted)
			},
			kindOf: func(s string, m []int) string { return kindForName(s[m[2]:m[3]]) }},
	}
}

// envFileRule redacts every value of a NAME=value line: it applies to the
// strings of a call that reads or writes a .env file.
func envFileRule() rule {
	return rule{kind: KindEnv, groups: []int{1}, keywords: []string{"="},
		re:    regexp.MustCompile(`(?m)` + linePrefix + `[A-Za-z_][A-Za-z0-9_.-]*[ \t]*=[ \t]*(\S[^\n]*?)[ \t\r]*$`),
		valid: func(_ string, _ []int, v string) bool { return !placeholder(v, true) }}
}

// envFileRE matches a path or command word naming a .env file: ".env",
// ".env.local", "prod.env", "config/.env".
var envFileRE = regexp.MustCompile(`(?:^|[\s/'"=])(?:\.env(?:\.[\w.-]+)?|[\w.-]+\.env)(?:$|[\s'";|&>)])`)

// kindForName names an assignment's kind after its variable.
func kindForName(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "pass"):
		return KindPassword
	case strings.Contains(n, "token"):
		return KindToken
	default:
		return KindSecret
	}
}

// placeholderWords are values that stand for no secret: code, types,
// empty markers.
var placeholderWords = map[string]bool{
	"null": true, "nil": true, "none": true, "true": true, "false": true, "undefined": true,
	"string": true, "str": true, "bool": true, "int": true, "number": true, "any": true,
	"object": true, "bytes": true, "[]byte": true, "optional": true, "required": true,
}

// placeholder reports whether an assigned value is no secret: empty,
// masked (***), a variable reference ($X, ${X}, {{x}}, <x>, %s), a word for
// a type or nothing, an already redacted marker, or — unquoted — code: a
// call, or a dotted identifier path (cfg.Token).
func placeholder(v string, quoted bool) bool {
	if v == "" || strings.Trim(v, "*xX•.") == "" {
		return true
	}
	if placeholderWords[strings.ToLower(v)] {
		return true
	}
	switch {
	case strings.HasPrefix(v, "[redacted:"),
		strings.HasPrefix(v, "${"), strings.HasPrefix(v, "{{"), strings.HasPrefix(v, "%"),
		strings.HasPrefix(v, "<") && strings.HasSuffix(v, ">"):
		return true
	case len(v) > 1 && v[0] == '$' && (isIdentStart(v[1])):
		return true
	}
	if quoted {
		return false
	}
	if strings.ContainsAny(v, "()") {
		return true
	}
	return isDottedPath(v)
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

func isDottedPath(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" || !isIdentStart(p[0]) {
			return false
		}
		for i := 1; i < len(p); i++ {
			if c := p[i]; !isIdentStart(c) && (c < '0' || c > '9') {
				return false
			}
		}
	}
	return true
}

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

// isBasicCredential reports whether v is base64 of "user:password".
func isBasicCredential(v string) bool {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(v, "="))
	}
	if err != nil || len(b) < 3 {
		return false
	}
	i := strings.IndexByte(string(b), ':')
	return i > 0 && i < len(b)-1
}
