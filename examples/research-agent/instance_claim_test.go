package main

import (
	"maps"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
)

// TestPostgresDuplicateInstanceID runs two real processes of the example on
// one PostgreSQL schema given the same SUPERVAIZER_INSTANCE_ID, as when one
// value is set for every replica of a deployment (spec item 69, issue 27 row
// 2): the second refuses to start, naming the variable, while the first keeps
// serving; once the first has stopped cleanly (its claim released), a process
// with that id starts. Before the fix both served, and the second took the
// first's pending idempotency records over as "an earlier boot of this
// instance", running their handlers a second time.
func TestPostgresDuplicateInstanceID(t *testing.T) {
	c := startCluster(t, 1, nil)
	first := c.procs[0]

	env := maps.Clone(c.env)
	env["SUPERVAIZER_ADDR"] = "127.0.0.1:0"
	env[envInstance] = first.id
	sep := "?"
	if strings.Contains(c.dbURL, "?") {
		sep = "&"
	}
	env[envDatabase] = c.dbURL + sep + "application_name=" + url.QueryEscape(first.id+"-twin") + "&pool_max_conns=2"
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}

	twin := proctest.Start(t, c.bin, list)
	err := twin.Wait(t)
	require.Error(t, err, "the second process with the same instance id must not start:\n%s", twin.Output())
	out := twin.Output()
	assert.Contains(t, out, "SUPERVAIZER_INSTANCE_ID")
	assert.Contains(t, out, "in use by another live process")
	assert.NotContains(t, out, "controller ready")

	// The first instance still serves.
	resp, err := c.http.Get(first.url + "/.well-known/health")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)

	first.stop() // SIGTERM: a clean shutdown releases the claim
	again := proctest.Start(t, c.bin, list)
	again.AwaitURL(t)
}
