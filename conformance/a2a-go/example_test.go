package a2ago

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
)

// binDir holds the example binary, built once for every test of the package.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "a2ago-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// exampleBin builds examples/research-agent (a module of its own) once.
var exampleBin = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "research-agent")
	out, err := exec.Command("go", "build", "-C", "../../examples/research-agent", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %w: %s", err, out)
	}
	return bin, nil
})

// buildExample returns the example binary, built at the first call.
func buildExample(t *testing.T) string {
	t.Helper()
	bin, err := exampleBin()
	require.NoError(t, err)
	return bin
}

// startExample runs the example in local mode on a free port with its data
// (the bbolt store) in dir, and returns an a2a-go client of it.
func startExample(t *testing.T, bin, dir string) (*proctest.Process, *a2aclient.Client) {
	t.Helper()
	proc := proctest.Start(t, bin, localEnv(dir))
	return proc, clientOf(t, proc.AwaitURL(t))
}

// localEnv is the environment of the example in local mode on a free port,
// its data in dir, plus the variables of more.
func localEnv(dir string, more ...string) []string {
	return append([]string{"SUPERVAIZER_LOCAL_MODE=true", "SUPERVAIZER_DATA_DIR=" + dir, "SUPERVAIZER_ADDR=127.0.0.1:0"}, more...)
}

// clientOf is a non-blocking a2a-go client of the controller at base.
func clientOf(t *testing.T, base string) *a2aclient.Client {
	t.Helper()
	c, err := a2aclient.NewFromEndpoints(t.Context(), []a2a.AgentInterface{{URL: base + "/a2a", Transport: a2a.TransportProtocolJSONRPC}},
		a2aclient.WithJSONRPCTransport(&http.Client{Transport: apiKey{http.DefaultTransport}}),
		a2aclient.WithConfig(a2aclient.Config{Polling: true}))
	require.NoError(t, err)
	return c
}

// TestExampleBinary: the official Go client against the running research
// agent: a job started by message/send (its draft awaits review), the same
// message again, tasks/cancel, and tasks/get after a restart of the process
// on the same bbolt store.
func TestExampleBinary(t *testing.T) {
	ctx := context.Background()
	bin, dir := buildExample(t), t.TempDir()
	proc, c := startExample(t, bin, dir)

	msg := call("job.start", map[string]any{"topic_id": "ev-batteries"})
	res, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
	require.NoError(t, err)
	task, ok := res.(*a2a.Task)
	require.True(t, ok, "a job is a task: %T", res)
	assert.Equal(t, a2a.TaskStateInputRequired, task.Status.State, "the draft brief awaits review")
	require.Len(t, task.Artifacts, 1)
	again, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
	require.NoError(t, err)
	assert.Equal(t, task, again, "the same messageId is the same task")

	res, err = c.SendMessage(ctx, &a2a.MessageSendParams{Message: call("job.start", map[string]any{"topic_id": "solid-state"})})
	require.NoError(t, err)
	canceled, err := c.CancelTask(ctx, &a2a.TaskIDParams{ID: res.(*a2a.Task).ID})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCanceled, canceled.Status.State)

	proc.Stop(t, syscall.SIGTERM)
	_, c = startExample(t, bin, dir)
	got, err := c.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
	require.NoError(t, err)
	assert.Equal(t, task.ID, got.ID)
	assert.Equal(t, a2a.TaskStateInputRequired, got.Status.State, "after a restart, from the store")
	got, err = c.GetTask(ctx, &a2a.TaskQueryParams{ID: canceled.ID})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCanceled, got.Status.State)
}
