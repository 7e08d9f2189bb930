// Package loopback tells loopback host names and addresses from others: the
// rule of local mode (spec item 68), which serves only requests addressed to
// this machine, and of the local preview.
package loopback

import (
	"net"
	"strings"
)

// Host reports whether host, a Host header or URL host with or without a
// port, names this machine: "localhost" (any case, with or without a
// trailing dot), an IPv4 address in 127.0.0.0/8, or the IPv6 loopback ::1
// (bracketed or not).
func Host(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Addr reports whether addr, an "ip:port" address (a listener's or a
// connection's) or a bare IP, is a loopback IP address. Host names are not
// resolved: "localhost:80" is not an address.
func Addr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
