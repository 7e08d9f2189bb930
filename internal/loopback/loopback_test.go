package loopback

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHost(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"LOCALHOST:8080", true},
		{"localhost.:80", true},
		{"127.0.0.1", true},
		{"127.0.0.1:8080", true},
		{"127.1.2.3:1", true},
		{"[::1]:8080", true},
		{"[::1]", true},
		{"::1", true},
		{"", false},
		{"rebind.example", false},
		{"rebind.example:8080", false},
		{"localhost.rebind.example", false},
		{"127.0.0.1.nip.io", false},
		{"0.0.0.0:8080", false},
		{"[::]:8080", false},
		{"10.0.0.1", false},
		{"[::ffff:10.0.0.1]:80", false},
		{"[::ffff:127.0.0.1]:80", true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Host(tt.host), "Host(%q)", tt.host)
	}
}

func TestAddr(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true},
		{"[::1]:0", true},
		{"127.0.0.1", true},
		{"0.0.0.0:8080", false},
		{"[::]:8080", false},
		{":8080", false},
		{"localhost:8080", false},
		{"192.168.1.2:80", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Addr(tt.addr), "Addr(%q)", tt.addr)
	}
}

func FuzzHost(f *testing.F) {
	for _, s := range []string{"localhost:1", "[::1]:2", "127.0.0.1", "evil.example", "[", "::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Every loopback address is also a loopback host: the two checks
		// never disagree on an IP.
		if Addr(s) && !Host(s) {
			t.Fatalf("Addr(%q) but not Host(%q)", s, s)
		}
	})
}
