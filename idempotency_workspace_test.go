package supervaizer_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// workspaceIdemServer is a controller attached to a fake Studio (real Ed25519
// tokens) whose job.start counts runs per workspace.
func workspaceIdemServer(t *testing.T) (*svtest.TestServer, *atomic.Int64) {
	t.Helper()
	reg := mustRegistration(t, sv.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "r.1",
		Surfaces: sv.Surfaces("job.start"), Actions: sv.Actions("job.start"),
	})
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: reg})
	require.NoError(t, err)
	var calls atomic.Int64
	ts := svtest.NewTestServerWithStudio(t, svtest.NewFakeStudio(t), []*sv.Agent{a})
	sv.HandleActionFor(ts.Server, "job.start", func(ctx context.Context, req *sv.ActionRequest, in struct {
		TopicID string `json:"topic_id"`
	}) (*sv.ActionResult, error) {
		n := calls.Add(1)
		ws, _ := sv.WorkspaceFrom(ctx)
		return sv.OK(sv.JobStarted(req.JobID, map[string]any{"workspace": ws.WorkspaceID, "topic_id": in.TopicID, "run": n})), nil
	})
	return ts, &calls
}

func startIn(ws, key, job, topic string) contracts.ActionRequest {
	return contracts.ActionRequest{
		RequestID: "r-" + ws, Actor: contracts.Actor{UserID: "u-1"}, Workspace: contracts.WorkspaceRef{ID: ws},
		MissionID: "m-1", AgentSlug: "research-agent", Surface: "job.start", Action: "job.start",
		JobID: job, IdempotencyKey: key, Input: json.RawMessage(`{"topic_id":"` + topic + `"}`),
	}
}

// TestIdempotencyRecordsBelongToTheWorkspace: two workspaces sending the same
// idempotency key each get an independent start (never the other's stored
// result, never a conflict), and each one's replay stays in its workspace.
func TestIdempotencyRecordsBelongToTheWorkspace(t *testing.T) {
	ts, calls := workspaceIdemServer(t)
	ctx := t.Context()
	raw := func(req contracts.ActionRequest) string {
		t.Helper()
		out, err := ts.InvokeRaw(ctx, req)
		require.NoError(t, err)
		return string(out)
	}

	a := raw(startIn("ws-a", "setup-1", "job-1", "battery"))
	require.Contains(t, a, `"workspace":"ws-a"`)
	require.EqualValues(t, 1, calls.Load())

	// B replays A's exact request (key, job, input): B's own start, not A's result.
	b := raw(startIn("ws-b", "setup-1", "job-1", "battery"))
	assert.Contains(t, b, `"workspace":"ws-b"`)
	assert.NotContains(t, b, `ws-a`)
	assert.EqualValues(t, 2, calls.Load())

	// C uses the same key for its own job and input: no idempotency_conflict.
	c := raw(startIn("ws-c", "setup-1", "job-9", "solar"))
	assert.Contains(t, c, `"status":"ok"`)
	assert.NotContains(t, c, "idempotency_conflict")
	assert.EqualValues(t, 3, calls.Load())

	// Each workspace's retry replays its own result, byte for byte.
	assert.Equal(t, a, raw(startIn("ws-a", "setup-1", "job-1", "battery")))
	assert.Equal(t, b, raw(startIn("ws-b", "setup-1", "job-1", "battery")))
	assert.Equal(t, c, raw(startIn("ws-c", "setup-1", "job-9", "solar")))
	assert.EqualValues(t, 3, calls.Load())

	// Within a workspace the key still guards its job.
	assert.Contains(t, raw(startIn("ws-a", "setup-1", "job-2", "battery")), "idempotency_conflict")
	assert.EqualValues(t, 3, calls.Load())
}

// TestIdempotencyLongKeysDoNotAlias: a key too long to store literally is
// hashed into a namespace that no literal key can reach, so sending the
// hashed form literally is a different operation.
func TestIdempotencyLongKeysDoNotAlias(t *testing.T) {
	f := newIdemFixture(t, nil)
	long := strings.Repeat("k", 200)
	first := f.invoke(t, "job.start", long, "job-1", `{"topic_id":"x"}`)
	require.Contains(t, first, `"run":1`)
	for _, alias := range []string{
		"sha256:" + sha256Hex(long), // the former long-key form
		"#" + sha256Hex(long),
		sha256Hex(long),
	} {
		res := f.invoke(t, "job.start", alias, "job-1", `{"topic_id":"x"}`)
		assert.Contains(t, res, `"status":"ok"`, alias)
		assert.NotEqual(t, first, res, "the literal %q replayed the long key's result", alias)
	}
	assert.EqualValues(t, 4, f.calls.Load())
	assert.Equal(t, first, f.invoke(t, "job.start", long, "job-1", `{"topic_id":"x"}`), "the long key still replays")
	assert.EqualValues(t, 4, f.calls.Load())
}

func sha256Hex(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// TestIdempotencySettings: the retention and lease options and
// SUPERVAIZER_IDEMPOTENCY_RETENTION are validated at construction.
func TestIdempotencySettings(t *testing.T) {
	agent := func() []*sv.Agent {
		reg := mustRegistration(t, sv.RegistrationSpec{
			AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "r.1",
			Surfaces: sv.Surfaces("job.start"), Actions: sv.Actions("job.start"),
		})
		a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: reg})
		require.NoError(t, err)
		return []*sv.Agent{a}
	}
	env := func(v string) sv.Option {
		return sv.WithEnv(func(k string) string {
			if k == "SUPERVAIZER_IDEMPOTENCY_RETENTION" {
				return v
			}
			return ""
		})
	}
	tests := []struct {
		name string
		opts []sv.Option
		err  string
	}{
		{name: "defaults", opts: []sv.Option{env("")}},
		{name: "environment in days", opts: []sv.Option{env("30d")}},
		{name: "environment as a duration", opts: []sv.Option{env("720h")}},
		{name: "invalid environment", opts: []sv.Option{env("forever")}, err: "SUPERVAIZER_IDEMPOTENCY_RETENTION"},
		{name: "option wins over an invalid environment", opts: []sv.Option{env("forever"), sv.WithIdempotencyRetention(time.Hour)}},
		{name: "zero retention", opts: []sv.Option{env(""), sv.WithIdempotencyRetention(0)}, err: "WithIdempotencyRetention"},
		{name: "negative lease", opts: []sv.Option{env(""), sv.WithIdempotencyLease(-time.Second)}, err: "WithIdempotencyLease"},
		{name: "lease and instance", opts: []sv.Option{env(""), sv.WithIdempotencyLease(time.Minute), sv.WithInstanceID("pod-0")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sv.NewServer(agent(), append(tt.opts, sv.WithLocalMode(true))...)
			if tt.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.err)
		})
	}
}
