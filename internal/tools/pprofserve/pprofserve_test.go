package pprofserve

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServeRefusesAnyAddressButLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "localhost:0", "192.0.2.1:0", "[::]:0", "127.0.0.1"} {
		t.Run(addr, func(t *testing.T) {
			var out bytes.Buffer
			rate := runtime.MemProfileRate
			require.Error(t, Serve(addr, &out))
			assert.Empty(t, out.String(), "nothing is announced")
			assert.Equal(t, rate, runtime.MemProfileRate, "the heap sampling is left as it was")
		})
	}
}

func TestServeAnnouncesAndServesTheProfiles(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, Serve("127.0.0.1:0", &out))
	m := Announced.FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	assert.Regexp(t, `^http://127\.0\.0\.1:[1-9][0-9]*$`, m[1], "the port bound, not 0")

	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) (int, []byte) {
		resp, err := client.Get(m[1] + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, body
	}
	status, _ := get("/debug/pprof/")
	assert.Equal(t, http.StatusOK, status)
	status, body := get("/debug/pprof/profile?seconds=1")
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.Greater(t, len(body), 2)
	assert.Equal(t, []byte{0x1f, 0x8b}, body[:2], "a CPU profile: gzip-compressed protobuf")
	assert.Equal(t, HeapSampleRate, runtime.MemProfileRate, "heap profiles sample every 32 KiB")
	status, body = get("/debug/pprof/heap")
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.Greater(t, len(body), 2)
	assert.Equal(t, []byte{0x1f, 0x8b}, body[:2], "a heap profile: gzip-compressed protobuf")
	status, _ = get("/")
	assert.Equal(t, http.StatusNotFound, status, "only the profiles")
}
