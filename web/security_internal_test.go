package web

import (
	"net"
	"testing"
)

// TestHostPolicy_SpecificAddress: a server bound to one non-loopback
// address answers that address and the loopback names, not other names; a
// non-TCP listener is not restricted.
func TestHostPolicy_SpecificAddress(t *testing.T) {
	p := newHostPolicy(&net.TCPAddr{IP: net.ParseIP("192.168.1.5"), Port: 8080}, nil)
	for host, want := range map[string]bool{
		"192.168.1.5:8080": true, "192.168.1.5": true, "localhost:8080": true,
		"evil.example:8080": false, "192.168.1.6:8080": false, "": true,
	} {
		if got := p.allows(host); got != want {
			t.Errorf("allows(%q) = %v, want %v", host, got, want)
		}
	}
	if p := newHostPolicy(&net.UnixAddr{Name: "/tmp/prism.sock", Net: "unix"}, nil); !p.allows("anything") {
		t.Error("a unix-socket server refused a host")
	}
}
