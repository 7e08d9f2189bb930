package supervaizer_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/internal/tools/ssetest"
)

// TestSSEEffectEvents checks the protocol through the server: connected
// first, then one effect event per successful action, in order, with
// increasing ids and the documented data (nulls dropped), including status
// "error" results and empty effects; nothing for JSON-RPC errors or surfaces.
func TestSSEEffectEvents(t *testing.T) {
	h := newHarness(t)
	ts, client := newHTTPServer(t, h.srv)
	s := openEvents(t, client, ts.URL, testReadKey, nil)
	require.Equal(t, http.StatusOK, s.resp.StatusCode)
	assert.Equal(t, "text/event-stream", s.resp.Header.Get("Content-Type"))
	first := s.next(t)
	assert.Equal(t, "supervaizer.connected", first.Name)
	assert.JSONEq(t, `{"status":"connected"}`, first.Data)

	tok := "Bearer " + h.validToken()
	calls := []struct {
		action string
		ok     bool
	}{
		{"job.start", true},
		{"fail.error", false},
		{"job.reject", true},
		{"job.unhandled", false},
		{"job.empty", true},
		{"fail.invalid", false},
		{"workspace_binding.options", true},
		{"job.nulls", true},
	}
	for i, c := range calls {
		resp := h.invoke(t, tok, actionParams(c.action, func(p map[string]any) { p["request_id"] = fmt.Sprintf("req-%d", i) }))
		assert.Equal(t, c.ok, resp.Error == nil, c.action)
		if i == 1 { // a surface load in the middle publishes nothing either
			body := rpcBody(t, 1, supervaizer.MethodSurfaceLoad, surfaceParams("job.start", nil))
			require.Nil(t, decodeRPC(t, h.serve(rpcCall{body: body, key: testWriteKey, token: tok})).Error)
		}
	}
	want := []string{
		`{"agent_slug":"research-agent","action":"job.start","request_id":"req-0",
		  "effects":[{"type":"job.started","job_id":"job-77","data":{"topic_id":"battery-market"}}]}`,
		`{"agent_slug":"research-agent","action":"job.reject","request_id":"req-2","effects":[]}`,
		`{"agent_slug":"research-agent","action":"job.empty","request_id":"req-4","effects":[]}`,
	}
	var lastID uint64
	for _, w := range want {
		ev := s.nextEffect(t)
		assert.JSONEq(t, w, ev.Data)
		assert.NotContains(t, ev.Data, "null", "null keys are dropped")
		id, err := strconv.ParseUint(ev.ID, 10, 64)
		require.NoError(t, err, "effect events carry a numeric id")
		assert.Greater(t, id, lastID)
		lastID = id
	}
	ev := s.nextEffect(t)
	var d effectData
	require.NoError(t, json.Unmarshal([]byte(ev.Data), &d))
	assert.Equal(t, effectData{AgentSlug: testAgentSlug, Action: "workspace_binding.options", RequestID: "req-6",
		Effects: d.Effects}, d)
	require.Len(t, d.Effects, 1)
	assert.Equal(t, "workspace_binding.options.echoed", d.Effects[0]["type"])

	// Null keys of typed objects are dropped, those of free-form objects kept.
	ev = s.nextEffect(t)
	assert.JSONEq(t, `{"agent_slug":"research-agent","action":"job.nulls","request_id":"req-7",
		"effects":[{"type":"job.nulls","data":{"kept":null}}]}`, ev.Data)
	resp := h.invoke(t, tok, actionParams("job.nulls", nil))
	require.Nil(t, resp.Error)
	assert.JSONEq(t, `{"status":"ok","effects":[{"type":"job.nulls","data":{"kept":null}}]}`, string(resp.Result))
}

// TestSSENothingPublishedOnFailure runs every golden case and every transport
// rejection, then one marker action: replaying the stream from the start must
// show exactly the successful actions, then the marker.
func TestSSENothingPublishedOnFailure(t *testing.T) {
	h := newHarness(t, withServerOptions(supervaizer.WithMaxBodyBytes(64<<10)))
	tok := "Bearer " + h.validToken()
	var wantActions []string
	for _, name := range sortedGoldenNames() {
		tc := rpcGoldenCases[name]
		resp := decodeRPC(t, serveGolden(t, h, name))
		require.Equal(t, tc.code == 0, resp.Error == nil, name)
		if tc.code == 0 && strings.HasPrefix(name, "ok_action_") {
			var req struct {
				Params map[string]json.RawMessage `json:"params"`
			}
			require.NoError(t, json.Unmarshal(goldenRequest(t, name), &req), name)
			params := req.Params
			if inner, ok := params["action_request"]; ok {
				require.NoError(t, json.Unmarshal(inner, &params))
			}
			var action string
			require.NoError(t, json.Unmarshal(params["action"], &action))
			wantActions = append(wantActions, action)
		}
	}
	ok := rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.sync", nil))
	for _, c := range []rpcCall{
		{body: ok, token: tok},                                      // 401
		{body: ok, key: testReadKey, token: tok},                    // 403
		{body: make([]byte, 65<<10), key: testWriteKey, token: tok}, // 413
	} {
		assert.NotEqual(t, http.StatusOK, h.serve(c).Code)
	}
	marker := h.invoke(t, tok, actionParams("job.sync", func(p map[string]any) { p["request_id"] = "marker" }))
	require.Nil(t, marker.Error)

	ts, client := newHTTPServer(t, h.srv)
	s := openEvents(t, client, ts.URL, testReadKey, http.Header{"Last-Event-Id": {"0"}})
	require.Equal(t, "supervaizer.connected", s.next(t).Name)
	var got []string
	for range len(wantActions) + 1 {
		var d effectData
		require.NoError(t, json.Unmarshal([]byte(s.nextEffect(t).Data), &d))
		got = append(got, d.Action)
		if d.RequestID == "marker" {
			break
		}
	}
	assert.Equal(t, append(wantActions, "job.sync"), got)
}

// TestSSETwoSubscribers checks that every subscriber receives every event.
func TestSSETwoSubscribers(t *testing.T) {
	h := newHarness(t)
	ts, client := newHTTPServer(t, h.srv)
	a := openEvents(t, client, ts.URL, testReadKey, nil)
	b := openEvents(t, client, ts.URL, testWriteKey, nil)
	for _, s := range []*sseClient{a, b} {
		require.Equal(t, "supervaizer.connected", s.next(t).Name)
	}
	tok := "Bearer " + h.validToken()
	for i := range 3 {
		require.Nil(t, h.invoke(t, tok, actionParams("job.empty", func(p map[string]any) { p["request_id"] = strconv.Itoa(i) })).Error)
	}
	for _, s := range []*sseClient{a, b} {
		for i := range 3 {
			var d effectData
			require.NoError(t, json.Unmarshal([]byte(s.nextEffect(t).Data), &d))
			assert.Equal(t, strconv.Itoa(i), d.RequestID)
		}
	}
}

// TestSSEBlockedSubscriberDoesNotDelayActions keeps a subscriber that does
// not read while actions publish more than its queue and the socket buffers
// hold: the actions do not wait for it, a reading subscriber still gets the
// newest event, and the blocked one, once it reads, finds that its oldest
// events were dropped.
func TestSSEBlockedSubscriberDoesNotDelayActions(t *testing.T) {
	const queue = 10
	h := newHarness(t, withServerOptions(supervaizer.WithSSEQueueSize(queue)))
	ts, client := newHTTPServer(t, h.srv)

	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "GET /a2a/events HTTP/1.1\r\nHost: test\r\nX-API-Key: %s\r\n\r\n", testReadKey)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	blocked, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, blocked.StatusCode) // subscribed; not read again until the end

	reader := openEvents(t, client, ts.URL, testReadKey, nil)
	require.Equal(t, "supervaizer.connected", reader.next(t).Name)

	// 120 events of 64 KiB (7.5 MiB): more than a queue of 10 events plus the
	// socket buffers (at most 4 MiB for sending here) hold.
	const n, size = 120, 64 << 10
	tok := "Bearer " + h.validToken()
	// An action whose publish waited for the blocked client would never be
	// answered: the test would not get past this loop (how long a Publish
	// takes with a stuck stream is internal/sse's TestLimitStuckClientPublishLatency).
	for i := range n {
		body := rpcBody(t, i, supervaizer.MethodActionInvoke, actionParams("job.bulk", func(p map[string]any) {
			p["request_id"] = fmt.Sprintf("bulk-%d", i)
			p["input"] = map[string]any{"size": size}
		}))
		w := h.serve(rpcCall{body: body, key: testWriteKey, token: tok})
		require.Equal(t, http.StatusOK, w.Code)
	}

	// readUntilLast reads effects up to the last one published and returns how
	// many arrived; ids increase and the newest event is never dropped.
	last := fmt.Sprintf(`"request_id":"bulk-%d"`, n-1)
	readUntilLast := func(next func() sseEvent) int {
		received, lastID := 0, uint64(0)
		for {
			ev := next()
			if ev.Name != supervaizer.EventEffect {
				continue
			}
			id, err := strconv.ParseUint(ev.ID, 10, 64)
			require.NoError(t, err)
			require.Greater(t, id, lastID)
			lastID = id
			received++
			if strings.Contains(ev.Data, last) {
				return received
			}
		}
	}
	readUntilLast(func() sseEvent { return reader.next(t) })
	br := bufio.NewReader(blocked.Body)
	received := readUntilLast(func() sseEvent {
		ev, err := ssetest.Read(br)
		require.NoError(t, err)
		return ev
	})
	assert.Less(t, received, n, "the blocked subscriber's oldest events were dropped")
}

// TestSSEReplayAfterReconnect checks Last-Event-ID: the events published while
// the client was away come first, in order, nothing twice, then live events.
func TestSSEReplayAfterReconnect(t *testing.T) {
	h := newHarness(t)
	ts, client := newHTTPServer(t, h.srv)
	tok := "Bearer " + h.validToken()
	publish := func(id string) {
		require.Nil(t, h.invoke(t, tok, actionParams("job.empty", func(p map[string]any) { p["request_id"] = id })).Error)
	}
	requestID := func(ev sseEvent) string {
		var d effectData
		require.NoError(t, json.Unmarshal([]byte(ev.Data), &d))
		return d.RequestID
	}

	s := openEvents(t, client, ts.URL, testReadKey, nil)
	require.Equal(t, "supervaizer.connected", s.next(t).Name)
	publish("a")
	publish("b")
	var last string
	for _, want := range []string{"a", "b"} {
		ev := s.nextEffect(t)
		assert.Equal(t, want, requestID(ev))
		last = ev.ID
	}
	s.close()

	publish("c")
	publish("d")
	r := openEvents(t, client, ts.URL, testReadKey, http.Header{"Last-Event-Id": {last}})
	require.Equal(t, "supervaizer.connected", r.next(t).Name)
	publish("e")
	prev, err := strconv.ParseUint(last, 10, 64)
	require.NoError(t, err)
	for _, want := range []string{"c", "d", "e"} {
		ev := r.nextEffect(t)
		assert.Equal(t, want, requestID(ev))
		id, err := strconv.ParseUint(ev.ID, 10, 64)
		require.NoError(t, err)
		assert.Equal(t, prev+1, id)
		prev = id
	}

	t.Run("an invalid Last-Event-ID starts without replay", func(t *testing.T) {
		x := openEvents(t, client, ts.URL, testReadKey, http.Header{"Last-Event-Id": {"not-a-number"}})
		require.Equal(t, "supervaizer.connected", x.next(t).Name)
		publish("f")
		assert.Equal(t, "f", requestID(x.nextEffect(t)))
	})
}

// TestSSEHeartbeat checks the heartbeat event after silence.
func TestSSEHeartbeat(t *testing.T) {
	h := newHarness(t, withServerOptions(supervaizer.WithSSEHeartbeat(20*time.Millisecond)))
	ts, client := newHTTPServer(t, h.srv)
	s := openEvents(t, client, ts.URL, testReadKey, nil)
	require.Equal(t, "supervaizer.connected", s.next(t).Name)
	ev := s.next(t)
	assert.Equal(t, "supervaizer.heartbeat", ev.Name)
	assert.JSONEq(t, `{"status":"ok"}`, ev.Data)
}

// TestShutdown checks that Shutdown ends the event streams first, refuses new
// calls, and then waits for the in-flight handlers.
func TestShutdown(t *testing.T) {
	h := newHarness(t, withSlowGate())
	ts, client := newHTTPServer(t, h.srv)
	s := openEvents(t, client, ts.URL, testReadKey, nil)
	require.Equal(t, "supervaizer.connected", s.next(t).Name)

	tok := "Bearer " + h.validToken()
	slow := rpcCall{body: rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.slow", nil)), key: testWriteKey, token: tok}
	inflight := make(chan *httptest.ResponseRecorder, 1)
	go func() { inflight <- h.serve(slow) }()
	select {
	case <-h.slowStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("job.slow did not start")
	}

	shutdown := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shutdown <- h.srv.Shutdown(ctx)
	}()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not end the event stream")
	}
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned (%v) while a handler was running", err)
	default:
	}
	w := h.serve(rpcCall{body: rpcBody(t, 2, supervaizer.MethodActionInvoke, actionParams("job.sync", nil)), key: testWriteKey, token: tok})
	assert.Equal(t, http.StatusServiceUnavailable, w.Code, "new calls are refused during shutdown")

	close(h.release)
	select {
	case err := <-shutdown:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return after the handler finished")
	}
	resp := decodeRPC(t, <-inflight)
	assert.Nil(t, resp.Error, "the in-flight call completes")
	assert.NoError(t, <-h.slowDone)

	t.Run("expired context", func(t *testing.T) {
		h := newHarness(t, withSlowGate())
		slow := slow
		slow.token = "Bearer " + h.validToken()
		go h.serve(slow)
		<-h.slowStarted
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, h.srv.Shutdown(ctx), context.DeadlineExceeded)
		close(h.release)
		<-h.slowDone
	})
}

// TestShutdownWhileCallsArrive starts Shutdown while calls keep arriving:
// every call is either served or refused with 503, and (under -race) the
// count of calls in progress is never misused.
func TestShutdownWhileCallsArrive(t *testing.T) {
	for range 20 {
		h := newHarness(t)
		call := rpcCall{body: rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.empty", nil)), key: testWriteKey, token: "Bearer " + h.validToken()}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				<-start
				for range 5 {
					assert.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, h.serve(call).Code)
				}
			})
		}
		wg.Go(func() {
			<-start
			assert.NoError(t, h.srv.Shutdown(context.Background()))
		})
		close(start)
		wg.Wait()
		assert.Equal(t, http.StatusServiceUnavailable, h.serve(call).Code)
	}
}

// TestNoGoroutineLeak runs streams, actions and a shutdown, then checks that
// the number of goroutines returns to where it was.
func TestNoGoroutineLeak(t *testing.T) {
	baseline := runtime.NumGoroutine()
	t.Run("work", func(t *testing.T) {
		h := newHarness(t)
		ts, client := newHTTPServer(t, h.srv)
		tok := "Bearer " + h.validToken()
		streams := []*sseClient{
			openEvents(t, client, ts.URL, testReadKey, nil),
			openEvents(t, client, ts.URL, testWriteKey, nil),
		}
		call := rpcCall{body: rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.empty", nil)), key: testWriteKey, token: tok}
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() { assert.Equal(t, http.StatusOK, h.serve(call).Code) })
		}
		wg.Wait()
		for _, s := range streams {
			require.Equal(t, "supervaizer.connected", s.next(t).Name)
			for range 20 {
				s.nextEffect(t)
			}
		}
		streams[0].close() // one client leaves on its own
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, h.srv.Shutdown(ctx))
		<-streams[1].done
	})
	waitGoroutines(t, baseline)
}

// TestSSEWireFormat reads the raw stream: id line, event line, data line,
// blank line.
func TestSSEWireFormat(t *testing.T) {
	h := newHarness(t)
	ts, client := newHTTPServer(t, h.srv)
	req, err := http.NewRequest(http.MethodGet, ts.URL+"/a2a/events", nil)
	require.NoError(t, err)
	req.Header.Set(supervaizer.HeaderAPIKey, testReadKey)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
	r := bufio.NewReader(resp.Body)
	readFrame := func() []string {
		var lines []string
		for {
			line, err := r.ReadString('\n')
			require.NoError(t, err)
			line = strings.TrimRight(line, "\r\n")
			if line == "" {
				return lines
			}
			lines = append(lines, line)
		}
	}
	assert.Equal(t, []string{"event: supervaizer.connected", `data: {"status":"connected"}`}, readFrame())
	require.Nil(t, h.invoke(t, "Bearer "+h.validToken(), actionParams("job.empty", func(p map[string]any) { p["request_id"] = "r-7" })).Error)
	frame := readFrame()
	require.Len(t, frame, 3)
	assert.Regexp(t, `^id: [1-9][0-9]*$`, frame[0])
	assert.Equal(t, "event: supervaizer.effect", frame[1])
	assert.Equal(t, `data: {"agent_slug":"research-agent","action":"job.empty","request_id":"r-7","effects":[]}`, frame[2])
}

// TestSSEReplayBounds: WithSSEReplay bounds what a resuming client receives,
// and invalid bounds fail at construction.
func TestSSEReplayBounds(t *testing.T) {
	h := newHarness(t, withServerOptions(supervaizer.WithSSEReplay(2, 1<<20)))
	ts, client := newHTTPServer(t, h.srv)
	tok := "Bearer " + h.validToken()
	for _, id := range []string{"a", "b", "c"} {
		require.Nil(t, h.invoke(t, tok, actionParams("job.empty", func(p map[string]any) { p["request_id"] = id })).Error)
	}
	r := openEvents(t, client, ts.URL, testReadKey, http.Header{"Last-Event-Id": {"0"}})
	require.Equal(t, "supervaizer.connected", r.next(t).Name)
	for _, want := range []string{"b", "c"} {
		var d effectData
		require.NoError(t, json.Unmarshal([]byte(r.nextEffect(t).Data), &d))
		assert.Equal(t, want, d.RequestID)
	}

	for _, opt := range []supervaizer.Option{supervaizer.WithSSEReplay(0, 1), supervaizer.WithSSEReplay(1, -1)} {
		_, err := supervaizer.NewServer([]*supervaizer.Agent{newTestAgent(t, testAgentName)}, opt, supervaizer.WithLocalMode(true))
		assert.ErrorContains(t, err, "WithSSEReplay")
	}
}

// TestSSEStreamLimits: HTTPSettings.MaxEventStreams bounds the open streams
// (503 with Retry-After beyond it, a stream again once one ends), and the
// stream limits refuse invalid values at construction. The limit fails on the
// code before issue 27 row 10, which accepted any number of streams.
func TestSSEStreamLimits(t *testing.T) {
	h := newHarness(t, withServerOptions(
		supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{MaxEventStreams: 1, EventWriteTimeout: time.Second, EventQueueBytes: 1 << 20})))
	ts, client := newHTTPServer(t, h.srv)
	first := openEvents(t, client, ts.URL, testReadKey, nil)
	require.Equal(t, "supervaizer.connected", first.next(t).Name)

	refused := openEvents(t, client, ts.URL, testReadKey, nil)
	assert.Equal(t, http.StatusServiceUnavailable, refused.resp.StatusCode)
	assert.Equal(t, "5", refused.resp.Header.Get("Retry-After"))
	refused.close()

	first.close()
	require.Eventually(t, func() bool {
		c := openEvents(t, client, ts.URL, testReadKey, nil)
		defer c.close()
		return c.resp.StatusCode == http.StatusOK
	}, 5*time.Second, 10*time.Millisecond, "a stream is accepted once the open one ended")

	tests := []struct {
		opt  supervaizer.Option
		want string
	}{
		{supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{EventQueueBytes: -1}), "must not be negative"},
		{supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{MaxEventStreams: -1}), "must not be negative"},
		{supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{EventWriteTimeout: -time.Second}), "must not be negative"},
		{supervaizer.WithHTTPSettings(supervaizer.HTTPSettings{MaxConnections: -1}), "must not be negative"},
	}
	for _, tt := range tests {
		_, err := supervaizer.NewServer([]*supervaizer.Agent{newTestAgent(t, testAgentName)}, tt.opt, supervaizer.WithLocalMode(true))
		assert.ErrorContains(t, err, tt.want)
	}
}
