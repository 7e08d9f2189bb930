package main

import (
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/pprofserve"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
)

// TestPprofBuild: only a build with -tags pprof links net/http/pprof; it
// serves the profiles on the loopback address RESEARCH_AGENT_PPROF_ADDR
// names, and refuses any other address before the agent starts.
func TestPprofBuild(t *testing.T) {
	for tags, want := range map[string]bool{"": false, "pprof": true} {
		out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-tags", tags, ".").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Equal(t, want, regexp.MustCompile(`(?m)^net/http/pprof$`).Match(out), "tags %q", tags)
	}

	bin := proctest.Build(t, "research-agent-pprof", "-tags", "pprof")
	env := func(addr string) []string {
		return []string{"SUPERVAIZER_LOCAL_MODE=true", "SUPERVAIZER_DATA_DIR=" + t.TempDir(),
			"SUPERVAIZER_ADDR=127.0.0.1:0", "RESEARCH_AGENT_PPROF_ADDR=" + addr}
	}
	for _, addr := range []string{"0.0.0.0:0", "localhost:0", "192.0.2.1:0", "127.0.0.1"} {
		proc := proctest.Start(t, bin, env(addr))
		require.Error(t, proc.Wait(t), addr)
		assert.Contains(t, proc.Output(), "RESEARCH_AGENT_PPROF_ADDR=", addr)
		assert.NotContains(t, proc.Output(), "controller ready", "%s: the agent never starts", addr)
	}

	proc := proctest.Start(t, bin, env("127.0.0.1:0"))
	proc.AwaitURL(t)
	m := pprofserve.Announced.FindStringSubmatch(proc.Output())
	require.NotNil(t, m, proc.Output())
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(m[1] + "/debug/pprof/profile?seconds=1")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.Greater(t, len(body), 2)
	assert.Equal(t, []byte{0x1f, 0x8b}, body[:2], "a CPU profile: gzip-compressed protobuf")
}
