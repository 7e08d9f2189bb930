package client

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGuardCheck(t *testing.T) {
	type allow struct{ loopback, private bool }
	none, lo, priv, both := allow{}, allow{loopback: true}, allow{private: true}, allow{true, true}
	tests := []struct {
		ip    string
		plain bool
		ok    []allow // the configurations that admit it
		want  error   // the refusal otherwise
	}{
		{"93.184.216.34", false, []allow{none, lo, priv, both}, nil},
		{"2606:2800:220:1:248:1893:25c8:1946", false, []allow{none, lo, priv, both}, nil},
		{"169.254.169.254", false, nil, ErrAddressRefused},
		{"169.254.1.1", false, nil, ErrAddressRefused},
		{"::ffff:169.254.169.254", false, nil, ErrAddressRefused},
		{"64:ff9b::a9fe:a9fe", false, nil, ErrAddressRefused},
		{"fd00:ec2::254", false, nil, ErrAddressRefused},
		{"fe80::1", false, nil, ErrAddressRefused},
		{"100.100.100.200", false, nil, ErrAddressRefused},
		{"168.63.129.16", false, nil, ErrAddressRefused},
		{"0.0.0.0", false, nil, ErrAddressRefused},
		{"::", false, nil, ErrAddressRefused},
		{"224.0.0.1", false, nil, ErrAddressRefused},
		{"255.255.255.255", false, nil, ErrAddressRefused},
		{"127.0.0.1", false, []allow{lo, both}, ErrAddressRefused},
		{"127.5.6.7", true, []allow{lo, both}, ErrAddressRefused},
		{"::1", false, []allow{lo, both}, ErrAddressRefused},
		{"::ffff:127.0.0.1", false, []allow{lo, both}, ErrAddressRefused},
		{"10.0.0.1", false, []allow{priv, both}, ErrAddressRefused},
		{"172.16.5.4", false, []allow{priv, both}, ErrAddressRefused},
		{"192.168.1.1", false, []allow{priv, both}, ErrAddressRefused},
		{"100.64.0.1", false, []allow{priv, both}, ErrAddressRefused},
		{"fd12:3456::1", false, []allow{priv, both}, ErrAddressRefused},
		{"10.0.0.1", true, nil, ErrInsecureURL},
		{"93.184.216.34", true, nil, ErrInsecureURL},
	}
	for _, tt := range tests {
		for _, cfg := range []allow{none, lo, priv, both} {
			g := guard(cfg)
			err := g.check(netip.MustParseAddr(tt.ip), tt.plain)
			admitted := false
			for _, a := range tt.ok {
				admitted = admitted || a == cfg
			}
			if admitted {
				assert.NoError(t, err, "%s plain=%v %+v", tt.ip, tt.plain, cfg)
			} else {
				assert.ErrorIs(t, err, tt.want, "%s plain=%v %+v", tt.ip, tt.plain, cfg)
			}
		}
	}
}

func TestGuardControl(t *testing.T) {
	g := guard{}
	assert.ErrorIs(t, g.control(false)("tcp", "169.254.169.254:80", nil), ErrAddressRefused)
	assert.ErrorIs(t, g.control(false)("tcp6", "[fe80::1%eth0]:443", nil), ErrAddressRefused)
	assert.ErrorIs(t, g.control(false)("tcp", "not-an-address", nil), ErrAddressRefused)
	assert.ErrorIs(t, g.control(false)("tcp", "host.example:443", nil), ErrAddressRefused)
	assert.NoError(t, g.control(false)("tcp", "93.184.216.34:443", nil))
	assert.True(t, errors.Is(g.control(true)("tcp", "93.184.216.34:80", nil), ErrInsecureURL))
}
