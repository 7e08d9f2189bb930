package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	"github.com/supervaize/supervaizer-go/store"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// Several controller processes of the example on one PostgreSQL schema,
// behind a round-robin load balancer stand-in on loopback, as an operator
// runs them: the real binary, one process per instance, each with its own
// port and SUPERVAIZER_INSTANCE_ID, all attached to one (fake) Studio.
//
// The handler runs are counted from the example's own log: startJob logs
// "job created" when it creates a job, and "job.start: the job exists,
// nothing created" when a start converges on an existing job: every run of
// the handler that reaches the job store logs one of the two, once it has
// returned (a process killed in between logs neither).

// Generous bounds for a loaded machine; no test asserts a latency.
const (
	clusterTimeout = 60 * time.Second // start of a process, a burst, a stream
	httpTimeout    = 60 * time.Second // one call
)

// agentProc is one controller process of the example.
type agentProc struct {
	id     string // its SUPERVAIZER_INSTANCE_ID
	url    string // http://127.0.0.1:<port>
	cmd    *exec.Cmd
	stderr *proctest.Buffer
	done   chan struct{} // closed when the process has exited
}

// logURL is the listening URL the startup log announces.
var logURL = regexp.MustCompile(`url=(http://127\.0\.0\.1:[0-9]+)`)

// cluster is n processes of the example on one PostgreSQL schema and the
// load balancer in front of them.
type cluster struct {
	t      *testing.T
	studio *svtest.FakeStudio
	bin    string
	env    map[string]string
	dbURL  string // the test database, for the test's own queries
	schema string
	procs  []*agentProc
	lb     *roundRobin
	http   *http.Client
	rpcSeq int64
	mu     sync.Mutex
}

// startCluster builds the example once and starts n processes of it on a new
// PostgreSQL schema (extra is added to their environment), then the load
// balancer; it returns once every process is ready. It skips the test when
// SUPERVAIZER_TEST_DATABASE_URL is unset.
func startCluster(t *testing.T, n int, extra map[string]string) *cluster {
	t.Helper()
	studio := svtest.NewFakeStudio(t)
	env := pgEnv(t, studio) // skips without a database
	c := &cluster{t: t, studio: studio, env: env, dbURL: env[envDatabase], schema: env[envSchema]}

	c.bin = proctest.Build(t, "research-agent")

	c.lb = newRoundRobin()
	t.Cleanup(c.lb.srv.Close)
	// Attached to the fake Studio (registration handshake, controller key),
	// with the load balancer's address as the public URL.
	api := svtest.NewFakeStudioAPI(t, studio)
	maps.Copy(c.env, api.Env())
	c.env["SUPERVAIZER_PRIVATE_KEY"] = svtest.ControllerKeyPEM(t)
	c.env["SUPERVAIZER_PUBLIC_URL"] = c.lb.srv.URL
	// A subscriber's queue holds a whole burst: these tests count events
	// across instances, and a loaded machine can leave a stream's writer
	// behind a 300-call burst long enough for the default 100-event queue
	// to drop its oldest (the protocol's rule for slow clients, tested in
	// internal/sse, not here).
	c.env[envSSEQueue] = "1024"
	maps.Copy(c.env, extra)

	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	c.http = &http.Client{Transport: tr, Timeout: httpTimeout}

	for i := range n {
		c.procs = append(c.procs, c.startProc(fmt.Sprintf("instance-%d", i+1)))
	}
	for _, p := range c.procs {
		c.lb.add(p.url)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range c.procs {
				t.Logf("stderr of %s:\n%s", p.id, tailLines(p.stderr.String(), 30))
			}
		}
	})
	return c
}

// startProc starts one process of the example with its own instance id, on
// an ephemeral loopback port, and waits until it is ready. The pooled
// database connections carry the instance id as application_name, so that
// the test can see when the server has dropped those of a killed process.
func (c *cluster) startProc(id string) *agentProc {
	c.t.Helper()
	return c.startNamed(id, id)
}

// startNamed is startProc with app as the application_name of the process's
// database connections (the instance id when it is the only process with it).
func (c *cluster) startNamed(id, app string) *agentProc {
	t := c.t
	t.Helper()
	env := maps.Clone(c.env)
	env["SUPERVAIZER_ADDR"] = "127.0.0.1:0"
	env[envInstance] = id
	sep := "?"
	if strings.Contains(c.dbURL, "?") {
		sep = "&"
	}
	// A small pool: the test's calls queue for it, and several processes
	// stay well within the max_connections of a server other tests share.
	env[envDatabase] = c.dbURL + sep + "application_name=" + url.QueryEscape(app) + "&pool_max_conns=4"

	p := &agentProc{id: id, cmd: exec.Command(c.bin), stderr: &proctest.Buffer{}, done: make(chan struct{})}
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, p.stderr
	require.NoError(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.stop)

	waitUntil(t, clusterTimeout, func() bool {
		select {
		case <-p.done:
			t.Fatalf("%s exited before serving:\n%s", id, p.stderr.String())
		default:
		}
		if m := logURL.FindStringSubmatch(p.stderr.String()); m != nil {
			p.url = m[1]
			return true
		}
		return false
	}, "%s announced no URL", id)
	waitUntil(t, clusterTimeout, func() bool {
		resp, err := c.http.Get(p.url + supervaizer.ReadinessPath)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "%s never became ready", id)
	return p
}

// stop ends the process with SIGTERM (SIGKILL after 20 s); a no-op once it
// has exited.
func (p *agentProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// logged returns the values of attr in the lines of the process's log whose
// message is msg.
func (p *agentProc) logged(msg, attr string) []string {
	quoted := "msg=" + strconv.Quote(msg)
	re := regexp.MustCompile(` ` + regexp.QuoteMeta(attr) + `=("(?:[^"\\]|\\.)*"|\S+)`)
	var out []string
	for _, line := range strings.Split(p.stderr.String(), "\n") {
		if !strings.Contains(line, quoted) {
			continue
		}
		if m := re.FindStringSubmatch(line); m != nil {
			v := m[1]
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			}
			out = append(out, v)
		}
	}
	return out
}

// roundRobin is the load balancer stand-in: an HTTP reverse proxy on
// loopback that sends each request to the next live backend in turn. Each
// answer carries the index of the backend that served it in X-Test-Backend.
type roundRobin struct {
	srv      *httptest.Server
	mu       sync.Mutex
	backends []*httputil.ReverseProxy
	down     []bool
	next     int
	arrivals chan int // the backend chosen for each request, in arrival order
}

func newRoundRobin() *roundRobin {
	lb := &roundRobin{arrivals: make(chan int, 4096)}
	lb.srv = httptest.NewServer(lb)
	return lb
}

// add appends a backend.
func (lb *roundRobin) add(base string) {
	u, err := url.Parse(base)
	if err != nil {
		panic(err)
	}
	p := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64},
		// A backend that died answers 502 (the client retries), unlogged.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, err.Error(), http.StatusBadGateway)
		},
	}
	lb.mu.Lock()
	defer lb.mu.Unlock()
	lb.backends = append(lb.backends, p)
	lb.down = append(lb.down, false)
}

// markDown takes backend i out of the rotation, as a health check would.
func (lb *roundRobin) markDown(i int) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	lb.down[i] = true
}

func (lb *roundRobin) pick() (int, *httputil.ReverseProxy) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	for range lb.backends {
		i := lb.next % len(lb.backends)
		lb.next++
		if !lb.down[i] {
			return i, lb.backends[i]
		}
	}
	return -1, nil
}

func (lb *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i, p := lb.pick()
	select {
	case lb.arrivals <- i:
	default:
	}
	if p == nil {
		http.Error(w, "no backend", http.StatusBadGateway)
		return
	}
	w.Header().Set("X-Test-Backend", strconv.Itoa(i))
	p.ServeHTTP(w, r)
}

// awaitArrival waits until the balancer has chosen the backend of one more
// request, and returns it.
func (lb *roundRobin) awaitArrival(t *testing.T) int {
	t.Helper()
	select {
	case i := <-lb.arrivals:
		return i
	case <-time.After(clusterTimeout):
		t.Fatalf("no request reached the load balancer within %v", clusterTimeout)
		return -1
	}
}

// startRequest is job.start of job job-<key> with idempotency key key-<key>.
func (c *cluster) startRequest(key int, requestID string) contracts.ActionRequest {
	req := actionRequest(c.t, wsA, actionStart, map[string]any{"topic_id": "eu-battery-market"})
	req.RequestID, req.JobID, req.IdempotencyKey = requestID, jobOf(key), "key-"+strconv.Itoa(key)
	return req
}

// syncRequest is job.sync of job job-<key>.
func (c *cluster) syncRequest(key int, requestID string) contracts.ActionRequest {
	req := actionRequest(c.t, wsA, actionSync, nil)
	req.RequestID, req.JobID = requestID, jobOf(key)
	return req
}

func jobOf(key int) string { return "job-" + strconv.Itoa(key) }

// invoke sends req to base (the load balancer or one instance) with a fresh
// workspace token; it returns the result as sent and the backend that served
// it (-1 when not through the load balancer). A transport failure, an HTTP
// status other than 200 or a JSON-RPC error is an error. Safe for
// concurrent use; it never ends the test.
func (c *cluster) invoke(ctx context.Context, base string, req contracts.ActionRequest) (json.RawMessage, int, error) {
	c.mu.Lock()
	c.rpcSeq++
	id := c.rpcSeq
	c.mu.Unlock()
	resp, raw, err := postRPC(ctx, c.http, base, id, supervaizer.MethodActionInvoke,
		map[string]any{"action_request": req}, c.studio.TokenForAction(req))
	backend := -1
	if resp != nil {
		if v := resp.Header.Get("X-Test-Backend"); v != "" {
			backend, _ = strconv.Atoi(v)
		}
	}
	if err != nil {
		return nil, backend, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, backend, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, raw)
	}
	var out rpcResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, backend, err
	}
	if out.Error != nil {
		return nil, backend, fmt.Errorf("JSON-RPC error %d: %s", out.Error.Code, out.Error.Message)
	}
	return out.Result, backend, nil
}

// handlerRuns returns, per job, how many times the job.start handler created
// it and how many times it converged on it, over the logs of every process
// (a killed one's included, up to its death).
func (c *cluster) handlerRuns() (created, converged map[string]int) {
	created, converged = map[string]int{}, map[string]int{}
	for _, p := range c.procs {
		for _, id := range p.logged("job created", "job_id") {
			created[id]++
		}
		for _, id := range p.logged("job.start: the job exists, nothing created", "job_id") {
			converged[id]++
		}
	}
	return created, converged
}

// resultEffects decodes the effects of a result, keeping their bytes.
func resultEffects(t *testing.T, raw json.RawMessage) (json.RawMessage, []contracts.Effect) {
	t.Helper()
	var res struct {
		Status  string          `json:"status"`
		Effects json.RawMessage `json:"effects"`
	}
	require.NoError(t, json.Unmarshal(raw, &res), "result %s", raw)
	require.Equal(t, contracts.StatusOK, res.Status, "result %s", raw)
	var effs []contracts.Effect
	require.NoError(t, json.Unmarshal(res.Effects, &effs))
	return res.Effects, effs
}

// hasJobStarted reports whether effs hold job.started for job.
func hasJobStarted(effs []contracts.Effect, job string) bool {
	for _, e := range effs {
		if e.Type == "job.started" && e.JobID == job {
			return true
		}
	}
	return false
}

// stream is one subscription to GET /a2a/events of an instance, read in the
// background; with a limit, it disconnects by itself after that many events.
type stream struct {
	ended  chan struct{} // closed once the connection is over
	mu     sync.Mutex
	events []sseEvent
}

// openStream subscribes to base's event stream, with Last-Event-ID when
// lastID is not empty.
func openStream(t *testing.T, base, lastID string, limit int) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/a2a/events", nil)
	require.NoError(t, err)
	req.Header.Set(supervaizer.HeaderAPIKey, testAPIKey)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := &stream{ended: make(chan struct{})}
	go func() {
		defer close(s.ended)
		defer cancel() // disconnects after the limit
		defer resp.Body.Close()
		scanEvents(resp.Body, func(ev sseEvent) bool {
			// Events without an id (the supervaizer.connected greeting of
			// each connection) are not part of the replayable stream.
			if ev.id == "" {
				return true
			}
			s.mu.Lock()
			s.events = append(s.events, ev)
			n := len(s.events)
			s.mu.Unlock()
			return limit == 0 || n < limit
		})
	}()
	return s
}

// received returns the events received so far.
func (s *stream) received() []sseEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sseEvent(nil), s.events...)
}

// awaitRequest waits until the stream has received the effect event of
// requestID and returns every event received.
func (s *stream) awaitRequest(t *testing.T, requestID string) []sseEvent {
	t.Helper()
	var evs []sseEvent
	waitUntil(t, clusterTimeout, func() bool {
		evs = s.received()
		for _, ev := range evs {
			if eventRequestID(t, ev) == requestID {
				return true
			}
		}
		return false
	}, "the stream never received the event of %s", requestID)
	return evs
}

// eventRequestID is the request_id of an effect event ("" for another event).
func eventRequestID(t *testing.T, ev sseEvent) string {
	t.Helper()
	if ev.name != supervaizer.EventEffect {
		return ""
	}
	var e effectEvent
	require.NoError(t, json.Unmarshal(ev.data, &e), "event %s", ev.data)
	return e.RequestID
}

// requireIncreasingIDs checks that the events' ids are numbers, strictly
// increasing.
func requireIncreasingIDs(t *testing.T, evs []sseEvent) {
	t.Helper()
	var last uint64
	for i, ev := range evs {
		id, err := strconv.ParseUint(ev.id, 10, 64)
		require.NoError(t, err, "event %d: id %q", i, ev.id)
		require.Greater(t, id, last, "event %d: ids must increase strictly", i)
		last = id
	}
}

// requireSameEvents checks that got is want, event for event: id, name and
// data.
func requireSameEvents(t *testing.T, want, got []sseEvent) {
	t.Helper()
	require.Equal(t, len(want), len(got), "number of events")
	for i := range want {
		require.Equal(t, want[i].id, got[i].id, "event %d: id", i)
		require.Equal(t, want[i].name, got[i].name, "event %d: name", i)
		require.Equal(t, string(want[i].data), string(got[i].data), "event %d: data", i)
	}
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestPostgresThreeProcesses runs three processes of the example on one
// PostgreSQL schema behind the round-robin load balancer. 100 idempotency
// keys are each sent three times, concurrently, one copy to each instance
// (300 job.start calls, each with its own request_id): the handler runs
// exactly once per key (the processes' logs hold 100 "job created" lines, one
// per job, and no converged start) and the three copies of a key get the same
// result bytes, which carry the key's job.started.
//
// Every successful call publishes one supervaizer.effect event, a replay
// included (docs/protocol.md, "A replayed call publishes its effects again"):
// a subscriber of instance 1 receives the 300 events, each exactly once (by
// request_id), ids strictly increasing, each with the effects of its key's
// result, byte for byte, so the 100 starts' job.started effects all reach it.
// A second subscriber of instance 1 disconnects mid-burst, after 120 events;
// while the burst and then more calls go on, it resumes on instance 2 with
// Last-Event-ID and receives exactly what it missed: its two parts together
// are the first subscriber's events, event for event.
func TestPostgresThreeProcesses(t *testing.T) {
	c := startCluster(t, 3, nil)
	full := openStream(t, c.procs[0].url, "", 0)
	const disconnectAfter = 120
	part := openStream(t, c.procs[0].url, "", disconnectAfter)

	const keys, copies = 100, 3
	type call struct {
		key, copy int
		reqID     string
		raw       json.RawMessage
		backend   int
		err       error
	}
	calls := make([]*call, keys*copies)
	var wg sync.WaitGroup
	for n := range calls {
		cl := &call{key: n / copies, copy: n % copies, reqID: fmt.Sprintf("req-%d-%d", n/copies, n%copies)}
		calls[n] = cl
		wg.Go(func() {
			cl.raw, cl.backend, cl.err = c.invoke(t.Context(), c.lb.srv.URL, c.startRequest(cl.key, cl.reqID))
		})
		// The next call leaves once this one has reached the balancer: call n
		// goes to instance n%3, so a key's copies reach three instances,
		// while they are in flight together.
		c.lb.awaitArrival(t)
	}
	wg.Wait()

	byKey := make([]json.RawMessage, keys)
	for _, cl := range calls {
		require.NoError(t, cl.err, "call %s", cl.reqID)
		require.Equal(t, cl.copy, cl.backend, "call %s: round-robin sends copy c of a key to instance c+1", cl.reqID)
		if cl.copy == 0 {
			byKey[cl.key] = cl.raw
			_, effs := resultEffects(t, cl.raw)
			require.True(t, hasJobStarted(effs, jobOf(cl.key)), "key %d: the result carries no job.started: %s", cl.key, cl.raw)
			continue
		}
		require.Equal(t, string(byKey[cl.key]), string(cl.raw), "call %s: the instances answered different bytes for one key", cl.reqID)
	}

	created, converged := c.handlerRuns()
	require.Len(t, created, keys, "jobs created over the three processes")
	for k := range keys {
		require.Equal(t, 1, created[jobOf(k)], "the handler created job %d once", k)
	}
	require.Empty(t, converged, "no start ran the handler a second time")

	// More calls while the second subscriber is away: job.sync through the
	// balancer (they publish too, and run no start); the last is the marker.
	waitClosed(t, part.ended, "the second subscriber's disconnect")
	const more = 6
	for i := range more {
		_, _, err := c.invoke(t.Context(), c.lb.srv.URL, c.syncRequest(i, "req-more-"+strconv.Itoa(i)))
		require.NoError(t, err)
	}
	marker := "req-more-" + strconv.Itoa(more-1)

	evs := full.awaitRequest(t, marker)
	require.Equal(t, keys*copies+more, len(evs), "events on instance 1")
	requireIncreasingIDs(t, evs)
	seen := map[string]int{}
	started := map[string]bool{}
	for i, ev := range evs {
		require.Equal(t, supervaizer.EventEffect, ev.name, "event %d", i)
		var e struct {
			Action    string          `json:"action"`
			RequestID string          `json:"request_id"`
			Effects   json.RawMessage `json:"effects"`
		}
		require.NoError(t, json.Unmarshal(ev.data, &e))
		seen[e.RequestID]++
		if e.Action != actionStart {
			continue
		}
		var key, cp int
		_, err := fmt.Sscanf(e.RequestID, "req-%d-%d", &key, &cp)
		require.NoError(t, err, "request_id %q", e.RequestID)
		effs, parsed := resultEffects(t, byKey[key])
		require.Equal(t, string(effs), string(e.Effects), "event of %s: the effects of the key's result", e.RequestID)
		if hasJobStarted(parsed, jobOf(key)) {
			started[jobOf(key)] = true
		}
	}
	for _, cl := range calls {
		require.Equal(t, 1, seen[cl.reqID], "events of %s", cl.reqID)
	}
	require.Len(t, started, keys, "job.started of every start reached the subscriber")

	// The second subscriber resumes on instance 2 from its last event.
	first := part.received()
	require.Equal(t, disconnectAfter, len(first))
	resumed := openStream(t, c.procs[1].url, first[len(first)-1].id, 0)
	rest := resumed.awaitRequest(t, marker)
	requireSameEvents(t, evs, append(first, rest...))
	t.Logf("300 starts: %d events on instance 1, last id %s; resumed on instance 2 after id %s: %d events",
		len(evs), evs[len(evs)-1].id, first[len(first)-1].id, len(rest))
}

// TestPostgresKillInstance runs three processes of the example on one
// PostgreSQL schema behind the round-robin load balancer, with an 8 s
// idempotency lease, and kills one of them with a real SIGKILL in the middle
// of a burst of job.start calls (one new key each; at least 300, and on
// until the kill), at a moment it has starts in progress: the victim is
// frozen with SIGSTOP until the database shows such a start (a pending
// idempotency record of its instance id), then killed. The clients retry
// every call that got no answer, with the same key, as Studio does; the
// balancer takes the dead instance out of rotation.
//
//   - Every start is acknowledged, and each answer (those the victim gave
//     before dying included) is replayed byte for byte afterwards by both
//     surviving instances: no acknowledged start is lost.
//   - None runs twice: a start the victim did not leave in progress runs its
//     handler exactly once over the three processes' logs; one it left in
//     progress is taken over by a survivor once its lease has ended (one
//     "idempotency record taken over" log line per orphaned record) and runs
//     at most once more, creating its job at most once in all.
//   - A subscriber of the victim loses its connection with it, resumes on
//     another instance with Last-Event-ID and, once more calls are served,
//     has received exactly the events of a subscriber that stayed on a
//     surviving instance all along, event for event.
func TestPostgresKillInstance(t *testing.T) {
	const lease = 8 * time.Second
	c := startCluster(t, 3, map[string]string{envLease: lease.String()})
	const victimIdx = 2
	victim := c.procs[victimIdx]
	ref := openStream(t, c.procs[0].url, "", 0)
	onVictim := openStream(t, victim.url, "", 0)
	db, err := pgx.Connect(t.Context(), c.dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close(context.Background()) })

	// The burst has at least minKeys starts, and goes on until the victim
	// is killed: on a loaded machine, catching it with a start in progress
	// may take longer than minKeys starts last. maxKeys bounds it.
	const minKeys, maxKeys, workers = 300, 3000, 12
	type start struct {
		raw      json.RawMessage
		backend  int // the instance that acknowledged it
		attempts int
		err      error
	}
	starts := make([]start, maxKeys)
	var acked, produced atomic.Int64
	var killed atomic.Bool
	work := make(chan int)
	go func() {
		defer close(work)
		for k := range maxKeys {
			if k >= minKeys && killed.Load() {
				return
			}
			select {
			case work <- k:
				produced.Add(1)
			case <-t.Context().Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for k := range work {
				s := &starts[k]
				s.raw, s.backend, s.attempts, s.err = c.startUntilAcknowledged(t.Context(), k)
				if s.err == nil {
					acked.Add(1)
				}
			}
		})
	}

	// Mid-burst: freeze the victim until it holds a start in progress, then
	// kill it.
	waitUntil(t, clusterTimeout, func() bool { return acked.Load() >= minKeys/6 }, "the burst did not start")
	seenFrozen := c.killInProgress(t, db, victimIdx, func() bool { return acked.Load() < maxKeys })
	killed.Store(true)
	killedAt := acked.Load()
	orphans := c.pendingStarts(t, db, victim.id)
	require.NotEmpty(t, orphans)
	for k := range seenFrozen {
		require.True(t, orphans[k], "key %d was in progress on the frozen victim and is no longer pending", k)
	}
	wg.Wait()
	keys := int(produced.Load())
	require.GreaterOrEqual(t, keys, minKeys)
	starts = starts[:keys]

	fromVictim := 0
	for k, s := range starts {
		require.NoError(t, s.err, "key %d never acknowledged", k)
		if s.backend == victimIdx {
			fromVictim++
		}
	}
	require.Positive(t, fromVictim, "the victim acknowledged starts before it died")
	t.Logf("SIGKILL after %d of %d acknowledgments; %d acknowledged by the victim; %d start(s) orphaned: %v",
		killedAt, keys, fromVictim, len(orphans), orphans)

	// No acknowledged start is lost: both survivors replay every answer.
	for k, s := range starts {
		for _, p := range c.procs[:victimIdx] {
			raw, _, err := c.invoke(t.Context(), p.url, c.startRequest(k, fmt.Sprintf("req-replay-%d-%s", k, p.id)))
			require.NoError(t, err)
			require.Equal(t, string(s.raw), string(raw), "key %d: %s replays other bytes than the acknowledged ones", k, p.id)
		}
	}

	// None runs twice.
	created, converged := c.handlerRuns()
	for k := range keys {
		job := jobOf(k)
		runs := created[job] + converged[job]
		require.LessOrEqual(t, created[job], 1, "job %d created twice", k)
		if orphans[k] {
			require.True(t, runs >= 1 && runs <= 2, "orphaned key %d: %d handler runs", k, runs)
			continue
		}
		require.Equal(t, 1, created[job], "key %d: job created once", k)
		require.Zero(t, converged[job], "key %d: the handler ran again", k)
	}
	for k := range orphans {
		t.Logf("orphaned key %d: job created %d time(s), start converged %d time(s) (converged: the victim had created the job)",
			k, created[jobOf(k)], converged[jobOf(k)])
	}
	takeovers := 0
	for _, p := range c.procs[:victimIdx] {
		for _, reason := range p.logged("idempotency record taken over", "reason") {
			require.Equal(t, "its lease expired", reason)
			takeovers++
		}
	}
	require.Equal(t, len(orphans), takeovers, "each orphaned record is taken over once, after its lease")

	// The victim's subscriber resumes on instance 2 and misses nothing.
	waitClosed(t, onVictim.ended, "the end of the killed instance's stream")
	before := onVictim.received()
	require.NotEmpty(t, before)
	resumed := openStream(t, c.procs[1].url, before[len(before)-1].id, 0)
	const marker = "req-marker"
	_, _, err = c.invoke(t.Context(), c.lb.srv.URL, c.syncRequest(0, marker))
	require.NoError(t, err)
	want := ref.awaitRequest(t, marker)
	requireIncreasingIDs(t, want)
	requireSameEvents(t, want, append(before, resumed.awaitRequest(t, marker)...))
	t.Logf("the victim's subscriber got %d events before the kill, %d after resuming on instance 2",
		len(before), len(want)-len(before))
}

// startUntilAcknowledged sends job.start of key through the load balancer
// until it is acknowledged (status ok), retrying with the same key and
// request_id after a call that got no answer or idempotency_in_progress.
func (c *cluster) startUntilAcknowledged(ctx context.Context, key int) (json.RawMessage, int, int, error) {
	reqID := "req-" + strconv.Itoa(key)
	deadline := time.Now().Add(clusterTimeout)
	for attempt := 1; ; attempt++ {
		raw, backend, err := c.invoke(ctx, c.lb.srv.URL, c.startRequest(key, reqID))
		if err == nil {
			var res struct {
				Status string `json:"status"`
				Errors []struct {
					Code string `json:"code"`
				} `json:"errors"`
			}
			if err = json.Unmarshal(raw, &res); err != nil {
				return nil, backend, attempt, err
			}
			if res.Status == contracts.StatusOK {
				return raw, backend, attempt, nil
			}
			if len(res.Errors) == 0 || res.Errors[0].Code != contracts.ErrorIdempotencyInProgress {
				return nil, backend, attempt, fmt.Errorf("job.start of key %d: %s", key, raw)
			}
			err = fmt.Errorf("job.start of key %d: %s", key, raw)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, backend, attempt, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killInProgress freezes process idx with SIGSTOP, and kills it with SIGKILL
// once the database shows a start in progress of its instance; otherwise it
// lets it run a moment (SIGCONT) and tries again while going() holds. It
// takes the instance out of the balancer's rotation, waits until the
// database has dropped the process's connections, and returns the starts
// seen in progress.
func (c *cluster) killInProgress(t *testing.T, db *pgx.Conn, idx int, going func() bool) map[int]bool {
	t.Helper()
	p := c.procs[idx]
	pending := c.freezeInProgress(t, db, p, going)
	require.NoError(t, p.cmd.Process.Kill())
	waitClosed(t, p.done, p.id+"'s exit after SIGKILL")
	c.lb.markDown(idx)
	// The database drops the dead process's connections (aborting
	// what they had begun): what it left in progress is then settled.
	waitUntil(t, clusterTimeout, func() bool {
		var n int
		require.NoError(t, db.QueryRow(t.Context(),
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", p.id).Scan(&n))
		return n == 0
	}, "the database kept %s's connections after its death", p.id)
	return pending
}

// freezeInProgress freezes p with SIGSTOP, and leaves it frozen once the
// database shows a start in progress of its instance; otherwise it lets it
// run a moment (SIGCONT) and tries again while going() holds. It returns the
// starts seen in progress.
func (c *cluster) freezeInProgress(t *testing.T, db *pgx.Conn, p *agentProc, going func() bool) map[int]bool {
	t.Helper()
	pid := p.cmd.Process.Pid
	for {
		require.True(t, going(), "the burst ended before %s was caught with a start in progress", p.id)
		require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
		// What the frozen process sent before it stopped still runs on the
		// server: read the records once none of its statements has run for a
		// while (a statement still in a socket buffer waits for its server
		// process to be scheduled, which a loaded machine delays), so that
		// they stay as read.
		c.awaitQuiet(t, db, p.id)
		time.Sleep(300 * time.Millisecond)
		c.awaitQuiet(t, db, p.id)
		if pending := c.pendingStarts(t, db, p.id); len(pending) > 0 {
			return pending
		}
		require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitQuiet waits until no statement of instance's pooled connections is
// running on the database server, twice in a row, a moment apart.
func (c *cluster) awaitQuiet(t *testing.T, db *pgx.Conn, instance string) {
	t.Helper()
	quiet := 0
	waitUntil(t, clusterTimeout, func() bool {
		var active int
		require.NoError(t, db.QueryRow(t.Context(),
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'", instance).Scan(&active))
		if active > 0 {
			quiet = 0
		} else {
			quiet++
		}
		return quiet >= 2
	}, "%s's statements kept running while it was frozen", instance)
}

// startRecordsRead calls fn with the index k (of key-k) and the value of
// every job.start idempotency record stored in the cluster's schema.
func (c *cluster) startRecordsRead(t *testing.T, db *pgx.Conn, fn func(k int, value []byte)) {
	t.Helper()
	rows, err := db.Query(t.Context(), "SELECT key, value FROM "+pgx.Identifier{c.schema, "kv"}.Sanitize())
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var key, value []byte
		require.NoError(t, rows.Scan(&key, &value))
		parts, err := store.ParseKey(string(key))
		if err != nil || len(parts) != 5 || parts[0] != "idempotency.ws" || parts[3] != actionStart {
			continue
		}
		k, err := strconv.Atoi(strings.TrimPrefix(parts[4], "=key-"))
		require.NoError(t, err, "record key %q", key)
		fn(k, value)
	}
	require.NoError(t, rows.Err())
}

// pendingStarts returns the keys of the job.start idempotency records in
// progress (pending) that instance owns, read from the database.
func (c *cluster) pendingStarts(t *testing.T, db *pgx.Conn, instance string) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	c.startRecordsRead(t, db, func(k int, value []byte) {
		var rec struct {
			State    string `json:"state"`
			Instance string `json:"instance"`
		}
		require.NoError(t, json.Unmarshal(value, &rec))
		if rec.State == "pending" && rec.Instance == instance {
			out[k] = true
		}
	})
	return out
}

// startRecords returns the stored job.start idempotency records of keys,
// byte for byte ("" for one that is gone).
func (c *cluster) startRecords(t *testing.T, db *pgx.Conn, keys map[int]bool) map[int]string {
	t.Helper()
	out := make(map[int]string, len(keys))
	for k := range keys {
		out[k] = ""
	}
	c.startRecordsRead(t, db, func(k int, value []byte) {
		if keys[k] {
			out[k] = string(value)
		}
	})
	return out
}

// TestPostgresRestartedInstanceTakesOverAtOnce kills, with SIGKILL, one of
// two processes of the example sharing a PostgreSQL schema while it has
// job.start calls in progress (frozen with SIGSTOP until the database shows
// one), with a 10-minute lease, then starts it again with the same
// SUPERVAIZER_INSTANCE_ID: the retries of the orphaned starts sent to it
// succeed at once, long before the lease, each record taken over by the
// restarted instance as "an earlier boot of this instance left it pending";
// every start it acknowledged before dying is replayed byte for byte by both
// processes, and no job is created twice.
func TestPostgresRestartedInstanceTakesOverAtOnce(t *testing.T) {
	c := startCluster(t, 2, map[string]string{envLease: "10m"})
	const victimIdx = 1
	victim := c.procs[victimIdx]
	db, err := pgx.Connect(t.Context(), c.dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close(context.Background()) })

	// keys bounds the burst, which ends with the victim's death (its calls
	// then fail): catching it with a start in progress may take long on a
	// loaded machine.
	const keys, workers = 3000, 8
	acks := make([]json.RawMessage, keys)
	var answered, next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= keys {
					return
				}
				raw, _, err := c.invoke(t.Context(), victim.url, c.startRequest(k, "req-"+strconv.Itoa(k)))
				if err != nil {
					return // the victim died: the rest of the burst is not sent
				}
				acks[k] = raw
				answered.Add(1)
			}
		})
	}
	waitUntil(t, clusterTimeout, func() bool { return answered.Load() >= 50 }, "the burst did not start")
	c.killInProgress(t, db, victimIdx, func() bool { return answered.Load() < keys })
	wg.Wait()
	orphans := c.pendingStarts(t, db, victim.id)
	require.NotEmpty(t, orphans)

	restarted := c.startProc(victim.id)
	c.procs = append(c.procs, restarted) // its log counts in handlerRuns
	for k := range orphans {
		raw, _, err := c.invoke(t.Context(), restarted.url, c.startRequest(k, "req-"+strconv.Itoa(k)))
		require.NoError(t, err)
		_, effs := resultEffects(t, raw) // status ok, long before the 10-minute lease
		acks[k] = raw
		t.Logf("orphaned key %d taken over by the restarted instance (job.started in the answer: %v)", k, hasJobStarted(effs, jobOf(k)))
	}
	reasons := restarted.logged("idempotency record taken over", "reason")
	require.Len(t, reasons, len(orphans))
	for _, r := range reasons {
		require.Equal(t, "an earlier boot of this instance left it pending", r)
	}
	require.Empty(t, c.procs[0].logged("idempotency record taken over", "reason"), "the other instance took nothing over")

	acked := 0
	for k, raw := range acks {
		if raw == nil {
			continue
		}
		acked++
		for _, p := range []*agentProc{c.procs[0], restarted} {
			got, _, err := c.invoke(t.Context(), p.url, c.startRequest(k, fmt.Sprintf("req-replay-%d-%s", k, p.id)))
			require.NoError(t, err)
			require.Equal(t, string(raw), string(got), "key %d: replayed by %s", k, p.id)
		}
	}
	created, _ := c.handlerRuns()
	for job, n := range created {
		require.Equal(t, 1, n, "%s created once", job)
	}
	t.Logf("%d starts acknowledged, %d orphaned and taken over at once by the restarted instance", acked, len(orphans))
}
