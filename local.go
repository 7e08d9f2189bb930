package supervaizer

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/supervaize/supervaizer-go/internal/loopback"
)

// Local mode stays local (spec item 68): it serves only requests whose Host
// is a loopback name or address, so that a page on another site cannot drive
// the agent through the visitor's browser with the published development key
// (DNS rebinding), and it refuses to listen on a non-loopback address.

// refuseNonLocalHost answers 403 to a request whose Host is not a loopback name
// or address when the server is in local mode, and reports whether it did.
func (s *Server) refuseNonLocalHost(w http.ResponseWriter, r *http.Request) bool {
	if !s.cfg.localMode || loopback.Host(r.Host) {
		return false
	}
	s.logger.LogAttrs(r.Context(), slog.LevelWarn, "access denied", slog.String("path", r.URL.Path),
		slog.String("reason", "local mode serves only requests addressed to localhost or a loopback IP"), slog.String("host", r.Host))
	writeDetail(w, http.StatusForbidden, "Local mode serves only requests addressed to localhost or a loopback IP address")
	return true
}

// checkLocalListen refuses, in local mode, to listen on addr unless it is a
// loopback IP address.
func (s *Server) checkLocalListen(addr net.Addr) error {
	if !s.cfg.localMode || loopback.Addr(addr.String()) {
		return nil
	}
	return fmt.Errorf("supervaizer: local mode listens only on a loopback address, not on %s: set %s (or WithAddr) to 127.0.0.1:PORT, or turn local mode off (SUPERVAIZER_LOCAL_MODE, WithLocalMode) and configure workspace authorization", addr, envAddr)
}

// checkLocalListenAddr is checkLocalListen for an address not yet bound
// (host:port): a host name other than "localhost", or an empty host (every
// interface), is refused.
func (s *Server) checkLocalListenAddr(addr string) error {
	if !s.cfg.localMode {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err == nil && (host == "localhost" || loopback.Addr(host)) {
		return nil
	}
	return fmt.Errorf("supervaizer: local mode listens only on a loopback address, not on %q: set %s (or WithAddr) to 127.0.0.1:PORT, or turn local mode off (SUPERVAIZER_LOCAL_MODE, WithLocalMode) and configure workspace authorization", addr, envAddr)
}
