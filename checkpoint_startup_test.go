package supervaizer_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// cpMsgAwaitStart is logged by a guarded step that waits for Server.Start.
const cpMsgAwaitStart = "guarded step waits for the server to start"

// attachedCPServer is a server attached to api over st, not started, with its
// agent, a gate for job-77 posting with the server's Studio account, and its
// logs.
func attachedCPServer(t *testing.T, api *svtest.FakeStudioAPI, st store.Store) (*sv.Server, *checkpoint.Gate, *cpLogs) {
	t.Helper()
	logs := newCPLogs()
	a := cpRegistration(t, cpAgentSlug, cpAgentName)
	srv, err := sv.NewServer([]*sv.Agent{a}, append(api.ServerOptions(), sv.WithStore(st), sv.WithLogger(logs.logger()))...)
	require.NoError(t, err)
	require.NotNil(t, srv.Studio())
	gate, err := checkpoint.NewGate(a.Checkpoints(), srv.Studio(), cpJobStart(t, cpAgentSlug, cpJob, api.RuleSnapshot(cpSnapshot)))
	require.NoError(t, err)
	return srv, gate, logs
}

// cpGuardedStep is a guarded step of occurrence in the standard case;
// beforeEffect runs first in its effect.
func cpGuardedStep(occurrence string, beforeEffect func()) checkpoint.Step[string] {
	return checkpoint.Step[string]{
		CaseID: cpCase, OccurrenceID: occurrence, StepID: cpStep,
		BeforeContext: map[string]any{"operation": "send_brief"},
		Effect: func(context.Context) (string, error) {
			beforeEffect()
			return "msg-42", nil
		},
		AfterContext: cpAfterContext,
	}
}

// TestGuardedStepsCallStudioOnlyAfterStart: a restarted controller attached
// to Studio runs the recovery of a guarded step (and any new guarded step)
// only once its registration handshake succeeded: a step started before
// Server.Start waits, asking Studio nothing, also through a failed Start; the
// recovery's first Studio call comes after the successful server.register.
func TestGuardedStepsCallStudioOnlyAfterStart(t *testing.T) {
	api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
	mem := store.NewMemory()

	// The first run: the effect ran, the after checkpoint failed.
	srv1, gate1, _ := attachedCPServer(t, api, mem)
	require.NoError(t, srv1.Start(t.Context()))
	_, err := checkpoint.Run(t.Context(), gate1, cpGuardedStep(cpOccurrence, func() {
		api.FailNext(studio.RuleCheckpointsPath, http.StatusServiceUnavailable)
	}))
	require.ErrorIs(t, err, checkpoint.ErrRequestFailed)
	require.NoError(t, srv1.Shutdown(t.Context()))

	// The restarted controller, on the same store, before Start.
	srv2, gate2, logs := attachedCPServer(t, api, mem)
	seen := len(api.Requests())
	recovered := make(chan error, 1)
	go func() {
		_, err := checkpoint.Recover(t.Context(), gate2, checkpoint.Recovery[string]{
			CaseID: cpCase, OccurrenceID: cpOccurrence, Result: "msg-42", AfterContext: cpAfterContext})
		recovered <- err
	}()
	ran := make(chan error, 1)
	go func() {
		_, err := checkpoint.Run(t.Context(), gate2, cpGuardedStep("send-brief-2", func() {}))
		ran <- err
	}()
	require.Eventually(t, func() bool { return strings.Count(logs.String(), cpMsgAwaitStart) == 2 || len(api.Requests()) > seen },
		cpWaitTimeout, 5*time.Millisecond, "both steps wait for Start, or call Studio")
	require.Len(t, api.Requests(), seen, "nothing was sent to Studio before Start")

	api.FailNext(api.WorkspacePath(svtest.EventsPath), http.StatusServiceUnavailable)
	require.Error(t, srv2.Start(t.Context()), "the registration fails: startup can still fail")
	require.NoError(t, srv2.Start(t.Context()))
	for _, ch := range []chan error{recovered, ran} {
		select {
		case err := <-ch:
			require.NoError(t, err)
		case <-time.After(cpWaitTimeout):
			t.Fatal("a guarded step did not finish after Start")
		}
	}

	registered := -1
	for _, e := range api.Events() {
		if e.Type == string(studio.EventServerRegister) && e.Seq > seen {
			registered = e.Seq // the failed registration is not processed
		}
	}
	require.Positive(t, registered, "the restarted controller registered")
	var after []int
	for _, c := range api.Checkpoints() {
		if c.Seq > seen {
			after = append(after, c.Seq)
		}
	}
	for _, e := range api.Events() {
		if e.Type == string(studio.EventCaseStart) && e.Seq > seen {
			after = append(after, e.Seq)
		}
	}
	require.Len(t, after, 3, "the recovered after checkpoint, the new step's case and its before checkpoint: %v", api.Requests()[seen:])
	for _, seq := range after {
		assert.Greater(t, seq, registered, "a Studio call of a guarded step came before the handshake: %v", api.Requests()[seen:])
	}
}

// TestGuardedStepWaitingForStartEndsWithShutdown: a guarded step that waits
// for Server.Start fails when the server shuts down instead, asking Studio
// nothing.
func TestGuardedStepWaitingForStartEndsWithShutdown(t *testing.T) {
	api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
	srv, gate, logs := attachedCPServer(t, api, store.NewMemory())
	ran := make(chan error, 1)
	go func() {
		_, err := checkpoint.Run(t.Context(), gate, cpGuardedStep(cpOccurrence, func() {}))
		ran <- err
	}()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), cpMsgAwaitStart) || len(api.Requests()) > 0 },
		cpWaitTimeout, 5*time.Millisecond, "the step waits for Start, or calls Studio")
	require.Empty(t, api.Requests(), "nothing was sent to Studio before Start")
	require.NoError(t, srv.Shutdown(t.Context()))
	select {
	case err := <-ran:
		require.ErrorIs(t, err, checkpoint.ErrInvalidState)
		assert.Contains(t, err.Error(), "shut down before it started")
	case <-time.After(cpWaitTimeout):
		t.Fatal("the waiting step did not end with Shutdown")
	}
	assert.Empty(t, api.Requests(), "nothing was sent to Studio")
}
