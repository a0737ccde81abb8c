// Package attention is the pure half of attention rules: the rules file
// (Parse: a TOML file of [[rule]] tables and one [webhook]), the in-memory
// evaluator that turns committed events and the passing of time into
// firings and clearings (Evaluator), and the matcher of a search query
// against one card's search document (Match). It does no I/O: the server
// (package backend/attend) feeds it the commit feed and a clock, writes its
// firings as notes of kind attention and runs their actions.
package attention

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"prism/core/search"
)

// Rule kinds (the when key).
const (
	WhenPending         = "pending"
	WhenApprovalWaiting = "approval-waiting"
	WhenLoop            = "loop"
	WhenErrorStreak     = "error-streak"
	WhenBudget          = "budget"
	WhenIdle            = "idle"
	WhenQuery           = "query"
)

// Actions.
const (
	ActionBadge   = "badge"
	ActionWebhook = "webhook"
	ActionCancel  = "cancel"
)

// Per values of a budget rule.
const (
	PerSession = "session"
	PerTurn    = "turn"
)

var (
	kinds   = []string{WhenPending, WhenApprovalWaiting, WhenLoop, WhenErrorStreak, WhenBudget, WhenIdle, WhenQuery}
	actions = []string{ActionBadge, ActionWebhook, ActionCancel}
)

// Rule is one validated [[rule]].
type Rule struct {
	// Name is shown on badges and in webhooks.
	Name string `json:"name"`
	// When is the rule's kind (When* constants).
	When string `json:"when"`
	// For is how long a condition must last (pending, approval-waiting,
	// idle).
	For time.Duration `json:"for,omitempty"`
	// Tools limits pending and loop rules to these tools (none: any).
	Tools []string `json:"tools,omitempty"`
	// Count is loop's repetitions and error-streak's errors in a row.
	Count int `json:"count,omitempty"`
	// USD and Tokens are a budget rule's limits (one of them).
	USD    float64 `json:"usd,omitempty"`
	Tokens int64   `json:"tokens,omitempty"`
	// Per is a budget's scope: PerSession or PerTurn.
	Per string `json:"per,omitempty"`
	// Query is a query rule's text, parsed into Parsed.
	Query  string        `json:"query,omitempty"`
	Parsed *search.Query `json:"-"`
	// Actions are what a firing does (badge always).
	Actions []string `json:"actions"`
	// Line is the line of the rule's [[rule]] header in the file.
	Line int `json:"line"`
}

// Has reports whether the rule has action a.
func (r *Rule) Has(a string) bool { return slices.Contains(r.Actions, a) }

// appliesTo reports whether the rule's tools filter admits tool.
func (r *Rule) appliesTo(tool string) bool {
	return len(r.Tools) == 0 || slices.Contains(r.Tools, tool)
}

// Webhook is the [webhook] table: where webhook actions POST, and the
// secret their bodies are signed with (never shown).
type Webhook struct {
	URL    string
	Secret string
	// Timeout bounds one delivery attempt; Retries is how many times a
	// failed one is retried (with backoff) before it is given up.
	Timeout time.Duration
	Retries int
}

// Rules is a parsed rules file.
type Rules struct {
	Rules   []Rule
	Webhook *Webhook
}

// Options are what validation needs to know of the server.
type Options struct {
	// Prices says whether a price table is loaded (--prices): a budget in
	// usd needs one.
	Prices bool
	// ListenAddr is prism's own listen address (--addr): a webhook URL
	// pointing at it is refused (it would post to itself).
	ListenAddr string
	// OTLPAddr is prism's OTLP listener (--otlp-addr, "" = none): a
	// webhook URL pointing at it is refused as ListenAddr is.
	OTLPAddr string
}

// Error is a rules file that cannot be used, naming the line.
type Error struct {
	File string
	Line int // 0 when the error has no line
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

type rawRule struct {
	Name    string   `toml:"name"`
	When    string   `toml:"when"`
	For     string   `toml:"for"`
	Tools   []string `toml:"tools"`
	Count   int      `toml:"count"`
	USD     float64  `toml:"usd"`
	Tokens  int64    `toml:"tokens"`
	Per     string   `toml:"per"`
	Query   string   `toml:"query"`
	Actions []string `toml:"actions"`
}

type rawFile struct {
	Rule    []rawRule `toml:"rule"`
	Webhook *struct {
		URL     string `toml:"url"`
		Secret  string `toml:"secret"`
		Timeout string `toml:"timeout"`
		Retries *int   `toml:"retries"`
	} `toml:"webhook"`
}

var (
	ruleHeader    = regexp.MustCompile(`^\s*\[\[\s*rule\s*\]\]`)
	webhookHeader = regexp.MustCompile(`^\s*\[\s*webhook\s*\]`)
	anyHeader     = regexp.MustCompile(`^\s*\[`)
	keyLine       = regexp.MustCompile(`^\s*"?([A-Za-z0-9_-]+)"?\s*=`)
)

// lines maps the file's tables and keys to their lines: rules[i] is the
// line of the i-th [[rule]] header, keys[i][k] the line of its key k;
// webhook and webhookKeys the same for [webhook].
type lines struct {
	rules       []int
	keys        []map[string]int
	webhook     int
	webhookKeys map[string]int
}

func scanLines(data []byte) lines {
	var l lines
	l.webhookKeys = map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	cur := map[string]int(nil)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		switch {
		case ruleHeader.MatchString(text):
			l.rules = append(l.rules, n)
			cur = map[string]int{}
			l.keys = append(l.keys, cur)
		case webhookHeader.MatchString(text):
			l.webhook, cur = n, l.webhookKeys
		case anyHeader.MatchString(text):
			cur = nil
		default:
			if m := keyLine.FindStringSubmatch(text); m != nil && cur != nil {
				if _, seen := cur[m[1]]; !seen {
					cur[m[1]] = n
				}
			}
		}
	}
	return l
}

// Parse reads and validates a rules file (file names it in errors). Every
// error is an *Error naming the line: TOML that does not parse, an unknown
// key, kind or action, a bad duration or count, a query that does not
// parse or uses a session-level or note operator, a budget in usd without
// prices, a webhook URL that is not http(s) or is prism's own address, a
// webhook action without a [webhook] table.
func Parse(file string, data []byte, o Options) (*Rules, error) {
	var raw rawFile
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{File: file, Line: pe.Position.Line, Msg: pe.Message}
		}
		return nil, &Error{File: file, Msg: err.Error()}
	}
	ln := scanLines(data)
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		line := 0
		switch {
		case len(k) >= 2 && k[0] == "webhook":
			line = ln.webhookKeys[k[1]]
		case len(k) >= 1 && k[0] == "rule":
			// Which rule: the first whose key lines hold it.
			for _, keys := range ln.keys {
				if n, ok := keys[k[len(k)-1]]; ok {
					line = n
					break
				}
			}
		}
		return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("unknown key %q", k.String())}
	}
	out := &Rules{}
	names := map[string]int{}
	for i, rr := range raw.Rule {
		line, keys := 0, map[string]int{}
		if i < len(ln.rules) {
			line, keys = ln.rules[i], ln.keys[i]
		}
		at := func(key string) int {
			if n, ok := keys[key]; ok {
				return n
			}
			return line
		}
		fail := func(key, format string, args ...any) error {
			name := rr.Name
			if name == "" {
				name = fmt.Sprintf("#%d", i+1)
			}
			return &Error{File: file, Line: at(key), Msg: fmt.Sprintf("rule %s: ", name) + fmt.Sprintf(format, args...)}
		}
		r := Rule{Name: strings.TrimSpace(rr.Name), When: rr.When, Tools: rr.Tools, Count: rr.Count, USD: rr.USD, Tokens: rr.Tokens, Per: rr.Per, Query: rr.Query, Line: line}
		if r.Name == "" {
			return nil, fail("name", "needs a name (shown on badges and in webhooks)")
		}
		if prev, dup := names[r.Name]; dup {
			return nil, fail("name", "the name %q is already the rule's on line %d", r.Name, prev)
		}
		names[r.Name] = line
		if !slices.Contains(kinds, r.When) {
			return nil, fail("when", "unknown kind %q (known: %s)", rr.When, strings.Join(kinds, ", "))
		}
		needsFor := r.When == WhenPending || r.When == WhenApprovalWaiting || r.When == WhenIdle
		switch {
		case needsFor && rr.For == "":
			return nil, fail("for", "a %s rule needs for, a duration such as \"2m\"", r.When)
		case needsFor:
			d, err := time.ParseDuration(rr.For)
			if err != nil || d <= 0 {
				return nil, fail("for", "bad duration %q: want a positive Go duration such as \"90s\" or \"2m\"", rr.For)
			}
			r.For = d
		case rr.For != "":
			return nil, fail("for", "for applies to pending, approval-waiting and idle rules only, not %s", r.When)
		}
		if len(r.Tools) > 0 && r.When != WhenPending && r.When != WhenLoop {
			return nil, fail("tools", "tools applies to pending and loop rules only, not %s", r.When)
		}
		switch r.When {
		case WhenLoop, WhenErrorStreak:
			if r.Count < 2 {
				return nil, fail("count", "a %s rule needs count of at least 2, got %d", r.When, r.Count)
			}
		default:
			if r.Count != 0 {
				return nil, fail("count", "count applies to loop and error-streak rules only, not %s", r.When)
			}
		}
		if r.When == WhenBudget {
			switch {
			case (r.USD > 0) == (r.Tokens > 0):
				return nil, fail("usd", "a budget rule needs one positive limit: usd = 2.0 or tokens = 500000")
			case r.USD > 0 && !o.Prices:
				return nil, fail("usd", "a budget in usd needs a price table (--prices); or give tokens instead")
			}
			switch r.Per {
			case "":
				r.Per = PerSession
			case PerSession, PerTurn:
			default:
				return nil, fail("per", "per must be %q or %q, got %q", PerSession, PerTurn, r.Per)
			}
		} else if r.USD != 0 || r.Tokens != 0 || r.Per != "" {
			return nil, fail("usd", "usd, tokens and per apply to budget rules only, not %s", r.When)
		}
		if r.When == WhenQuery {
			q, err := ParseQuery(r.Query)
			if err != nil {
				return nil, fail("query", "%v", err)
			}
			r.Parsed = q
		} else if r.Query != "" {
			return nil, fail("query", "query applies to query rules only, not %s", r.When)
		}
		r.Actions = []string{ActionBadge}
		for _, a := range rr.Actions {
			if !slices.Contains(actions, a) {
				return nil, fail("actions", "unknown action %q (known: %s)", a, strings.Join(actions, ", "))
			}
			if !slices.Contains(r.Actions, a) {
				r.Actions = append(r.Actions, a)
			}
			if a == ActionWebhook && raw.Webhook == nil {
				return nil, fail("actions", "the webhook action needs a [webhook] table with its url")
			}
		}
		out.Rules = append(out.Rules, r)
	}
	if w := raw.Webhook; w != nil {
		wl := func(key string) int {
			if n, ok := ln.webhookKeys[key]; ok {
				return n
			}
			return ln.webhook
		}
		if err := checkURL(w.URL, ownAddr{o.ListenAddr, "--addr"}, ownAddr{o.OTLPAddr, "--otlp-addr"}); err != nil {
			return nil, &Error{File: file, Line: wl("url"), Msg: "webhook: " + err.Error()}
		}
		hook := &Webhook{URL: w.URL, Secret: w.Secret, Timeout: 10 * time.Second, Retries: 3}
		if w.Timeout != "" {
			d, err := time.ParseDuration(w.Timeout)
			if err != nil || d <= 0 {
				return nil, &Error{File: file, Line: wl("timeout"), Msg: fmt.Sprintf("webhook: bad duration %q for timeout: want a positive Go duration such as \"5s\"", w.Timeout)}
			}
			hook.Timeout = d
		}
		if w.Retries != nil {
			if *w.Retries < 0 || *w.Retries > 20 {
				return nil, &Error{File: file, Line: wl("retries"), Msg: fmt.Sprintf("webhook: retries must be from 0 to 20, got %d", *w.Retries)}
			}
			hook.Retries = *w.Retries
		}
		out.Webhook = hook
	}
	return out, nil
}

// ownAddr is an address prism listens on, and the flag that set it.
type ownAddr struct{ addr, flag string }

// checkURL refuses a webhook URL that is not http(s)://host… or that
// names one of prism's own listen addresses (own): the same port, and the
// same host or a name of this machine for it — localhost, a loopback or
// unspecified address (0.0.0.0, [::]) for a listener on loopback or on
// every address. Another port on loopback is fine (a relay), and so is any
// other name: nothing is looked up (a service-name port is read from the
// system's services table). Ports compare as numbers, addresses without
// their zone.
func checkURL(raw string, own ...ownAddr) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url must be an http(s) URL such as https://hooks.example.com/prism, got %q", raw)
	}
	port := u.Port()
	if port == "" {
		port = u.Scheme
	}
	for _, o := range own {
		if o.addr == "" {
			continue
		}
		lh, lp, err := net.SplitHostPort(o.addr)
		if err != nil || !samePort(port, lp) {
			continue
		}
		if sameHost(u.Hostname(), lh) {
			return fmt.Errorf("url %q is prism's own listen address %s (%s): a webhook would post to prism itself", raw, o.addr, o.flag)
		}
	}
	return nil
}

// samePort reports whether two ports are one: as numbers ("08080" is
// 8080), a service name by the system's services table ("http" is 80; no
// network lookup).
func samePort(a, b string) bool {
	num := func(p string) (int, bool) {
		if n, err := strconv.ParseUint(p, 10, 16); err == nil {
			return int(n), true
		}
		n, err := net.LookupPort("tcp", p)
		return n, err == nil
	}
	na, okA := num(a)
	nb, okB := num(b)
	return okA && okB && na == nb
}

// hostAddr is host as an IP address without its zone ("::1%lo" is ::1),
// IPv4-mapped ones as IPv4, and whether it is one.
func hostAddr(h string) (netip.Addr, bool) {
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i]
	}
	a, err := netip.ParseAddr(h)
	return a.Unmap(), err == nil
}

// sameHost reports whether a URL's host reaches the listen host: equal
// names or addresses, or a name of this machine (localHost) for a
// listener on loopback or on every address.
func sameHost(h, listen string) bool {
	if strings.EqualFold(strings.TrimSuffix(h, "."), strings.TrimSuffix(listen, ".")) {
		return true
	}
	if a, ok := hostAddr(h); ok {
		if b, ok := hostAddr(listen); ok && a == b {
			return true
		}
	}
	if !localHost(h) {
		return false
	}
	if listen == "" {
		return true // every address
	}
	if a, ok := hostAddr(listen); ok && a.IsUnspecified() {
		return true
	}
	return localHost(listen)
}

// localHost reports a host that names this machine without a lookup:
// localhost (and its subdomains, RFC 6761), a loopback address
// (127.0.0.0/8, ::1, IPv4-mapped too) or an unspecified one (0.0.0.0,
// ::), which a connection takes for this machine.
func localHost(h string) bool {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, ok := hostAddr(h)
	return ok && (a.IsLoopback() || a.IsUnspecified())
}

// ParseQuery parses a query rule's query: the search language, without
// the operators that are not about one card (status:, session:, after:,
// before:) or that read notes (label:, has:).
func ParseQuery(q string) (*search.Query, error) {
	if strings.TrimSpace(q) == "" {
		return nil, fmt.Errorf("a query rule needs a query, e.g. 'tool:bash \"rm -rf\"'")
	}
	parsed, err := search.Parse(q, time.Unix(0, 0))
	if err != nil {
		return nil, fmt.Errorf("query %q does not parse: %v", q, err)
	}
	for _, c := range parsed.Clauses {
		for _, t := range c.Terms {
			switch t.Field {
			case search.FieldStatus, search.FieldSession, search.FieldAfter, search.FieldBefore:
				return nil, fmt.Errorf("query %q: %s: is about a whole session or a date, not a card; a rule's query may use words, phrases and the operators tool, error and kind", q, t.Field)
			case search.FieldLabel, search.FieldHas:
				return nil, fmt.Errorf("query %q: %s: reads notes, which a rule cannot watch; a rule's query may use words, phrases and the operators tool, error and kind", q, t.Field)
			}
		}
	}
	return parsed, nil
}
