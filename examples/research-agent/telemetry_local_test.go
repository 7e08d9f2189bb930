//go:build telemetry

package main

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTelemetryMetricsLocalMode: in local mode the metrics listener stays local, as
// the controller does (issue 35 row 10, spec item 68): an address that is not
// a loopback one is refused at startup, naming it, and a request whose Host
// is not a loopback name or address is answered 403. Outside local mode both
// are allowed. On the code before the fix SUPERVAIZER_METRICS_ADDR=0.0.0.0:x
// was accepted in local mode and /metrics answered any Host.
func TestTelemetryMetricsLocalMode(t *testing.T) {
	tests := []struct {
		name      string
		addr      string
		local     bool
		wantErr   bool
		foreign   int // status of a request with Host: attacker.example
		loopbacks int // status with Host: localhost:PORT
	}{
		{name: "local mode, every interface", addr: "0.0.0.0:0", local: true, wantErr: true},
		{name: "local mode, empty host", addr: ":0", local: true, wantErr: true},
		{name: "local mode, loopback", addr: "127.0.0.1:0", local: true, foreign: http.StatusForbidden, loopbacks: http.StatusOK},
		{name: "not local, loopback", addr: "127.0.0.1:0", foreign: http.StatusOK, loopbacks: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			getenv := func(k string) string {
				if k == envMetricsAddr {
					return tt.addr
				}
				return ""
			}
			tel, err := setupTelemetry(t.Context(), getenv, tt.local, logger)
			if tt.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), envMetricsAddr)
				assert.Contains(t, err.Error(), tt.addr)
				return
			}
			require.NoError(t, err)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = tel.Shutdown(ctx)
			})
			m := metricsURL.FindStringSubmatch(logs.String())
			require.NotNil(t, m, logs.String())
			get := func(host string) int {
				req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, m[1], nil)
				require.NoError(t, err)
				if host != "" {
					req.Host = host
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				return resp.StatusCode
			}
			assert.Equal(t, tt.foreign, get("attacker.example"), "Host attacker.example")
			assert.Equal(t, tt.loopbacks, get("localhost"), "Host localhost")
			assert.Equal(t, tt.loopbacks, get(""), "Host of the URL (127.0.0.1:PORT)")
		})
	}
}
