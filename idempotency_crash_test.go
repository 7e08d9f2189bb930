//go:build unix

package supervaizer_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/store"
)

const crashChildEnv = "SUPERVAIZER_IDEMPOTENCY_CRASH_CHILD"

// TestIdempotencyCrashChild is the child process of TestIdempotencyCrash: it
// starts jobs with the durable store forever, printing each acknowledged key.
func TestIdempotencyCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		return // only meaningful as the crash test's child process
	}
	st, err := store.Open(path)
	require.NoError(t, err)
	f := newIdemFixture(t, st)
	for i := 0; ; i++ {
		key := fmt.Sprintf("k-%d", i)
		res := f.invoke(t, "job.start", key, "job-"+key, `{"topic_id":"x"}`)
		if !strings.Contains(res, `"status":"ok"`) {
			t.Fatalf("unexpected result %s", res)
		}
		fmt.Printf("ack %s\n", key)
	}
}

// TestIdempotencyCrash kills a controller writing idempotency records with
// SIGKILL mid-stream: after reopening the store every record is complete JSON,
// every acknowledged start is there, and its replay answers without the handler.
func TestIdempotencyCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "idem.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdempotencyCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	acked := map[string]bool{}
	sc := bufio.NewScanner(out)
	deadline := time.Now().Add(20 * time.Second)
	for sc.Scan() && len(acked) < 40 && time.Now().Before(deadline) {
		if key, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
			acked[key] = true
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.GreaterOrEqual(t, len(acked), 10, "the child acknowledged too few starts before the deadline")

	st, err := store.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	records := 0
	require.NoError(t, st.Scan(context.Background(), store.Prefix("idempotency"), func(_ string, v []byte) error {
		records++
		var rec map[string]any
		require.NoError(t, json.Unmarshal(v, &rec), "a record is complete JSON")
		assert.Contains(t, []any{"pending", "done"}, rec["state"])
		return nil
	}))
	assert.GreaterOrEqual(t, records, len(acked))

	g := newIdemFixture(t, st)
	for key := range acked {
		res := g.invoke(t, "job.start", key, "job-"+key, `{"topic_id":"x"}`)
		assert.Contains(t, res, `"status":"ok"`, key)
	}
	assert.EqualValues(t, 0, g.calls.Load(), "every acknowledged start replays from its durable record")
}
