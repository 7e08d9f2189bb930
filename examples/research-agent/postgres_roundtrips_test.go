package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	svtest "github.com/supervaize/supervaizer-go/testing"
)

// TestPostgresRoundTrips counts, through a proxy that reads the frontend
// side of the PostgreSQL wire protocol, what one job.start (a new job and
// idempotency key) and one job.sync of the example send to the database:
// the round trips on the request's path (each Sync of the extended
// protocol, each simple Query) with the statements they run, and the reads
// of the event log followers the call's events wake (their own
// connections, off the request's path), then what 16 concurrent job.sync
// calls send (fewer round trips than 16 alone: they share statements).
// docs/performance.md reports the counts.
//
// It fails when a call prepares a statement (every statement of the store
// is prepared once per connection, when the connection opens) or runs one
// that is not prepared, when a call takes more round trips than the bounds
// below, which are today's counts, and when the instance's follower reads
// the call's event back: it delivers the events its own instance appended
// from memory.
func TestPostgresRoundTrips(t *testing.T) {
	studio := svtest.NewFakeStudio(t)
	env := pgEnv(t, studio)
	proxy := startPGProxy(t, env[envDatabase])
	env[envDatabase] = proxy.url
	h := startHarness(t, studio, env)

	start := func(id string) {
		req := actionRequest(t, wsA, actionStart, map[string]any{"topic_id": "eu-battery-market"})
		req.JobID, req.IdempotencyKey = id, id
		require.Equal(t, "ok", h.client.invoke(req).Status)
	}
	syncCall := func(id string) {
		require.Equal(t, "ok", h.client.invoke(jobRequest(t, wsA, actionSync, id, nil)).Status)
	}

	// Warm up: the pool's connections open and prepare their statements.
	for i := range 3 {
		start(fmt.Sprintf("warm-%d", i))
		syncCall(fmt.Sprintf("warm-%d", i))
	}
	proxy.quiet()

	tests := []struct {
		name      string
		call      func()
		maxOnPath int // round trips on the request's path
	}{
		{"job.start", func() { start("counted") }, 4},
		{"job.sync", func() { syncCall("counted") }, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy.record()
			tt.call()
			proxy.quiet()
			got := proxy.stop()
			var onPath, followers []pgTrip
			for _, trip := range got {
				if trip.follower {
					followers = append(followers, trip)
				} else {
					onPath = append(onPath, trip)
				}
			}
			t.Logf("%s: %d round trips on the request's path: %s", tt.name, len(onPath), tripNames(onPath))
			t.Logf("%s: %d round trips of the event log followers: %s", tt.name, len(followers), tripNames(followers))
			for _, trip := range got {
				require.Zero(t, trip.parses, "%s prepared a statement during the call: %+v", tt.name, trip)
				for _, s := range trip.statements {
					require.NotEmpty(t, s, "%s ran an unnamed (unprepared) statement: %+v", tt.name, trip)
				}
			}
			require.NotEmpty(t, onPath)
			require.LessOrEqual(t, len(onPath), tt.maxOnPath, "round trips of %s: %s", tt.name, tripNames(onPath))
			require.Empty(t, followers, "the follower read back an event of its own instance: %s", tripNames(followers))
		})
	}

	// Concurrent calls share statements: the store's reads and the event
	// appends that arrive while one of their kind is in progress run in one
	// statement when it ends (store/postgres). Alone, each job.sync takes 2
	// round trips; how many fewer n concurrent ones take depends on how they
	// overlap, so the test requires fewer and reports the count.
	t.Run("concurrent job.sync", func(t *testing.T) {
		const n = 16
		proxy.record()
		gate := make(chan struct{})
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				<-gate
				raw, rerr := h.client.invokeRaw(jobRequest(t, wsA, actionSync, "counted", nil))
				assert.Nil(t, rerr)
				assert.Contains(t, string(raw), `"status":"ok"`)
			})
		}
		close(gate)
		wg.Wait()
		proxy.quiet()
		var onPath []pgTrip
		grouped := 0
		for _, trip := range proxy.stop() {
			if trip.follower {
				continue
			}
			onPath = append(onPath, trip)
			for _, st := range trip.statements {
				if strings.HasSuffix(st, "_group") {
					grouped++
				}
			}
		}
		t.Logf("%d concurrent job.sync: %d round trips on the requests' path (%d alone), %d of them grouped statements",
			n, len(onPath), 2*n, grouped)
		require.Less(t, len(onPath), 2*n, "concurrent calls share statements: %s", tripNames(onPath))
		require.NotZero(t, grouped)
	})
}

// tripNames lists the round trips: the statements each ran, or its simple
// query.
func tripNames(trips []pgTrip) string {
	var parts []string
	for _, t := range trips {
		switch {
		case t.query != "":
			parts = append(parts, fmt.Sprintf("conn %d: Q %q", t.conn, t.query))
		default:
			var sts []string
			for i, s := range t.statements {
				sts = append(sts, fmt.Sprintf("%s(%q)", s, t.keys[i]))
			}
			parts = append(parts, fmt.Sprintf("conn %d: %s", t.conn, strings.Join(sts, "+")))
		}
	}
	return strings.Join(parts, "; ")
}

// pgTrip is one round trip a client started: a simple Query, or the
// extended-protocol messages up to a Sync.
type pgTrip struct {
	conn       int
	query      string   // a simple Query's text
	statements []string // the prepared statements bound, in order ("" for the unnamed one)
	keys       []string // the first parameter of each (the key, for the store's statements)
	parses     int      // statements prepared
	follower   bool     // on a connection that LISTENs (an event log follower)
}

// pgProxy forwards connections to a PostgreSQL server and records the
// round trips clients start while recording is on.
type pgProxy struct {
	url string
	ln  net.Listener

	mu        sync.Mutex
	recording bool
	trips     []pgTrip
	last      time.Time // of the last message seen
	listeners map[int]bool
	conns     int
}

// startPGProxy starts a proxy to the server of dbURL and returns it with
// url, dbURL pointed at it (without TLS, so that it can read the messages).
func startPGProxy(t *testing.T, dbURL string) *pgProxy {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err, "%s must be a postgres:// URL for the round-trip count", envTestDatabase)
	require.Contains(t, []string{"postgres", "postgresql"}, u.Scheme, "%s must be a postgres:// URL", envTestDatabase)
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &pgProxy{ln: ln, listeners: map[int]bool{}}
	u.Host = ln.Addr().String()
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	p.url = u.String()
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns++
			id := p.conns
			p.mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(c, s); c.Close() })
			wg.Go(func() {
				if err := p.read(id, io.TeeReader(c, s)); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					fmt.Fprintf(os.Stderr, "pg proxy: connection %d: %v\n", id, err)
				}
				s.Close()
			})
		}
	})
	return p
}

// read parses the messages a client sends on connection id (r forwards
// them to the server as they are read) until the connection ends.
func (p *pgProxy) read(id int, r io.Reader) error {
	var hdr [4]byte
	// The startup message (and an SSLRequest before it) has no type byte.
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[:])-4)
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		if code := binary.BigEndian.Uint32(body[:4]); code != 80877103 && code != 80877104 { // SSL, GSSENC requests
			break
		}
	}
	var cur pgTrip
	for {
		var typ [1]byte
		if _, err := io.ReadFull(r, typ[:]); err != nil {
			return err
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[:])-4)
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		switch typ[0] {
		case 'P': // Parse: statement name, query
			cur.parses++
		case 'B': // Bind: portal name, statement name
			_, rest, _ := strings.Cut(string(body), "\x00")
			name, rest, _ := strings.Cut(rest, "\x00")
			cur.statements = append(cur.statements, name)
			cur.keys = append(cur.keys, firstParam(rest))
		case 'S': // Sync ends a round trip
			p.add(id, cur)
			cur = pgTrip{}
		case 'Q': // a simple query is a round trip of its own
			query, _, _ := strings.Cut(string(body), "\x00")
			if strings.HasPrefix(strings.ToUpper(query), "LISTEN ") {
				p.mu.Lock()
				p.listeners[id] = true
				p.mu.Unlock()
			}
			p.add(id, pgTrip{query: query})
		}
	}
}

// firstParam returns the first parameter of a Bind message, from its
// parameter format codes on, as text (its first 40 bytes).
func firstParam(b string) string {
	if len(b) < 2 {
		return ""
	}
	nf := int(binary.BigEndian.Uint16([]byte(b[:2])))
	b = b[2+2*nf:]
	if len(b) < 6 || binary.BigEndian.Uint16([]byte(b[:2])) == 0 {
		return ""
	}
	n := int32(binary.BigEndian.Uint32([]byte(b[2:6])))
	if n < 0 || int(n) > len(b)-6 {
		return ""
	}
	return b[6 : 6+min(int(n), 40)]
}

// add records a round trip of connection id.
func (p *pgProxy) add(id int, trip pgTrip) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = time.Now()
	if p.recording {
		trip.conn, trip.follower = id, p.listeners[id]
		p.trips = append(p.trips, trip)
	}
}

// record starts recording round trips.
func (p *pgProxy) record() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.recording, p.trips = true, nil
}

// stop stops recording and returns the round trips recorded.
func (p *pgProxy) stop() []pgTrip {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.recording = false
	return slices.Clone(p.trips)
}

// quiet waits until no message has crossed the proxy for 300 ms, so that
// the followers' reads an event woke are done.
func (p *pgProxy) quiet() {
	for {
		time.Sleep(50 * time.Millisecond)
		p.mu.Lock()
		idle := time.Since(p.last)
		p.mu.Unlock()
		if idle >= 300*time.Millisecond {
			return
		}
	}
}
