package web

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"prism/views"
)

// csp allows scripts only from this origin; 'unsafe-eval' is what Datastar
// needs to compile its data-* expressions (there is no inline script).
// Images come from this origin or from data: URLs — the image card's
// thumbnails, built only from image bytes an MCP server sent and carried in
// the log (never a remote fetch).
const csp = "default-src 'self'; script-src 'self' 'unsafe-eval'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		return next(c)
	}
}

// sameOrigin refuses state-changing requests from other sites — a page on
// the web must not be able to start or cancel sessions on a loopback prism —
// with net/http's CrossOriginProtection: GET, HEAD and OPTIONS pass; so does
// a request whose Sec-Fetch-Site (a header pages cannot set) says
// same-origin or none; any other Sec-Fetch-Site is refused; without one, an
// Origin whose host is not the request's Host is refused (our pages send no
// referrer, so their forms post Origin: null with Sec-Fetch-Site:
// same-origin). Share links are exempt: they write nothing, and any other
// method is their 404. The refusal is prism's error answer (403, FORBIDDEN,
// JSON or the error page), through Echo's error handler.
func sameOrigin() echo.MiddlewareFunc {
	p := http.NewCrossOriginProtection()
	p.AddInsecureBypassPattern(views.ShareRoutePrefix)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if err := p.Check(r); err != nil {
				if r.Header.Get("Sec-Fetch-Site") != "" {
					return echo.NewHTTPError(http.StatusForbidden, "cross-site request refused").SetInternal(err)
				}
				return echo.NewHTTPError(http.StatusForbidden, "cross-origin request refused").SetInternal(err)
			}
			return next(c)
		}
	}
}

// loopbackNames are the hosts a loopback server always answers: names a
// web page cannot point at another address (DNS rebinding needs a name
// the attacker controls).
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// hostPolicy says which Host headers the server answers. It guards against
// DNS rebinding: a page on evil.example whose name is re-pointed at
// 127.0.0.1 reaches a loopback prism as same-origin, but its requests
// still say Host: evil.example.
type hostPolicy struct {
	open      bool            // any Host is answered
	names     map[string]bool // hostnames (lowercase, IPv6 without brackets), any port
	hostPorts map[string]bool // host:port entries of Deps.AllowedHosts
	listen    string          // the listen address, for the refusal message
}

// newHostPolicy returns the policy of a server listening on addr (nil: a
// Handler user, taken to listen on loopback as httptest does):
//   - a loopback address answers localhost, 127.0.0.1 and ::1 (any port)
//     and the AllowedHosts;
//   - an unspecified address (0.0.0.0, ::, e.g. in a container), or a
//     listener that is not TCP, answers any Host — unless AllowedHosts is
//     set, which restricts it as on loopback;
//   - another specific address answers that address too.
//
// An AllowedHosts entry is a host name (any port) or host:port.
func newHostPolicy(addr net.Addr, allowed []string) *hostPolicy {
	p := &hostPolicy{names: map[string]bool{}, hostPorts: map[string]bool{}}
	for _, n := range loopbackNames {
		p.names[n] = true
	}
	restricted := false // AllowedHosts is set
	for _, a := range allowed {
		a = strings.ToLower(strings.TrimSpace(a))
		if a == "" {
			continue
		}
		restricted = true
		if h, port, err := net.SplitHostPort(a); err == nil && port != "" {
			p.hostPorts[net.JoinHostPort(h, port)] = true
		} else {
			p.names[strings.Trim(a, "[]")] = true
		}
	}
	if addr == nil {
		p.listen = "a loopback address"
		return p
	}
	p.listen = addr.String()
	t, ok := addr.(*net.TCPAddr)
	switch {
	case !ok || t.IP == nil || t.IP.IsUnspecified():
		p.open = !restricted
	case !t.IP.IsLoopback():
		p.names[t.IP.String()] = true
	}
	return p
}

// allows reports whether a request for hostport is answered. A request
// without Host (HTTP/1.0) is: browsers always send one.
func (p *hostPolicy) allows(hostport string) bool {
	if p.open || hostport == "" {
		return true
	}
	hp := strings.ToLower(hostport)
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		host, port = hp, ""
	}
	host = strings.Trim(host, "[]")
	if p.names[host] {
		return true
	}
	return port != "" && p.hostPorts[net.JoinHostPort(host, port)]
}

// checkHost refuses requests for a Host the server does not answer
// (hostPolicy) with 403.
func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := s.hosts.Load()
		if host := c.Request().Host; !p.allows(host) {
			return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf(
				"host %q refused: this server listens on %s and answers only localhost, 127.0.0.1, [::1] and the hosts it is configured to allow (a guard against DNS rebinding); open it as http://localhost or http://127.0.0.1",
				host, p.listen))
		}
		return next(c)
	}
}
