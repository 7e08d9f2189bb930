package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// envTestDatabase names the variable that holds the URL of the PostgreSQL
// server the tests may use.
const envTestDatabase = "SUPERVAIZER_TEST_DATABASE_URL"

// pgEnv returns the environment of an agent that keeps its state in a new
// PostgreSQL schema, dropped when the test ends; it skips the test when
// SUPERVAIZER_TEST_DATABASE_URL is unset.
func pgEnv(t testing.TB, studio *svtest.FakeStudio) map[string]string {
	t.Helper()
	url := os.Getenv(envTestDatabase)
	if url == "" {
		t.Skipf("%s is not set: this test needs a PostgreSQL server (for example %s=postgres://postgres@127.0.0.1:5432/test)",
			envTestDatabase, envTestDatabase)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "svexample_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if !assert.NoError(t, err) {
			return
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		assert.NoError(t, err)
	})
	env := studioEnv(studio, t.TempDir())
	env[envDatabase] = url
	env[envSchema] = schema
	return env
}

// waitReady waits until the agent at base answers its readiness probe.
func waitReady(t *testing.T, base string) {
	t.Helper()
	poll(t, func() bool {
		resp, err := http.Get(base + supervaizer.ReadinessPath)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "%s not ready", base)
}

// TestPostgresWorkspaceIsolation runs the workspace isolation test on the
// PostgreSQL store.
func TestPostgresWorkspaceIsolation(t *testing.T) {
	studio := svtest.NewFakeStudio(t)
	h := startHarness(t, studio, pgEnv(t, studio))
	testWorkspaceIsolation(t, h)
}

// TestPostgresWorkspaceIsolationAcrossInstances runs two instances on one
// database: each workspace's contacts (a resource the agent keeps in the
// shared store) are listed by both instances to that workspace only, the
// one-address-per-workspace rule holds whichever instance writes, and a job
// of one workspace exists on both instances for it and on neither for the
// other.
func TestPostgresWorkspaceIsolationAcrossInstances(t *testing.T) {
	studio := svtest.NewFakeStudio(t)
	env := pgEnv(t, studio)
	hs := []*harness{startHarness(t, studio, env), startHarness(t, studio, env)}
	for i, tc := range []struct {
		ws    workspace
		email string
	}{{wsA, "ada@example.com"}, {wsB, "bob@example.com"}} {
		res := hs[i].client.createContact(tc.ws, "N", tc.email)
		require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	}
	for _, h := range hs {
		assert.Equal(t, []string{"ada@example.com"}, h.client.contactEmails(wsA))
		assert.Equal(t, []string{"bob@example.com"}, h.client.contactEmails(wsB))
	}
	dup := hs[1].client.createContact(wsA, "Ada", "ADA@example.com")
	require.Equal(t, contracts.StatusError, dup.Status, "the address exists in workspace A, written by the other instance")
	assert.Equal(t, codeDuplicateEmail, dup.Errors[0].Code)
	other := hs[0].client.createContact(wsB, "Ada", "ada@example.com")
	assert.Equal(t, contracts.StatusOK, other.Status, "workspace B may hold the address too: %+v", other.Errors)

	hs[0].client.startJob(wsA, "job-a", "key-a", "topic-a")
	for _, h := range hs {
		res := h.client.invoke(jobRequest(t, wsA, actionSync, "job-a", nil))
		assert.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
		res = h.client.invoke(jobRequest(t, wsB, actionSync, "job-a", nil))
		require.Equal(t, contracts.StatusError, res.Status)
		assert.Equal(t, codeJobNotFound, res.Errors[0].Code)
	}
}

// TestPostgresInstances runs two instances of the agent on one database:
// duplicate job.start calls spread over both run the handler once and all
// get the same bytes, a
// subscriber of one instance receives every instance's effects, ids
// increasing, each once, and a client resumes on the other instance with
// Last-Event-ID.
func TestPostgresInstances(t *testing.T) {
	studio := svtest.NewFakeStudio(t)
	env := pgEnv(t, studio)
	hs := []*harness{startHarness(t, studio, env), startHarness(t, studio, env)}
	for _, h := range hs {
		waitReady(t, h.srv.URL)
	}
	events := subscribe(t, hs[0].srv.URL)

	const keys, copies = 8, 2
	results := make([][]json.RawMessage, keys)
	var wg sync.WaitGroup
	for k := range keys {
		results[k] = make([]json.RawMessage, copies)
		for c := range copies {
			wg.Go(func() {
				req := actionRequest(t, wsA, actionStart, map[string]any{"topic_id": "eu-battery-market"})
				req.JobID, req.IdempotencyKey = "job-"+strconv.Itoa(k), "key-"+strconv.Itoa(k)
				raw, rerr := hs[c%len(hs)].client.invokeRaw(req)
				if assert.Nil(t, rerr) {
					results[k][c] = raw
				}
			})
		}
	}
	wg.Wait()
	// Each key ran its handler once, and every call got that run's bytes,
	// also those that arrived on the other instance while it ran (they wait
	// for it); a retry afterwards gets them on either instance too.
	calls := keys * copies
	for k := range keys {
		okBytes := string(results[k][0])
		assert.Contains(t, okBytes, `"status":"ok"`, "key %d", k)
		for c := 1; c < copies; c++ {
			assert.Equal(t, okBytes, string(results[k][c]), "key %d: the instances answered differently", k)
		}
		require.NotEmpty(t, okBytes, "key %d: no call ran the handler", k)
		for _, h := range hs {
			req := actionRequest(t, wsA, actionStart, map[string]any{"topic_id": "eu-battery-market"})
			req.JobID, req.IdempotencyKey = "job-"+strconv.Itoa(k), "key-"+strconv.Itoa(k)
			raw, rerr := h.client.invokeRaw(req)
			require.Nil(t, rerr)
			assert.Equal(t, okBytes, string(raw), "key %d: a retry got other bytes", k)
			calls++
		}
	}

	// Every call published one event, whichever instance served it: the
	// subscriber of instance 0 receives them all, ids increasing.
	started := map[string]bool{}
	var last uint64
	var ids []string
	for range calls {
		ev := nextEffectWithID(t, events)
		id, err := strconv.ParseUint(ev.id, 10, 64)
		require.NoError(t, err)
		assert.Greater(t, id, last, "ids increase")
		last = id
		ids = append(ids, ev.id)
		var e effectEvent
		require.NoError(t, json.Unmarshal(ev.data, &e))
		for _, eff := range e.Effects {
			started[eff.JobID] = true
		}
	}
	for k := range keys {
		assert.True(t, started["job-"+strconv.Itoa(k)], "no effect for job-%d", k)
	}

	// A client of instance 0 resumes on instance 1 from the middle (ids
	// increase but are not consecutive: they follow the database clock).
	n := len(ids)
	resumed := subscribeFrom(t, hs[1].srv.URL, ids[n-4])
	for _, want := range ids[n-3:] {
		ev := nextEffectWithID(t, resumed)
		assert.Equal(t, want, ev.id)
	}
}

// nextEffectWithID returns the next supervaizer.effect event, with its id.
func nextEffectWithID(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "the event stream ended")
			if ev.name == supervaizer.EventEffect {
				return ev
			}
		case <-timeout:
			require.FailNow(t, "no effect event within 10s")
		}
	}
}

// subscribeFrom opens the event stream with Last-Event-ID.
func subscribeFrom(t *testing.T, base, lastEventID string) <-chan sseEvent {
	t.Helper()
	return subscribeWith(t, base, http.Header{"Last-Event-Id": {lastEventID}})
}
