package supervaizer_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// TestActionInvokedDebugLine: each action call logs "action invoked" with
// its elapsed time at the debug level, and nothing when the logger does not
// take debug lines (the clock is then not read for it).
func TestActionInvokedDebugLine(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		want  bool
	}{{slog.LevelDebug, true}, {slog.LevelInfo, false}} {
		t.Run(tc.level.String(), func(t *testing.T) {
			a, err := sv.NewAgent(sv.AgentSpec{Name: "Log Agent", Version: "1.0.0", Registration: sv.RegistrationSpec{
				AgentSlug: "log-agent", DisplayName: "Log Agent", A2UICatalogVersion: "1.0.0",
				Actions: sv.Actions("job.start"),
			}})
			require.NoError(t, err)
			a.HandleAction("job.start", func(_ context.Context, req *sv.ActionRequest) (*sv.ActionResult, error) {
				return sv.OK(sv.JobStarted(req.JobID, nil)), nil
			})
			logs := &syncBuffer{}
			ts := svtest.NewTestServer(t, []*sv.Agent{a}, sv.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: tc.level}))))
			req := ts.Request("job.start", nil)
			req.JobID, req.RequestID = "job-1", "req-1"
			res, err := ts.Invoke(t.Context(), req)
			require.NoError(t, err)
			require.Equal(t, contracts.StatusOK, res.Status)
			logs.mu.Lock()
			out := logs.b.String()
			logs.mu.Unlock()
			if tc.want {
				assert.Regexp(t, `msg="action invoked" agent_slug=log-agent action=job.start request_id=req-1 elapsed=\d`, out)
			} else {
				assert.NotContains(t, out, "action invoked")
			}
		})
	}
}
