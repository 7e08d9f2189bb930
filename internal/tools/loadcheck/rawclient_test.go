package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/loadcheck/fixture"
)

func TestReadResponse(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        string
		status    int
		body      string
		keepAlive bool
		err       bool
	}{
		{"content length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: application/json\r\n\r\nhello", 200, "hello", true, false},
		{"header case", "HTTP/1.1 200 OK\r\ncontent-LENGTH:5\r\n\r\nhello", 200, "hello", true, false},
		{"no reason", "HTTP/1.1 401\r\nContent-Length: 2\r\n\r\nno", 401, "no", true, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: x\r\n\r\n", 200, "hello, world", true, false},
		{"chunked wins over length", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", 200, "ok", true, false},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", 200, "ok", false, false},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, "ok", false, false},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", 200, "ok", true, false},
		{"to the end", "HTTP/1.1 200 OK\r\n\r\nuntil close", 200, "until close", false, false},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", 204, "", true, false},
		{"interim response", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", 200, "x", true, false},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhello", 0, "", false, true},
		{"empty", "", 0, "", false, true},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", 0, "", false, true},
		{"bad status", "HTTP/1.1 2x0 OK\r\n\r\n", 0, "", false, true},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\n\n", 0, "", false, true},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, "", false, true},
		{"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx", 0, "", false, true},
		{"too large", "HTTP/1.1 200 OK\r\nContent-Length: 2000000\r\n\r\n", 0, "", false, true},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, "", false, true},
		{"chunk without CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokX\r\n0\r\n\r\n", 0, "", false, true},
		{"gzip encoding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 0, "", false, true},
		{"header without colon", "HTTP/1.1 200 OK\r\nContent-Length 2\r\n\r\nok", 0, "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, keepAlive, err := readResponse(bufio.NewReader(strings.NewReader(tc.in)), nil)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.status, status)
			assert.Equal(t, tc.body, string(body))
			assert.Equal(t, tc.keepAlive, keepAlive)
		})
	}
}

// TestReadResponseKeepAlive reads two responses off one stream.
func TestReadResponseKeepAlive(t *testing.T) {
	br := bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none" +
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n"))
	for _, want := range []string{"one", "two"} {
		status, body, keepAlive, err := readResponse(br, nil)
		require.NoError(t, err)
		assert.Equal(t, 200, status)
		assert.Equal(t, want, string(body))
		assert.True(t, keepAlive)
	}
	_, _, _, err := readResponse(br, nil)
	assert.ErrorIs(t, err, io.EOF)
}

// TestRawClientAgainstNetHTTP sends pre-encoded requests on one keep-alive
// connection to a net/http server, which sees well-formed requests.
func TestRawClientAgainstNetHTTP(t *testing.T) {
	h, err := fixture.NewController()
	require.NoError(t, err)
	ts := httptest.NewUnstartedServer(h)
	var conns atomic.Int64
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	tok := mustToken(t)
	tgt := target{name: "controller", url: ts.URL + "/a2a", apiKey: fixture.APIKey}
	req, err := newRawRequest(tgt, fixture.Body())
	require.NoError(t, err)
	c := newRawConn(req)
	defer c.close()
	for range 3 {
		status, body, err := c.do(tok, nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, status, "%s", body)
		assert.Contains(t, string(body), `"result":`)
	}
	assert.Equal(t, int64(1), conns.Load(), "the requests share one keep-alive connection")

	// A wrong API key is answered 401, on the same kind of request.
	bad, err := newRawRequest(target{name: "controller", url: ts.URL + "/a2a", apiKey: "wrong"}, fixture.Body())
	require.NoError(t, err)
	c2 := newRawConn(bad)
	defer c2.close()
	status, _, err := c2.do(tok, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, status)
}

func TestClientHeavierThanBaselineFails(t *testing.T) {
	var out bytes.Buffer
	rep := newReport(&out)
	rw := rep.row("fixture", modeReused)
	round := func(serverCPU, clientCPU time.Duration) result {
		return result{requests: 1000, elapsed: time.Second, latencies: []time.Duration{time.Millisecond},
			cpu: serverCPU, cpuKnown: true, clientCPU: clientCPU, clientCPUKnown: true}
	}
	rw.add(1, round(60*time.Millisecond, 20*time.Millisecond), round(30*time.Millisecond, 40*time.Millisecond), result{})
	heavy, err := rep.summary(time.Now())
	require.NoError(t, err)
	require.Len(t, heavy, 1)
	assert.Contains(t, heavy[0], "client 40.0 µs/req > baseline server 30.0 µs/req")
	assert.Contains(t, out.String(), "CLIENT TOO HEAVY")

	out.Reset()
	rep = newReport(&out)
	rep.row("fixture", modeReused).add(1, round(60*time.Millisecond, 20*time.Millisecond), round(30*time.Millisecond, 10*time.Millisecond), result{})
	heavy, err = rep.summary(time.Now())
	require.NoError(t, err)
	assert.Empty(t, heavy)
	assert.NotContains(t, out.String(), "CLIENT TOO HEAVY")
}

// FuzzReadResponse feeds arbitrary bytes to the response reader: it never
// panics, never returns more than maxResponse bytes of body and, when it
// accepts a response that net/http's reader also accepts, both read the
// same status and body.
func FuzzReadResponse(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nrest",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		status, body, _, err := readResponse(bufio.NewReader(bytes.NewReader(in)), nil)
		if err != nil {
			return
		}
		require.LessOrEqual(t, len(body), maxResponse)
		resp, herr := http.ReadResponse(bufio.NewReader(bytes.NewReader(in)), &http.Request{Method: http.MethodPost})
		if herr != nil {
			return
		}
		defer resp.Body.Close()
		hbody, herr := io.ReadAll(resp.Body)
		if herr != nil || resp.StatusCode < 200 {
			return
		}
		assert.Equal(t, resp.StatusCode, status)
		assert.Equal(t, string(hbody), string(body))
	})
}
