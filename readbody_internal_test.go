package supervaizer

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// closeRecorder is a request body that records whether it was closed.
type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// TestReadBodyClosesAtEOF: a body read to its end is closed, so net/http
// does not drain it again after the handler; one refused or cut short is
// left to net/http, which then closes the connection.
func TestReadBodyClosesAtEOF(t *testing.T) {
	for _, tc := range []struct {
		name          string
		body          string
		contentLength int64
		limit         int64
		status        int
		closed        bool
	}{
		{name: "announced length", body: `{"jsonrpc":"2.0"}`, contentLength: 17, limit: 1 << 10, closed: true},
		{name: "chunked", body: `{"jsonrpc":"2.0"}`, contentLength: -1, limit: 1 << 10, closed: true},
		{name: "empty", body: "", contentLength: 0, limit: 1 << 10, closed: true},
		{name: "announced too large", body: strings.Repeat("x", 64), contentLength: 64, limit: 32, status: http.StatusRequestEntityTooLarge},
		{name: "too large while read", body: strings.Repeat("x", 64), contentLength: -1, limit: 32, status: http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &closeRecorder{Reader: strings.NewReader(tc.body)}
			r := httptest.NewRequest(http.MethodPost, "/a2a", nil)
			r.Body, r.ContentLength = rec, tc.contentLength
			got, status, _ := readBody(httptest.NewRecorder(), r, tc.limit)
			assert.Equal(t, tc.status, status)
			assert.Equal(t, tc.closed, rec.closed, "closed")
			if tc.status == 0 {
				assert.Equal(t, tc.body, string(got))
			}
		})
	}
}
