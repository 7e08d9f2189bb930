package testing_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// TestEffectProbe: a handler that answers the same result but creates a record
// on every call passes the two required rules and fails with the probe.
func TestEffectProbe(t *testing.T) {
	t.Parallel()
	reg := supervaizer.RegistrationSpec{AgentSlug: "probe-agent", DisplayName: "Probe Agent",
		A2UICatalogVersion: "p.1", Actions: supervaizer.Actions("launch")}
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Probe Agent", Version: "1", Registration: reg})
	require.NoError(t, err)
	var created atomic.Int64
	agent.HandleAction("launch", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		created.Add(1) // a new record on every call: not idempotent
		return supervaizer.OK(supervaizer.JobStarted(req.JobID, nil)), nil
	})
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{agent})
	req := ts.Request("launch", map[string]any{})
	req.IdempotencyKey, req.JobID = "k-1", "job-1"

	assert.True(t, svtest.AssertConfirmIdempotent(t, ts, req), "the results alone look idempotent")
	rec := newRecordingTB(t)
	assert.False(t, svtest.AssertConfirmIdempotent(rec, ts, req, svtest.WithEffectProbe(created.Load)))
	require.NotEmpty(t, rec.errors)
	assert.True(t, strings.Contains(rec.errors[0], "the retry creates nothing"), rec.errors[0])
}
