package supervaizer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// dryRunInput selects what the test agent's actions answer.
type dryRunInput struct {
	Status   string `json:"status"`              // the status of the job effect (and job_state)
	JobState bool   `json:"job_state,omitempty"` // answer a job_state too
}

// dryRunServer serves an agent with job.start, the declared dry-run action
// job.test, the action job.try (not declared dry-run) answering a dry_run
// outcome, and the surfaces dash.ok and dash.other (another a2ui_version).
func dryRunServer(t *testing.T, logs *syncBuffer) *svtest.TestServer {
	t.Helper()
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Dry Agent", Version: "1.0.0", Registration: sv.RegistrationSpec{
		AgentSlug: "dry-agent", DisplayName: "Dry Agent", A2UICatalogVersion: "1.0.0",
		Actions:  append(sv.Actions("job.start", "job.try"), sv.ActionSpec{ID: "job.test", DryRun: true, Label: "Test run"}),
		Surfaces: sv.Surfaces("dash.ok", "dash.other"),
	}})
	require.NoError(t, err)
	answer := func(dry bool) func(context.Context, *sv.ActionRequest, dryRunInput) (*sv.ActionResult, error) {
		return func(_ context.Context, req *sv.ActionRequest, in dryRunInput) (*sv.ActionResult, error) {
			res := sv.OK(sv.Effect{Type: "job.changed", JobID: req.JobID, Status: in.Status})
			if in.JobState {
				res.JobState = &sv.JobState{Job: sv.Job{ID: req.JobID, AgentSlug: req.AgentSlug, MissionID: req.MissionID,
					Status: in.Status, Source: sv.JobSource{Type: "fresh_start"}}}
			}
			if dry {
				res.DryRun = a2ui.DryRun(time.Time{}, false, nil)
			}
			return res, nil
		}
	}
	sv.HandleActionFor(a, "job.start", answer(false))
	sv.HandleActionFor(a, "job.test", answer(false)) // a dry run by its declaration
	sv.HandleActionFor(a, "job.try", answer(true))   // a dry run by its outcome
	doc := map[string]any{"type": contracts.DocumentConfigurator, "surface": "dash"}
	a.HandleSurface("dash.ok", func(ctx context.Context, req *sv.SurfaceRequest) (*sv.SurfaceResult, error) {
		return sv.NewSurfaceResult(ctx, req.Surface, doc)
	})
	a.HandleSurface("dash.other", func(ctx context.Context, req *sv.SurfaceRequest) (*sv.SurfaceResult, error) {
		res, err := sv.NewSurfaceResult(ctx, req.Surface, doc)
		if err == nil {
			res.A2UIVersion = new("v0.9")
		}
		return res, err
	})
	return svtest.NewTestServer(t, []*sv.Agent{a}, sv.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
}

// TestDryRunsLeaveNoTrace is spec item 79: a dry-run result (of an action
// declared dry_run, or carrying a dry_run outcome) publishes no effect,
// updates no task view and counts in no health figure; one carrying
// job_state is invalid (-32603, the reason logged).
func TestDryRunsLeaveNoTrace(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	ts := dryRunServer(t, logs)
	call := func(action, jobID, requestID string, in dryRunInput) (*contracts.ActionResult, error) {
		req := ts.Request(action, in)
		req.JobID, req.RequestID = jobID, requestID
		return ts.Invoke(t.Context(), req)
	}
	res, err := call("job.start", "job-1", "start", dryRunInput{Status: "running", JobState: true})
	require.NoError(t, err)
	require.Equal(t, contracts.StatusOK, res.Status)
	stats, _ := health(t, ts.Server)
	assert.Equal(t, figures(1, 0, 0, 1, 0), stats)

	// Dry runs naming the job with a terminal status change nothing.
	for _, action := range []string{"job.test", "job.try"} {
		res, err := call(action, "job-1", "dry-"+action, dryRunInput{Status: "completed"})
		require.NoError(t, err, action)
		assert.Equal(t, contracts.StatusOK, res.Status, action)
		assert.Equal(t, "job.changed", res.Effects[0].Type, "the caller gets the result: %s", action)
	}
	stats, _ = health(t, ts.Server)
	assert.Equal(t, figures(1, 0, 0, 1, 0), stats, "no task view update, no figure")

	// A dry-run result carrying job_state is invalid.
	for _, action := range []string{"job.test", "job.try"} {
		_, err := call(action, "job-2", "state-"+action, dryRunInput{Status: "running", JobState: true})
		assert.Equal(t, errcode.InternalError, sv.CodeOf(err), action)
		assert.Contains(t, logs.String(), "a dry-run result carries job_state (action \\\""+action+"\\\"")
	}
	stats, _ = health(t, ts.Server)
	assert.Equal(t, figures(1, 0, 0, 1, 0), stats)

	// The event stream has the start's effect, then the marker's: no dry run's.
	_, err = call("job.start", "job-3", "marker", dryRunInput{Status: "running"})
	require.NoError(t, err)
	client := &http.Client{}
	s := openEvents(t, client, ts.URL(), ts.APIKey, http.Header{"Last-Event-Id": {"0"}})
	require.Equal(t, "supervaizer.connected", s.next(t).Name)
	var got []string
	for range 6 {
		var d effectData
		require.NoError(t, json.Unmarshal([]byte(s.nextEffect(t).Data), &d))
		got = append(got, d.RequestID)
		if d.RequestID == "marker" {
			break
		}
	}
	assert.Equal(t, []string{"start", "marker"}, got)
}

// TestSurfaceA2UIVersionPinned is spec item 79: a surface result whose
// a2ui_version differs from its agent's registration is invalid (-32603),
// both versions logged.
func TestSurfaceA2UIVersionPinned(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	ts := dryRunServer(t, logs)
	res, err := ts.LoadSurface(t.Context(), ts.SurfaceRequest("dash.ok"))
	require.NoError(t, err)
	require.NotNil(t, res.A2UIVersion)
	assert.Equal(t, contracts.A2UIVersion, *res.A2UIVersion)
	_, err = ts.LoadSurface(t.Context(), ts.SurfaceRequest("dash.other"))
	assert.Equal(t, errcode.InternalError, sv.CodeOf(err))
	assert.Contains(t, logs.String(), `a2ui_version \"v0.9\" differs from the registration's a2ui_version \"`+contracts.A2UIVersion+`\"`)
}
