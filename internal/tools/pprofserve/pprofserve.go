// Package pprofserve serves net/http/pprof on a loopback address, for the
// load check's profiled runs (go run ./internal/tools/loadcheck -profile
// DIR): the load check's -serve children and the research agent's -tags
// pprof build serve their profiles with it. Nothing in the library imports
// it.
package pprofserve

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"regexp"
	"runtime"
	"time"
)

// Announced matches the line [Serve] writes; its group is the base URL of
// the profiles (http://HOST:PORT).
var Announced = regexp.MustCompile(`pprof: serving profiles on (http://[^/\s]+)/debug/pprof/`)

// errNotLoopback is returned for an address whose host is not a loopback IP
// address.
var errNotLoopback = errors.New("need a loopback IP address (127.0.0.1:PORT or [::1]:PORT): profiles are never served on another interface")

// HeapSampleRate is the runtime.MemProfileRate a process serving its
// profiles runs with: one allocation sampled every 32 KiB on average, against
// the runtime's 512 KiB, so that the heap profile of a controller holding
// about 10 MB has hundreds of samples instead of about twenty. Sampling costs
// the profiled process CPU, which its CPU profile shows (runtime.profilealloc):
// at 4 KiB it was 13 % of the research agent's under the load check, and
// allocation-heavy code looked heavier than it is; at 32 KiB, 3 %.
const HeapSampleRate = 32 << 10

// Serve listens on addr, a host:port whose host is a loopback IP address
// (port 0: a free one), serves net/http/pprof there in the background, and
// writes "pprof: serving profiles on http://HOST:PORT/debug/pprof/" to
// announce. It refuses any other address before listening. Allocations from
// then on are sampled at [HeapSampleRate]: call it as early as possible (an
// init function of package main).
func Serve(addr string, announce io.Writer) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("need host:port: %w", err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return errNotLoopback
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	runtime.MemProfileRate = HeapSampleRate
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	_, err = fmt.Fprintf(announce, "pprof: serving profiles on http://%s/debug/pprof/\n", ln.Addr())
	return err
}
