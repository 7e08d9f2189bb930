package a2ago

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
)

// TestExampleInstancesPostgres: two processes of the research agent on one
// PostgreSQL schema (the jobs, the idempotency records and the task view are
// shared; each process has its own event broker). A job started through one
// is read by tasks/get through the other; approved through the first, it is
// followed to its end by tasks/resubscribe on the other while the first
// delivers it (the other's stream refreshes the job through its own job.sync,
// which reads the shared store); an approval streamed through the second of
// a job started on the first ends the same way, and the first reads the
// state it reached. It runs where SUPERVAIZER_TEST_DATABASE_URL names a
// server, as every PostgreSQL test of the repository (.ci/run sets it).
func TestExampleInstancesPostgres(t *testing.T) {
	url, schema := postgresSchema(t)
	bin := buildExample(t)
	start := func(instance string) exampleClients {
		_, c := runExample(t, bin, localEnv(t.TempDir(), "SUPERVAIZER_DATABASE_URL="+url, "SUPERVAIZER_DATABASE_SCHEMA="+schema,
			"SUPERVAIZER_INSTANCE_ID="+instance, "RESEARCH_AGENT_SEND_DELAY="+sendDelay))
		return c
	}
	ca, cb := start("a2a-go-a"), start("a2a-go-b")

	task := startJob(t, ca.nonBlocking, "ev-batteries")
	got, err := cb.nonBlocking.GetTask(callCtx(t), &a2a.TaskQueryParams{ID: task.ID})
	require.NoError(t, err)
	assert.Equal(t, task.ID, got.ID)
	assert.Equal(t, task.Status.State, got.Status.State, "the other instance reads the task from the shared store")
	require.Len(t, got.Artifacts, 1)

	// Approved through a, which delivers it; followed through b.
	res, err := ca.nonBlocking.SendMessage(callCtx(t), &a2a.MessageSendParams{Message: approval(task)})
	require.NoError(t, err)
	require.Equal(t, a2a.TaskStateWorking, res.(*a2a.Task).Status.State)
	got, err = cb.nonBlocking.GetTask(callCtx(t), &a2a.TaskQueryParams{ID: task.ID})
	require.NoError(t, err)
	require.Equal(t, a2a.TaskStateWorking, got.Status.State, "mid-job on the other instance: the brief waits its send delay (%s)", sendDelay)
	events, jobState := collect(t, task.ID, cb.nonBlocking.ResubscribeToTask(callCtx(t), &a2a.TaskIDParams{ID: task.ID}))
	assert.Equal(t, toTheEnd, events, "b follows the job a delivers")
	assert.Equal(t, "completed", sendStatus(t, jobState))
	got, err = ca.nonBlocking.GetTask(callCtx(t), &a2a.TaskQueryParams{ID: task.ID})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCompleted, got.Status.State)

	// Started on a, its approval streamed through b.
	other := startJob(t, ca.nonBlocking, "solid-state")
	events, _ = collect(t, other.ID, cb.nonBlocking.SendStreamingMessage(callCtx(t), &a2a.MessageSendParams{Message: approval(other)}))
	assert.Equal(t, toTheEnd, events)
	got, err = ca.nonBlocking.GetTask(callCtx(t), &a2a.TaskQueryParams{ID: other.ID})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCompleted, got.Status.State, "a reads the state the job reached through b")
}

// TestConversationUsagePostgres: the token usage of a streamed
// conversation's task (its derived job id) is summed in the store: tasks/get
// shows it in the Task's metadata on another instance of the PostgreSQL
// schema, and after the first instance is restarted.
func TestConversationUsagePostgres(t *testing.T) {
	url, schema := postgresSchema(t)
	bin := buildExample(t)
	start := func(instance string) (*proctest.Process, exampleClients) {
		return runExample(t, bin, localEnv(t.TempDir(), "SUPERVAIZER_DATABASE_URL="+url, "SUPERVAIZER_DATABASE_SCHEMA="+schema,
			"SUPERVAIZER_INSTANCE_ID="+instance))
	}
	pa, ca := start("usage-a")
	_, cb := start("usage-b")

	q := "How many jobs are there?"
	var taskID a2a.TaskID
	for ev, err := range ca.nonBlocking.SendStreamingMessage(callCtx(t), &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: q})}) {
		require.NoError(t, err)
		if task, ok := ev.(*a2a.Task); ok {
			taskID = task.ID
		}
	}
	require.NotEmpty(t, taskID, "a streamed conversation is a task")
	a := "There are no research jobs in this workspace yet."
	wantIn, wantOut := int64(len(q)+3)/4, int64(len(a)+3)/4
	usage := func(c exampleClients, where string) {
		got, err := c.nonBlocking.GetTask(callCtx(t), &a2a.TaskQueryParams{ID: taskID})
		require.NoError(t, err, where)
		assert.Equal(t, a2a.TaskStateCompleted, got.Status.State, where)
		in, out := usageOf(t, got.Metadata)
		assert.Equal(t, wantIn, in, where)
		assert.Equal(t, wantOut, out, where)
	}
	usage(ca, "the instance that ran it")
	usage(cb, "another instance")
	pa.Stop(t, syscall.SIGTERM)
	_, again := start("usage-a")
	usage(again, "instance a restarted")
}

// postgresSchema returns SUPERVAIZER_TEST_DATABASE_URL and a schema of its
// own for the test, dropped at its end; the test is skipped without the
// variable (.ci/run sets it and fails when the server is missing).
func postgresSchema(t *testing.T) (url, schema string) {
	t.Helper()
	url = os.Getenv("SUPERVAIZER_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("SUPERVAIZER_TEST_DATABASE_URL is not set: this test needs a PostgreSQL server (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable; .ci/run sets it, and fails when the server cannot be reached)")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema = "sva2ago_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		out, err := exec.Command("psql", url, "-qc", `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`).CombinedOutput()
		assert.NoError(t, err, "psql: %s", out)
	})
	return url, schema
}
