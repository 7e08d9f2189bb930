package client

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// guard decides which addresses the client may connect to. It is applied to
// the IP address actually dialed (net.Dialer.Control runs after name
// resolution, once per address tried), so a host name that resolves, or
// later re-resolves, to a refused address never gets a connection: DNS
// rebinding cannot pass it.
type guard struct {
	loopback bool // loopback addresses allowed (AllowLoopback)
	private  bool // private ranges allowed (AllowPrivateNetworks)
}

// Address ranges the guard knows.
var (
	// Always refused: link-local (169.254.0.0/16 holds the cloud metadata
	// address 169.254.169.254), and the metadata and platform endpoints of
	// the main clouds outside it.
	alwaysRefused = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),          // "this network"
		netip.MustParsePrefix("169.254.0.0/16"),     // link-local, cloud metadata
		netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud metadata
		netip.MustParsePrefix("168.63.129.16/32"),   // Azure platform (wireserver)
		netip.MustParsePrefix("224.0.0.0/4"),        // multicast
		netip.MustParsePrefix("240.0.0.0/4"),        // reserved, broadcast
		netip.MustParsePrefix("fe80::/10"),          // link-local
		netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS metadata over IPv6
		netip.MustParsePrefix("ff00::/8"),           // multicast
		netip.MustParsePrefix("::/128"),             // unspecified
	}
	// Refused unless AllowPrivateNetworks.
	privateRanges = []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
		netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
		netip.MustParsePrefix("fc00::/7"),      // unique local
	}
	// nat64 is the well-known NAT64 prefix: its last 32 bits are an IPv4
	// address, judged as such.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)

// check returns nil when ip may be dialed, else an error wrapping
// [ErrAddressRefused]. A plain HTTP connection (plain) may only go to a
// loopback address.
func (g guard) check(ip netip.Addr, plain bool) error {
	ip = ip.Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	if !ip.IsValid() {
		return fmt.Errorf("%w: not an IP address", ErrAddressRefused)
	}
	for _, p := range alwaysRefused {
		if p.Contains(ip) {
			return fmt.Errorf("%w: %s is link-local, a cloud metadata address or not a unicast address", ErrAddressRefused, ip)
		}
	}
	if ip.IsLoopback() {
		if !g.loopback {
			return fmt.Errorf("%w: %s is a loopback address (AllowLoopback allows it)", ErrAddressRefused, ip)
		}
		return nil
	}
	if plain {
		return fmt.Errorf("%w: plain HTTP to %s, which is not a loopback address", ErrInsecureURL, ip)
	}
	for _, p := range privateRanges {
		if p.Contains(ip) {
			if g.private {
				return nil
			}
			return fmt.Errorf("%w: %s is a private address (AllowPrivateNetworks allows it)", ErrAddressRefused, ip)
		}
	}
	return nil
}

// control is the net.Dialer.Control of a connection: address is the
// "ip:port" about to be dialed.
func (g guard) control(plain bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrAddressRefused, err)
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return fmt.Errorf("%w: %q is not an IP address", ErrAddressRefused, host)
		}
		return g.check(ip.WithZone(""), plain)
	}
}

// plainKey marks the context of a plain HTTP request, so that its
// connection is checked as one.
type plainKey struct{}

// dialContext dials with the guard in the Control of the dialer.
func (g guard) dialContext(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		plain, _ := ctx.Value(plainKey{}).(bool)
		d := net.Dialer{Timeout: timeout, Control: g.control(plain)}
		return d.DialContext(ctx, network, addr)
	}
}
