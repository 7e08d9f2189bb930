package supervaizer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

// handlerTransport serves requests with a handler in memory, so that a
// benchmark measures the SDK rather than the loopback network.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	t.h.ServeHTTP(w, r)
	return w.Result(), nil
}

// newBenchFixture is a cpFixture whose Studio account talks to the fake
// Studio in memory.
func newBenchFixture(b *testing.B) *cpFixture {
	b.Helper()
	f := newCPFixture(b, cpOptions{store: store.NewMemory()})
	account, err := studio.NewClient(studio.Config{APIURL: "http://studio.invalid", WorkspaceID: cpWorkspace, APIKey: cpAPIKey,
		MaxRetries: studio.NoRetries, HTTPClient: &http.Client{Transport: handlerTransport{http.HandlerFunc(f.studio.serve)}}})
	require.NoError(b, err)
	f.account = account
	f.gate = f.newGate(b, f.agent, cpJobStart(b, cpAgentSlug, cpJob, cpSnapshotInput(cpSnapshot, "https://x.invalid/")))
	return f
}

// BenchmarkRunGuardedStep is one allow/allow occurrence: two checkpoint calls,
// six record writes, the effect and the advance.
func BenchmarkRunGuardedStep(b *testing.B) {
	f := newBenchFixture(b)
	step := f.step("")
	ctx := context.Background()
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		n++
		step.OccurrenceID = "occ-" + strconv.Itoa(n)
		if _, err := checkpoint.Run(ctx, f.gate, step); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResumeRetained is a rule.checkpoint.resume call through the server
// whose decision is retained for a later waiter: with one decision retained
// (the usual case), and at the bound of 1024, where each call also scans the
// retained decisions and evicts the oldest.
func BenchmarkResumeRetained(b *testing.B) {
	for _, bc := range []struct {
		name  string
		fresh bool // a new occurrence per call
	}{{"one", false}, {"at-bound", true}} {
		b.Run(bc.name, func(b *testing.B) {
			f := newBenchFixture(b)
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				id := "occ"
				if bc.fresh {
					n++
					id += strconv.Itoa(n)
				}
				d := cpDecision(contracts.PhaseBefore, checkpoint.Allow)
				d["occurrence_id"] = id
				rpc, err := f.tryInvoke(resumeParams(cpAgentSlug, cpJob, "case-"+id, d))
				if err != nil || rpc.Error != nil {
					b.Fatal(err, rpc.Error)
				}
			}
		})
	}
}

// BenchmarkRestoreRuleCheckpointGate rebuilds a saved gate from the store, as
// an agent does before each guarded step that may follow a restart.
func BenchmarkRestoreRuleCheckpointGate(b *testing.B) {
	f := newBenchFixture(b)
	ctx := context.Background()
	require.NoError(b, f.gate.Save(ctx))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := checkpoint.RestoreGate(ctx, f.agent.Checkpoints(), f.account, cpJob); err != nil {
			b.Fatal(err)
		}
	}
}
