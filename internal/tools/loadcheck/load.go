package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// target is one server under load and what a successful answer starts with.
type target struct {
	name   string
	url    string // http://127.0.0.1:<port>/a2a
	apiKey string
}

// tokenSource hands out the workspace token of each request.
type tokenSource interface {
	// next returns the token of one request; ok is false when the source is
	// exhausted and the worker must stop.
	next() (tok string, ok bool)
}

// reusedToken returns the same token for every request.
type reusedToken string

func (t reusedToken) next() (string, bool) { return string(t), true }

// tokenPool hands out each pre-minted token once.
type tokenPool struct {
	tokens []string
	used   atomic.Int64
}

func (p *tokenPool) next() (string, bool) {
	i := p.used.Add(1) - 1
	if i >= int64(len(p.tokens)) {
		return "", false
	}
	return p.tokens[i], true
}

// exhausted reports whether a worker asked for more tokens than the pool had.
func (p *tokenPool) exhausted() bool { return p.used.Load() > int64(len(p.tokens)) }

// result is what one round measured.
type result struct {
	requests  int
	elapsed   time.Duration
	latencies []time.Duration // sorted
	failure   error           // the first failed request, if any
	cutShort  bool            // the token pool ran out before the duration
	cpu       time.Duration   // CPU time the server process used during the round
	cpuKnown  bool            // cpu was measured
	clientCPU time.Duration   // CPU time the client (this process) used during the round
	// clientCPUKnown is set when clientCPU was measured.
	clientCPUKnown bool
}

// rate returns requests per second.
func (r result) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.requests) / r.elapsed.Seconds()
}

// percentile returns the q-quantile (0 < q <= 1) of sorted latencies, by the
// nearest-rank method.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q*float64(len(sorted))+0.999999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// driver sends requests with a fixed number of concurrent workers, each on
// a keep-alive connection of its own (the raw client of rawclient.go), to
// loopback addresses only.
type driver struct {
	concurrency int
	body        []byte
	wantPrefix  []byte // a successful response starts with these bytes
}

func newDriver(concurrency int, body, wantPrefix []byte) *driver {
	return &driver{concurrency: concurrency, body: body, wantPrefix: wantPrefix}
}

// run drives t for duration d (or until tokens runs out) and returns what it
// measured. Every response must be HTTP 200 and start with wantPrefix (a
// JSON-RPC result, not an error); the first failure stops the round. The
// result holds the CPU time this process (the client) used in the round.
func (d *driver) run(ctx context.Context, t target, dur time.Duration, tokens tokenSource) result {
	req, err := newRawRequest(t, d.body)
	if err != nil {
		return result{failure: err}
	}
	var (
		mu    sync.Mutex
		conns []*rawConn
	)
	before, ok1 := rusageCPU()
	res := drive(ctx, d.concurrency, dur, func() workerCall {
		buf := make([]byte, 0, 4096)
		conn := newRawConn(req)
		mu.Lock()
		conns = append(conns, conn)
		mu.Unlock()
		return func(ctx context.Context) (time.Duration, bool, error) {
			tok, ok := tokens.next()
			if !ok {
				return 0, false, nil
			}
			t0 := time.Now()
			var err error
			buf, err = d.call(conn, t, tok, buf[:0])
			return time.Since(t0), true, err
		}
	})
	after, ok2 := rusageCPU()
	if ok1 && ok2 {
		res.clientCPU, res.clientCPUKnown = after-before, true
	}
	for _, c := range conns {
		c.close()
	}
	if p, ok := tokens.(*tokenPool); ok && p.exhausted() && res.elapsed < dur {
		res.cutShort = true
	}
	return res
}

// workerCall sends one request of a worker: it returns the request's
// latency, false once the worker has no more work, or the error that stops
// the round.
type workerCall func(ctx context.Context) (latency time.Duration, more bool, err error)

// drive runs concurrency workers for dur, each sending its requests (the
// workerCall newCall makes for it) one after the other until the round ends,
// the worker runs out of work or a request fails (the first failure stops
// the round); it returns the sorted latencies.
func drive(ctx context.Context, concurrency int, dur time.Duration, newCall func() workerCall) result {
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var (
		mu       sync.Mutex
		all      []time.Duration
		failure  error
		wg       sync.WaitGroup
		failOnce sync.Once
	)
	start := time.Now()
	for range concurrency {
		call := newCall()
		wg.Go(func() {
			lat := make([]time.Duration, 0, 4096)
			for ctx.Err() == nil {
				d, more, err := call(ctx)
				if err != nil {
					if ctx.Err() == nil { // not the round ending while the request was in flight
						failOnce.Do(func() { failure = err; cancel() })
					}
					break
				}
				if !more {
					break
				}
				lat = append(lat, d)
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(all)
	return result{requests: len(all), elapsed: elapsed, latencies: all, failure: failure}
}

// call sends one request on conn and checks its answer; it returns buf
// holding the response body.
func (d *driver) call(conn *rawConn, t target, token string, buf []byte) ([]byte, error) {
	status, buf, err := conn.do(token, buf)
	if err != nil {
		return buf, fmt.Errorf("%s: %w", t.name, err)
	}
	if status != http.StatusOK {
		return buf, fmt.Errorf("%s: HTTP %d: %.200s", t.name, status, buf)
	}
	if !bytes.HasPrefix(buf, d.wantPrefix) {
		return buf, fmt.Errorf("%s: not a JSON-RPC result: %.300s", t.name, buf)
	}
	return buf, nil
}

// send posts one call of size bytes to t with the workspace token and returns
// buf holding the response body, and the response status.
func send(ctx context.Context, client *http.Client, t target, token string, body io.Reader, size int, buf []byte) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, body)
	if err != nil {
		return buf, 0, err
	}
	req.ContentLength = int64(size)
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header["X-Api-Key"] = []string{t.apiKey}
	req.Header["X-Supervaize-Workspace-Authorization"] = []string{"Bearer " + token}
	resp, err := client.Do(req)
	if err != nil {
		return buf, 0, fmt.Errorf("%s: %w", t.name, err)
	}
	buf, err = readAll(resp.Body, buf)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return buf, resp.StatusCode, fmt.Errorf("%s: read the response: %w", t.name, err)
	}
	return buf, resp.StatusCode, nil
}

// okResult is what every successful answer holds.
var okResult = []byte(`"result":{"status":"ok"`)

// callOK sends one call, which must be answered with a successful result; it
// returns buf holding the response body.
func callOK(ctx context.Context, client *http.Client, t target, token string, body, buf []byte) ([]byte, error) {
	buf, status, err := send(ctx, client, t, token, bytes.NewReader(body), len(body), buf)
	if err != nil {
		return buf, err
	}
	if status != http.StatusOK || !bytes.Contains(buf, okResult) {
		return buf, fmt.Errorf("%s: HTTP %d: %.300s", t.name, status, buf)
	}
	return buf, nil
}

// maxResponse bounds what the driver reads from one response.
const maxResponse = 1 << 20

// readAll appends r to buf, reading at most maxResponse bytes.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 512)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > maxResponse {
			return buf, errors.New("response larger than 1 MiB")
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// cpuPerRequest returns the server's CPU time per request in microseconds.
func (r result) cpuPerRequest() (float64, bool) {
	if !r.cpuKnown || r.requests == 0 {
		return 0, false
	}
	return float64(r.cpu.Microseconds()) / float64(r.requests), true
}

// clientCPUPerRequest returns the client's CPU time per request in
// microseconds.
func (r result) clientCPUPerRequest() (float64, bool) {
	if !r.clientCPUKnown || r.requests == 0 {
		return 0, false
	}
	return float64(r.clientCPU.Microseconds()) / float64(r.requests), true
}

// probe sends one call on a connection of its own and returns the response
// body, which must be a successful result.
func probe(ctx context.Context, t target, body []byte, token string) ([]byte, error) {
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	return callOK(ctx, client, t, token, body, nil)
}

// verifyFloor returns the CPU time of one ed25519.Verify of a message the
// size of a workspace token's signing input, in µs, or 0 when it cannot be
// measured: the floor of a fresh-token request. It verifies on one
// goroutine for about 200 ms of this process's CPU (getrusage, not the
// 10 ms ticks of /proc/self/stat); the run measures it again right before
// each fresh-token round, so that a machine whose speed drifts between
// rounds is compared with itself.
func verifyFloor() float64 {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return 0
	}
	msg := bytes.Repeat([]byte("x"), 420)
	sig := ed25519.Sign(priv, msg)
	before, ok := rusageCPU()
	if !ok {
		return 0
	}
	const batch, budget = 200, 200 * time.Millisecond
	n := 0
	for {
		for range batch {
			if !ed25519.Verify(pub, msg, sig) {
				return 0
			}
		}
		n += batch
		after, ok := rusageCPU()
		if !ok {
			return 0
		}
		if spent := after - before; spent >= budget || n >= 100*batch {
			return float64(spent) / float64(time.Microsecond) / float64(n)
		}
	}
}

// rusageCPU returns this process's CPU time (user + system) from getrusage:
// the client's CPU of a round and the ed25519.Verify floor. A server's is
// read from /proc/<pid>/stat (child.cpuTime), another process's.
func rusageCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
