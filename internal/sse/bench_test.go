package sse

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// effectPayload is a typical supervaizer.effect data payload.
var effectPayload = []byte(`{"agent_slug":"research-agent","action":"job.start","request_id":"r-7",` +
	`"effects":[{"type":"job.started","job_id":"j-1"}]}`)

// round counts the subscribers that still have to flush the event being measured.
type round struct {
	left atomic.Int64
	done chan struct{}
}

func (r *round) delivered() {
	if r.left.Add(-1) == 0 {
		close(r.done)
	}
}

// discardWriter is the cheapest flushable ResponseWriter. Each Flush after the first
// (the connected event) reports a delivery to the current round, if any.
type discardWriter struct {
	header  http.Header
	flushes int
	rounds  *atomic.Pointer[round]
}

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) Flush() {
	d.flushes++
	if d.flushes > 1 && d.rounds != nil {
		if r := d.rounds.Load(); r != nil {
			r.delivered()
		}
	}
}

// attachInProcess starts n streams served straight into discardWriters (no network) and
// waits until they are subscribed. The writers and requests are made before measure is
// called, so measure sees only what the streams themselves cost.
func attachInProcess(tb testing.TB, b *Broker, n int, rounds *atomic.Pointer[round], measure func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	writers := make([]*discardWriter, n)
	reqs := make([]*http.Request, n)
	for i := range n {
		writers[i] = &discardWriter{header: make(http.Header, 4), rounds: rounds}
		reqs[i] = httptest.NewRequestWithContext(ctx, http.MethodGet, "/a2a/events", nil)
	}
	done := make(chan struct{}, n)
	if measure != nil {
		measure()
	}
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			b.ServeHTTP(writers[i], reqs[i])
		}()
	}
	waitSubscribers(tb, b, n)
	tb.Cleanup(func() {
		cancel()
		for range n {
			<-done
		}
	})
}

// attachHTTP opens n real HTTP streams to b; each client reports deliveries to rounds.
func attachHTTP(tb testing.TB, b *Broker, n int, rounds *atomic.Pointer[round]) {
	tb.Helper()
	ts := httptest.NewServer(b)
	tb.Cleanup(ts.Close)
	tb.Cleanup(func() { require.NoError(tb, b.Shutdown(context.Background())) })
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	tb.Cleanup(client.CloseIdleConnections)
	for range n {
		resp, err := client.Get(ts.URL)
		require.NoError(tb, err)
		go func() {
			defer resp.Body.Close()
			r := bufio.NewReader(resp.Body)
			for {
				ev, err := readEvent(r)
				if err != nil {
					return
				}
				if cur := rounds.Load(); ev.ID != "" && cur != nil {
					cur.delivered()
				}
			}
		}()
	}
	waitSubscribers(tb, b, n)
}

// measureFanout publishes one event per iteration and waits until every one of the n
// subscribers has flushed (in process) or read (over HTTP) it. It returns the latencies.
func measureFanout(iterations func() bool, b *Broker, n int, rounds *atomic.Pointer[round]) []time.Duration {
	var lat []time.Duration
	for iterations() {
		r := &round{done: make(chan struct{})}
		r.left.Store(int64(n))
		rounds.Store(r)
		start := time.Now()
		b.Publish(EventEffect, effectPayload)
		<-r.done
		lat = append(lat, time.Since(start))
	}
	return lat
}

func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			br := NewBroker(Options{Heartbeat: time.Hour})
			attachInProcess(b, br, n, nil, nil)
			b.ReportAllocs()
			for b.Loop() {
				br.Publish(EventEffect, effectPayload)
			}
		})
	}
}

// BenchmarkFanout reports how long one event takes to reach all subscribers.
func BenchmarkFanout(b *testing.B) {
	for _, transport := range []string{"inprocess", "http"} {
		b.Run(transport+"/subscribers=1000", func(b *testing.B) {
			const n = 1000
			br := NewBroker(Options{Heartbeat: time.Hour})
			var rounds atomic.Pointer[round]
			if transport == "http" {
				attachHTTP(b, br, n, &rounds)
			} else {
				attachInProcess(b, br, n, &rounds, nil)
			}
			b.ReportAllocs()
			lat := measureFanout(b.Loop, br, n, &rounds)
			b.ReportMetric(float64(percentile(lat, 0.50))/1e6, "p50-ms")
			b.ReportMetric(float64(percentile(lat, 0.99))/1e6, "p99-ms")
		})
	}
}
