package main

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
)

// readiness returns the status of p's readiness route (0 when unreachable).
func (c *cluster) readiness(p *agentProc) int {
	resp, err := c.http.Get(p.url + supervaizer.ReadinessPath)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestPostgresPausedHolder pauses, with SIGSTOP standing in for a GC or VM
// pause, the process holding an instance id on PostgreSQL (issue 35 rows 2
// and 15, spec item 73), with a 120 s lease:
//
//   - paused 3 s while a second process with the same id looks at the claim,
//     the holder keeps it: the second refuses to start, and the holder serves
//     again once it runs;
//   - paused 15 s with a job.start in flight, it loses the claim to a second
//     process, which answers idempotency_in_progress for that record (its
//     lease has not ended) and replays every start acknowledged before; once
//     the holder runs again its late result write is refused by the claim's
//     epoch, it reports not ready and refuses calls with -32603 and
//     data.retry; no job is created twice.
//
// On the code before the fix the claim had 0.5 s of margin: the second
// process took it over 2.5 s into the first pause, both served, and the
// second took over the pending record the live first still owned.
func TestPostgresPausedHolder(t *testing.T) {
	c := startCluster(t, 1, map[string]string{envLease: "120s"}) // a lease no wait of the test reaches
	holder := c.procs[0]
	pid := holder.cmd.Process.Pid
	db, err := pgx.Connect(t.Context(), c.dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close(context.Background()) })

	acks := map[int]json.RawMessage{}
	for k := range 5 {
		raw, _, err := c.invoke(t.Context(), holder.url, c.startRequest(k, "req-"+strconv.Itoa(k)))
		require.NoError(t, err)
		acks[k] = raw
	}

	// A short pause keeps the claim.
	twinEnv := maps.Clone(c.env)
	twinEnv["SUPERVAIZER_ADDR"] = "127.0.0.1:0"
	twinEnv[envInstance] = holder.id
	sep := "?"
	if strings.Contains(c.dbURL, "?") {
		sep = "&"
	}
	twinEnv[envDatabase] = c.dbURL + sep + "application_name=" + url.QueryEscape(holder.id+"-twin") + "&pool_max_conns=2"
	var twinList []string
	for k, v := range twinEnv {
		twinList = append(twinList, k+"="+v)
	}
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	twin := proctest.Start(t, c.bin, twinList)
	waitUntil(t, clusterTimeout, func() bool { // the twin is connected: it reads the claim
		var n int
		require.NoError(t, db.QueryRow(t.Context(),
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", holder.id+"-twin").Scan(&n))
		return n > 0
	}, "the second process did not connect")
	time.Sleep(3 * time.Second)
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	require.Error(t, twin.Wait(t), "a holder paused 3 s keeps its claim:\n%s", twin.Output())
	assert.Contains(t, twin.Output(), "in use by another live process")
	waitUntil(t, clusterTimeout, func() bool { return c.readiness(holder) == http.StatusOK }, "the holder is ready again")
	raw, _, err := c.invoke(t.Context(), holder.url, c.startRequest(5, "req-5"))
	require.NoError(t, err, "the holder serves after a short pause")
	acks[5] = raw

	// A long pause with a start in flight loses it. keys bounds the burst,
	// which ends with the pause (its calls then wait): catching the holder
	// with a start in flight may take long on a loaded machine.
	const keys = 4000
	var next atomic.Int64
	next.Store(6)
	var answered atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var mu sync.Mutex
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				k := int(next.Add(1)) - 1
				if k >= keys {
					return
				}
				raw, _, err := c.invoke(ctx, holder.url, c.startRequest(k, "req-"+strconv.Itoa(k)))
				if err != nil {
					return
				}
				mu.Lock()
				acks[k] = raw
				mu.Unlock()
				answered.Add(1)
			}
		})
	}
	waitUntil(t, clusterTimeout, func() bool { return answered.Load() >= 10 }, "the burst did not start")
	frozenAt := time.Now()
	inFlight := c.freezeInProgress(t, db, holder, func() bool { return next.Load() < keys })
	newcomer := c.startNamed(holder.id, holder.id+"-newcomer") // takes the claim over after 10 s
	c.procs = append(c.procs, newcomer)                        // its log counts in handlerRuns
	t.Logf("frozen with %d starts in flight; the newcomer serves %s after the pause began", len(inFlight), time.Since(frozenAt).Round(time.Second))

	var inFlightKey int
	for k := range inFlight {
		inFlightKey = k
		break
	}
	retried := make(chan json.RawMessage, 1)
	go func() { // waits up to 30 s for the record to change
		raw, _, err := c.invoke(t.Context(), newcomer.url, c.startRequest(inFlightKey, "req-retry"))
		if err != nil {
			raw = json.RawMessage(strconv.Quote(err.Error()))
		}
		retried <- raw
	}()
	if d := 15*time.Second - time.Since(frozenAt); d > 0 {
		time.Sleep(d)
	}
	frozenRecords := c.startRecords(t, db, inFlight)
	createdBefore := len(holder.logged("job created", "job_id")) // the holder is frozen: its log stands still
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	cancel()
	wg.Wait()

	// Where the pause caught the call in flight decides what it does once the
	// holder runs again: a handler that ran to its result (a job created
	// after the pause) or failed (its client gone) has its late write, or
	// its record's release, refused by the claim's epoch; a call caught in a
	// store round trip fails it (the round trip's deadline ran out during
	// the pause) before its handler runs. Either way it writes nothing under
	// the old epoch: the records stay as the pause left them.
	const fencingLog = "idempotency: result not recorded: the instance id was taken over (epoch fencing)"
	waitUntil(t, clusterTimeout, func() bool {
		return len(holder.logged(fencingLog, "job_id")) > 0 || len(holder.logged("idempotency store failed", "error")) > 0
	}, "the paused holder's call in flight did not settle")
	if len(holder.logged("job created", "job_id")) > createdBefore {
		waitUntil(t, clusterTimeout, func() bool { return len(holder.logged(fencingLog, "job_id")) > 0 },
			"a handler ran after the pause: its late write was not refused")
	}
	assert.Equal(t, frozenRecords, c.startRecords(t, db, inFlight), "the paused holder wrote a record under the old epoch")
	waitUntil(t, clusterTimeout, func() bool { return c.readiness(holder) == http.StatusServiceUnavailable }, "the paused holder still reports ready")
	resp, body, err := postRPC(t.Context(), c.http, holder.url, 1, supervaizer.MethodActionInvoke,
		map[string]any{"action_request": c.startRequest(keys+1, "req-after")}, c.studio.TokenForAction(c.startRequest(keys+1, "req-after")))
	require.NoError(t, err)
	resp.Body.Close()
	var out rpcResponse
	require.NoError(t, json.Unmarshal(body, &out))
	require.NotNil(t, out.Error, "the paused holder takes no call once it runs again: %s", body)
	assert.EqualValues(t, -32603, out.Error.Code)
	assert.Contains(t, string(body), `"retry":true`)

	select {
	case raw := <-retried:
		assert.Contains(t, string(raw), "idempotency_in_progress", "the newcomer answers in progress for the record in flight until its lease ends")
	case <-time.After(clusterTimeout):
		t.Fatal("the retry on the newcomer got no answer")
	}
	for k, raw := range acks {
		if inFlight[k] {
			continue
		}
		got, _, err := c.invoke(t.Context(), newcomer.url, c.startRequest(k, "req-replay-"+strconv.Itoa(k)))
		require.NoError(t, err)
		require.Equal(t, string(raw), string(got), "key %d acknowledged before the pause replays on the newcomer", k)
	}
	created, _ := c.handlerRuns()
	for job, n := range created {
		require.Equal(t, 1, n, "%s created once", job)
	}
	assert.NotEmpty(t, newcomer.logged("instance id taken over from a process that stopped renewing its claim", "epoch"))
}
