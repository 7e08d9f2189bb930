package a2ago

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/proctest"
)

// TestExampleInstancesPostgres: two processes of the research agent on one
// PostgreSQL schema; a job started through one is read by tasks/get through
// the other. It runs where SUPERVAIZER_TEST_DATABASE_URL names a server, as
// every PostgreSQL test of the repository (.ci/run sets it).
func TestExampleInstancesPostgres(t *testing.T) {
	url := os.Getenv("SUPERVAIZER_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("SUPERVAIZER_TEST_DATABASE_URL is not set: this test needs a PostgreSQL server (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "sva2ago_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		out, err := exec.Command("psql", url, "-qc", `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`).CombinedOutput()
		assert.NoError(t, err, "psql: %s", out)
	})
	bin := buildExample(t)
	start := func(instance string) *proctest.Process {
		return proctest.Start(t, bin, []string{"SUPERVAIZER_LOCAL_MODE=true", "SUPERVAIZER_DATA_DIR=" + t.TempDir(),
			"SUPERVAIZER_ADDR=127.0.0.1:0", "SUPERVAIZER_DATABASE_URL=" + url, "SUPERVAIZER_DATABASE_SCHEMA=" + schema,
			"SUPERVAIZER_INSTANCE_ID=" + instance})
	}
	a, b2 := start("a2a-go-a"), start("a2a-go-b")
	ca, cb := clientOf(t, a.AwaitURL(t)), clientOf(t, b2.AwaitURL(t))
	ctx := context.Background()
	res, err := ca.SendMessage(ctx, &a2a.MessageSendParams{Message: call("job.start", map[string]any{"topic_id": "ev-batteries"})})
	require.NoError(t, err)
	task := res.(*a2a.Task)
	got, err := cb.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
	require.NoError(t, err)
	assert.Equal(t, task.ID, got.ID)
	assert.Equal(t, task.Status.State, got.Status.State, "the other instance reads the task from the shared store")
	require.Len(t, got.Artifacts, 1)
}
