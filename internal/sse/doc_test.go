package sse_test

import (
	"bufio"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/sse"
	"github.com/supervaize/supervaizer-go/internal/tools/ssetest"
)

// TestPackageDocBroker runs the package comment's broker as written: a client
// of the mux gets the connected event, then the published effect.
func TestPackageDocBroker(t *testing.T) {
	logger, mux, ctx := slog.New(slog.DiscardHandler), http.NewServeMux(), t.Context()
	payload := []byte(`{"effects":[]}`)

	b := sse.NewBroker(sse.Options{Logger: logger})
	mux.Handle("GET /a2a/events", b)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/a2a/events", nil)
	require.NoError(t, err)
	resp, err := hs.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	ev, err := ssetest.Read(r)
	require.NoError(t, err)
	require.Equal(t, sse.EventConnected, ev.Name, "subscribed")

	b.Publish(sse.EventEffect, payload) // after each successful action.invoke
	ev, err = ssetest.Read(r)
	require.NoError(t, err)
	assert.Equal(t, sse.EventEffect, ev.Name)
	assert.JSONEq(t, string(payload), ev.Data)
	_ = b.Shutdown(ctx) // before http.Server.Shutdown
}
