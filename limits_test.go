//go:build !race

package supervaizer_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
)

// The connection timeouts of Serve are wall-clock behaviour: their tests need
// the scheduler to keep up, which a loaded machine under the race detector
// does not promise. The TestLimit tests build only without -race; make test
// runs them in a pass of their own.

// closedWithin waits until the server closes conn (a read ends with EOF or a
// reset) and returns how long that took; it fails after limit.
func closedWithin(t *testing.T, conn net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	require.NoError(t, conn.SetReadDeadline(start.Add(limit)))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		require.FailNowf(t, "connection still open", "not closed by the server within %s", limit)
	}
	return time.Since(start)
}

// TestLimitServeCutsSlowAndIdleConnections: clients trickling their headers are cut
// at ReadHeaderTimeout and idle keep-alive connections at IdleTimeout; then a
// normal request is answered.
func TestLimitServeCutsSlowAndIdleConnections(t *testing.T) {
	const (
		headerTimeout = 300 * time.Millisecond
		idleTimeout   = 400 * time.Millisecond
		n             = 40 // connections of each kind
	)
	sa := newServeAgent(t, supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{
		ReadHeaderTimeout: headerTimeout, ReadTimeout: 2 * time.Second, IdleTimeout: idleTimeout,
	}))
	base, stop := sa.serve(t)
	addr := strings.TrimPrefix(base, "http://")

	// Slow clients: a request line, then one header byte every 20 ms.
	slow := make([]net.Conn, n)
	var trickle sync.WaitGroup
	for i := range slow {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		slow[i] = c
		_, err = fmt.Fprintf(c, "POST /a2a HTTP/1.1\r\nHost: %s\r\n", addr)
		require.NoError(t, err)
		trickle.Go(func() {
			for {
				if _, err := c.Write([]byte("X")); err != nil {
					return // cut by the server, or closed by the test
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	// Idle clients: one complete request, then silence on a keep-alive connection.
	idle := make([]net.Conn, n)
	for i := range idle {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		idle[i] = c
		_, err = fmt.Fprintf(c, "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.False(t, resp.Close, "the connection is kept alive")
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}

	const slack = 2 * time.Second // scheduling on a loaded machine
	for _, c := range slow {
		closedWithin(t, c, headerTimeout+slack)
	}
	for _, c := range idle {
		closedWithin(t, c, idleTimeout+slack)
	}
	for _, c := range append(slow, idle...) {
		_ = c.Close()
	}
	trickle.Wait()

	client := &http.Client{Timeout: 5 * time.Second}
	code, status := startJob(t, client, base, "job.start", "job-after")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", status)
	require.NoError(t, stop())
}

// TestLimitServeTrickledHeadersNotCutEarly: the cut comes from ReadHeaderTimeout,
// not sooner (a slow but honest client within the limit is served).
func TestLimitServeTrickledHeadersNotCutEarly(t *testing.T) {
	sa := newServeAgent(t, supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{ReadHeaderTimeout: 2 * time.Second}))
	base, stop := sa.serve(t)
	addr := strings.TrimPrefix(base, "http://")
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	req := fmt.Sprintf("GET /.well-known/agent-card.json HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr)
	for i := range len(req) { // about 0.5 s in all, well inside the limit
		_, err := c.Write([]byte{req[i]})
		require.NoError(t, err)
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	_ = resp.Body.Close()
	require.NoError(t, stop())
}
