package main

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
)

// TestBinary builds the real binary, starts it with an empty environment apart
// from local mode, a data directory and port 0, reads the address it bound
// from its log, waits until it serves its
// discovery document, then stops it with SIGTERM and expects a clean exit.
func TestBinary(t *testing.T) {
	proc := proctest.Start(t, proctest.Build(t, "research-agent"), []string{
		"SUPERVAIZER_LOCAL_MODE=true",
		"SUPERVAIZER_DATA_DIR=" + t.TempDir(),
		"SUPERVAIZER_ADDR=127.0.0.1:0", // a free port; the log names it
	})
	base := proc.AwaitURL(t)

	url := base + a2a.AgentsListPath
	proc.AwaitServing(t, "an answer at "+url, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return true
	})
	stdout, stderr := proc.Stdout.String(), proc.Stderr.String()
	assert.Contains(t, stdout, "X-API-Key: local-dev", "the try-it block")
	assert.Contains(t, stderr, "mode=local")
	assert.Contains(t, stderr, "api_key=local-dev", "the local-mode key to send")
	assert.Contains(t, stdout, base+"/a2a", "the try-it block names the address bound")

	proc.Stop(t, syscall.SIGTERM)
	assert.Contains(t, proc.Stderr.String(), `msg="controller stopped"`)
}
