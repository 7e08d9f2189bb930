package main

import (
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// TestSendWait: the rest of the send delay since the approval, nothing once
// it is over, without a delay, or for a job not (or no longer) waiting.
func TestSendWait(t *testing.T) {
	approved := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	active := jobRecord{Status: jobActive, Approved: true, ApprovedAt: approved}
	tests := []struct {
		name  string
		delay time.Duration
		now   time.Time
		rec   jobRecord
		want  time.Duration
	}{
		{"no delay", 0, approved, active, 0},
		{"just approved", 10 * time.Minute, approved, active, 10 * time.Minute},
		{"half way", 10 * time.Minute, approved.Add(4 * time.Minute), active, 6 * time.Minute},
		{"over", 10 * time.Minute, approved.Add(11 * time.Minute), active, 0},
		{"approved before the setting existed", 10 * time.Minute, approved, jobRecord{Status: jobActive, Approved: true}, 0},
		{"stopped", 10 * time.Minute, approved, jobRecord{Status: jobStopped, Approved: true, ApprovedAt: approved}, 0},
		{"already sent", 10 * time.Minute, approved,
			jobRecord{Status: jobActive, Approved: true, ApprovedAt: approved, Delivery: &delivery{Receipt: "r"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &app{sendDelay: tt.delay, now: func() time.Time { return tt.now }}
			assert.Equal(t, tt.want, a.sendWait(&tt.rec))
		})
	}
}

// approveJob starts job id from wsA and approves its brief; it returns the
// approval's result.
func approveJob(t *testing.T, c *client, id string) *contracts.ActionResult {
	t.Helper()
	st := c.startJob(wsA, id, "setup-"+id, "t-"+id).JobState
	sub := jobRequest(t, wsA, actionSubmit, id, map[string]any{"review_text": "# Final", "approve_review": true})
	sub.CaseID, sub.StepID = st.Cases[0].ID, st.Cases[0].Steps[0].ID
	res := c.invoke(sub)
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	require.Equal(t, jobActive, res.JobState.Job.Status)
	return res
}

// TestSendDelayRecall: during the send delay the job is active and its brief
// unsent; job.stop recalls it (never sent, also after a restart). A job
// whose delay was interrupted by a shutdown is sent by the next start once
// the delay is over (here: restarted without a delay).
func TestSendDelayRecall(t *testing.T) {
	studio := svtest.NewFakeStudio(t)
	env := studioEnv(studio, t.TempDir())
	env[envSendDelay] = "1h"
	h := startHarness(t, studio, env)
	approveJob(t, h.client, "job-recalled")
	approveJob(t, h.client, "job-kept")

	res := h.client.invoke(jobRequest(t, wsA, actionSync, "job-recalled", nil))
	assert.Equal(t, jobActive, res.JobState.Job.Status, "waiting for the end of the send delay")
	res = h.client.invoke(jobRequest(t, wsA, actionStop, "job-recalled", nil))
	require.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
	assert.Equal(t, jobStopped, res.JobState.Job.Status)
	assert.Equal(t, "cancelled", res.JobState.Cases[1].Steps[0].Status, "the send step is cancelled")
	assert.False(t, outboxHas(t, h, "job-recalled"))
	assert.False(t, outboxHas(t, h, "job-kept"), "still in its send delay")
	h.stop() // interrupts both waits

	env = maps.Clone(env)
	delete(env, envSendDelay)
	h = startHarness(t, studio, env)
	h.client.waitStatus(wsA, "job-kept", jobCompleted)
	assert.True(t, outboxHas(t, h, "job-kept"), "sent by the next start")
	res = h.client.invoke(jobRequest(t, wsA, actionSync, "job-recalled", nil))
	assert.Equal(t, jobStopped, res.JobState.Job.Status)
	assert.False(t, outboxHas(t, h, "job-recalled"), "a recalled brief is never sent")
}

// TestSendDelaySends: once the delay is over the brief is sent, the approval
// time recorded on the job.
func TestSendDelaySends(t *testing.T) {
	studio := svtest.NewFakeStudio(t)
	env := studioEnv(studio, t.TempDir())
	env[envSendDelay] = "200ms"
	h := startHarness(t, studio, env)
	approveJob(t, h.client, "job-1")
	h.client.waitStatus(wsA, "job-1", jobCompleted)
	assert.True(t, outboxHas(t, h, "job-1"))
	rec, err := h.app.jobs.get(t.Context(), mustScope(t, wsA.id), "job-1")
	require.NoError(t, err)
	require.NotNil(t, rec.Delivery)
	assert.False(t, rec.ApprovedAt.IsZero(), "the approval time is recorded")
	assert.False(t, rec.Delivery.SentAt.Before(rec.ApprovedAt.Add(200*time.Millisecond)), "sent after the delay: approved %s, sent %s", rec.ApprovedAt, rec.Delivery.SentAt)
}
