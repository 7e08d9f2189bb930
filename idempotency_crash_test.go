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
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

const crashChildEnv = "SUPERVAIZER_IDEMPOTENCY_CRASH_CHILD"

// crashBurst is how many job.start calls the child keeps in flight.
const crashBurst = 8

// effectFixture is a controller on st whose job.start has a durable effect:
// it creates the job under "effects/<job id>" in the same store (a job id
// creates at most one job, as Studio's stable ids require), then answers. It
// counts the handler runs and the effects it applied.
type effectFixture struct {
	*idemFixture
	applied atomic.Int64
}

func newEffectFixture(t testing.TB, st store.Store, delay time.Duration) *effectFixture {
	t.Helper()
	reg := mustRegistration(t, sv.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "r.1",
		Surfaces: sv.Surfaces("job.start"), Actions: sv.Actions("job.start"),
	})
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: reg})
	require.NoError(t, err)
	ts := svtest.NewTestServer(t, []*sv.Agent{a}, sv.WithStore(st))
	srv := ts.Server
	f := &effectFixture{idemFixture: &idemFixture{ts: ts, srv: srv}}
	srv.HandleAction("job.start", func(ctx context.Context, req *sv.ActionRequest) (*sv.ActionResult, error) {
		f.calls.Add(1)
		_, created, err := st.PutIfAbsent(ctx, store.Key("effects", req.JobID), []byte(`{}`))
		if err != nil {
			return nil, err
		}
		if created {
			f.applied.Add(1)
		}
		time.Sleep(delay) // keep attempts in flight when the kill lands
		return sv.OK(contracts.Effect{Type: "job.started", JobID: req.JobID}), nil
	})
	return f
}

// TestIdempotencyCrashChild is the child process of TestIdempotencyCrash: it
// keeps a burst of job.start calls in flight on the durable store forever,
// printing each key when its call starts and when it is acknowledged.
func TestIdempotencyCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		return // only meaningful as the crash test's child process
	}
	st, err := store.Open(path)
	require.NoError(t, err)
	f := newEffectFixture(t, st, 2*time.Millisecond)
	var (
		next atomic.Int64
		mu   sync.Mutex
		wg   sync.WaitGroup
	)
	print := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format, args...)
	}
	for range crashBurst {
		wg.Go(func() {
			for {
				key := fmt.Sprintf("k-%d", next.Add(1))
				print("sent %s\n", key)
				// Not f.invoke: a failure is reported to the parent, from any goroutine.
				res, err := f.ts.InvokeRaw(context.Background(), f.request("job.start", key, "job-"+key, `{"topic_id":"x"}`))
				if err != nil || !strings.Contains(string(res), `"status":"ok"`) {
					print("bad %s %v %s\n", key, err, res)
					os.Exit(3)
				}
				print("ack %s\n", key)
			}
		})
	}
	wg.Wait()
}

// TestIdempotencyCrash kills a controller in the middle of a burst of
// job.start calls with SIGKILL and restarts it on the same store: every
// record is complete JSON, every acknowledged start replays without the
// handler, every start that was in flight at the kill is taken over at once
// by the restarted instance (never idempotency_in_progress), and no job's
// effect is applied twice.
func TestIdempotencyCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "idem.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdempotencyCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	acked, sent := map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(out)
	deadline := time.Now().Add(20 * time.Second)
	for sc.Scan() && len(acked) < 60 && time.Now().Before(deadline) {
		line := sc.Text()
		require.False(t, strings.HasPrefix(line, "bad "), line)
		if key, ok := strings.CutPrefix(line, "ack "); ok {
			acked[key] = true
		}
		if key, ok := strings.CutPrefix(line, "sent "); ok {
			sent[key] = true
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.GreaterOrEqual(t, len(acked), 10, "the child acknowledged too few starts before the deadline")

	st, err := store.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	pending := 0
	effectsBefore := 0
	require.NoError(t, st.Scan(context.Background(), "", func(k string, v []byte) error {
		if strings.HasPrefix(k, store.Prefix("effects")) {
			effectsBefore++
			return nil
		}
		var rec map[string]any
		require.NoError(t, json.Unmarshal(v, &rec), "a record is complete JSON")
		assert.Contains(t, []any{"pending", "done"}, rec["state"])
		if rec["state"] == "pending" {
			pending++
		}
		return nil
	}))
	t.Logf("%d sent, %d acknowledged, %d records pending at the kill, %d effects", len(sent), len(acked), pending, effectsBefore)

	// The restarted instance, right away: no lease to wait for.
	g := newEffectFixture(t, st, 0)
	for key := range acked {
		res := g.invoke(t, "job.start", key, "job-"+key, `{"topic_id":"x"}`)
		assert.Contains(t, res, `"status":"ok"`, key)
	}
	assert.EqualValues(t, 0, g.calls.Load(), "every acknowledged start replays from its durable record")
	for key := range sent {
		if acked[key] {
			continue
		}
		res := g.invoke(t, "job.start", key, "job-"+key, `{"topic_id":"x"}`)
		assert.Contains(t, res, `"status":"ok"`, "%s is blocked after the restart: %s", key, res)
		assert.NotContains(t, res, contracts.ErrorIdempotencyInProgress, key)
	}
	effects := 0
	require.NoError(t, st.Scan(context.Background(), store.Prefix("effects"), func(string, []byte) error {
		effects++
		return nil
	}))
	assert.Equal(t, len(sent), effects, "one effect per job")
	assert.Equal(t, int64(effects-effectsBefore), g.applied.Load(), "a retry applies only effects that never happened")
}
