package model

import (
	"net/url"
	"slices"
	"strings"
)

// Redacted replaces a secret in text that is shown or stored.
const Redacted = "[REDACTED]"

// minSecret is the shortest credential scrubbed from free text: shorter
// ones would match ordinary words (they are still removed from URLs).
const minSecret = 4

// credentialParam matches query parameter names that carry credentials
// (api_key, apikey, key, access_token, token, secret, password, sig, …).
func credentialParam(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"key", "token", "secret", "passw", "pwd", "auth", "sig", "credential", "session"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// RedactURL returns raw with its credentials replaced by Redacted: the
// user information (user:password@, or a bare token@) and the values of
// credential-like query parameters (?api_key=, ?token=, ?sig=, …). A value
// that does not parse as a URL is replaced whole, since there is no telling
// where its secrets are.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Redacted
	}
	if u.User != nil {
		u.User = url.User(Redacted)
	}
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			name, _, ok := strings.Cut(p, "=")
			if dec, err := url.QueryUnescape(name); err == nil {
				name = dec
			}
			if ok && credentialParam(name) {
				parts[i] = p[:strings.IndexByte(p, '=')+1] + Redacted
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	// url.URL.String escapes the brackets of the marker; undo that.
	s := u.String()
	return strings.NewReplacer(url.PathEscape(Redacted), Redacted, url.QueryEscape(Redacted), Redacted).Replace(s)
}

// Scrubber removes the configured API key and the credentials of the base
// URL from text: every error message a model client produces goes through
// it before it is logged, stored in a session log or shown, since a
// provider may echo the Authorization header or the request URL back.
// Its zero value scrubs nothing. It is safe for concurrent use.
type Scrubber struct {
	r *strings.Replacer
}

// NewScrubber returns a Scrubber for an API key and a base URL, and any
// other secret the caller holds (an owner token).
func NewScrubber(apiKey, baseURL string, more ...string) *Scrubber {
	var pairs []string
	add := func(from, to string) {
		if len(from) >= minSecret && from != to {
			pairs = append(pairs, from, to)
		}
	}
	// The whole URL first (its shown form keeps the host and path), then
	// each secret alone and in its escaped forms.
	add(baseURL, RedactURL(baseURL))
	secrets := append([]string{apiKey}, more...)
	if u, err := url.Parse(baseURL); err == nil {
		if u.User != nil {
			add(u.User.String()+"@", Redacted+"@")
			pass, hasPass := u.User.Password()
			if hasPass {
				secrets = append(secrets, pass)
			} else {
				secrets = append(secrets, u.User.Username()) // a bare token@host
			}
		}
		for name, values := range u.Query() {
			if credentialParam(name) {
				secrets = append(secrets, values...)
			}
		}
	}
	// Longer secrets first, so one that contains another is replaced whole.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, s := range secrets {
		for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s), url.User(s).String()} {
			add(form, Redacted)
		}
	}
	if len(pairs) == 0 {
		return &Scrubber{}
	}
	return &Scrubber{r: strings.NewReplacer(pairs...)}
}

// Scrub returns text with every secret replaced by Redacted.
func (s *Scrubber) Scrub(text string) string {
	if s == nil || s.r == nil {
		return text
	}
	return s.r.Replace(text)
}

// scrubbedError is an error whose text was scrubbed; it still unwraps to
// its cause for errors.Is (a cancellation, a timeout).
type scrubbedError struct {
	msg   string
	cause error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.cause }

// ScrubError returns e with its message and its cause's text scrubbed.
func (s *Scrubber) ScrubError(e *Error) *Error {
	if e == nil || s == nil || s.r == nil {
		return e
	}
	out := &Error{Failure: e.Failure}
	out.Failure.Message = s.Scrub(e.Failure.Message)
	if e.Err != nil {
		out.Err = &scrubbedError{msg: s.Scrub(e.Err.Error()), cause: e.Err}
	}
	return out
}
