package attention_test

import (
	"strings"
	"testing"

	"prism/core/attention"
)

// TestWebhookRefusesPrismsOwnAddresses: a webhook URL that reaches
// prism's own listener (--addr) or its OTLP listener (--otlp-addr) — the
// same port and the listen host, or a name of this machine (localhost, a
// loopback or unspecified address) for a listener on loopback or on every
// address — is refused with an error naming the URL and the address it
// matches; another port, or any other name, is a webhook like any.
func TestWebhookRefusesPrismsOwnAddresses(t *testing.T) {
	refused := []struct{ listen, otlp, url, names string }{
		{"127.0.0.1:8080", "", "http://localhost:8080/x", "127.0.0.1:8080 (--addr)"},
		{"127.0.0.1:8080", "", "http://127.0.0.1:8080/x", "127.0.0.1:8080 (--addr)"},
		{"127.0.0.1:8080", "", "http://[::1]:8080/x", "127.0.0.1:8080 (--addr)"},
		{"127.0.0.1:8080", "", "http://0.0.0.0:8080/x", "127.0.0.1:8080 (--addr)"},
		{"127.0.0.1:8080", "", "http://[::]:8080/x", "127.0.0.1:8080 (--addr)"},
		{"127.0.0.1:8080", "", "http://LocalHost.:8080/x", "127.0.0.1:8080 (--addr)"},
		{"localhost:8080", "", "http://0.0.0.0:8080/x", "localhost:8080 (--addr)"},
		{":8080", "", "http://0.0.0.0:8080/x", ":8080 (--addr)"},
		{":8080", "", "http://[::1]:8080/x", ":8080 (--addr)"},
		{"0.0.0.0:8080", "", "http://localhost:8080/x", "0.0.0.0:8080 (--addr)"},
		{"[::]:443", "", "https://127.0.0.1/x", "[::]:443 (--addr)"},
		{"192.168.1.5:8080", "", "http://192.168.1.5:8080/x", "192.168.1.5:8080 (--addr)"},
		{"127.0.0.1:8080", "127.0.0.1:4318", "http://localhost:4318/v1/traces", "127.0.0.1:4318 (--otlp-addr)"},
		{"127.0.0.1:8080", "127.0.0.1:4318", "http://0.0.0.0:4318/v1/traces", "127.0.0.1:4318 (--otlp-addr)"},
		{"127.0.0.1:8080", ":4318", "http://[::1]:4318/v1/traces", ":4318 (--otlp-addr)"},
		// Other spellings of the same address and port.
		{"127.0.0.1:8080", "", "http://[::1%25lo]:8080/x", "127.0.0.1:8080 (--addr)"},
		{":8080", "", "http://localhost:08080/x", ":8080 (--addr)"},
		{":http", "", "http://localhost/x", ":http (--addr)"},
		{"[::1]:8080", "", "http://[0:0:0:0:0:0:0:1]:8080/x", "[::1]:8080 (--addr)"},
		{"[::ffff:127.0.0.1]:8080", "", "http://127.0.0.1:8080/x", "[::ffff:127.0.0.1]:8080 (--addr)"},
	}
	for _, c := range refused {
		file := "[webhook]\nurl = \"" + c.url + "\"\n"
		_, err := attention.Parse("r.toml", []byte(file), attention.Options{ListenAddr: c.listen, OTLPAddr: c.otlp})
		if err == nil {
			t.Errorf("listen %s, otlp %q: webhook %s accepted, want refused: it posts to prism itself", c.listen, c.otlp, c.url)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, `"`+c.url+`"`) || !strings.Contains(msg, "prism's own listen address "+c.names) {
			t.Errorf("listen %s, otlp %q, webhook %s: error %q, want it to name the URL and %s", c.listen, c.otlp, c.url, msg, c.names)
		}
	}
	allowed := []struct{ listen, otlp, url string }{
		{"127.0.0.1:8080", "127.0.0.1:4318", "http://127.0.0.1:9000/x"},         // a relay on another port
		{"127.0.0.1:8080", "127.0.0.1:4318", "http://hooks.example.com:8080/x"}, // another name: never looked up
		{"192.168.1.5:8080", "", "http://localhost:8080/x"},                     // prism is not on loopback
		{"127.0.0.1:8080", "", "http://localhost:4318/x"},                       // no OTLP listener
	}
	for _, c := range allowed {
		file := "[webhook]\nurl = \"" + c.url + "\"\n"
		if _, err := attention.Parse("r.toml", []byte(file), attention.Options{ListenAddr: c.listen, OTLPAddr: c.otlp}); err != nil {
			t.Errorf("listen %s, otlp %q: webhook %s refused: %v", c.listen, c.otlp, c.url, err)
		}
	}
}
