package supervaizer

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/sse"
	"github.com/supervaize/supervaizer-go/internal/taskview"
	"github.com/supervaize/supervaizer-go/internal/validate"
	"github.com/supervaize/supervaizer-go/internal/wire"
	"github.com/supervaize/supervaizer-go/store"
)

// TestObserveWithTheValidationTape: the view reads a result from the tape
// its validation built exactly as from a parse of the result: the same
// records end up in the store, for results with a job_state (escaped
// strings included), effects only, nothing about a job, or an error.
func TestObserveWithTheValidationTape(t *testing.T) {
	jobState := func(id, status, label string) *contracts.JobState {
		st := &contracts.JobState{Job: contracts.Job{ID: id, AgentSlug: "a", MissionID: "m-" + id, Status: status,
			Source: contracts.JobSource{Type: "fresh_start"}}}
		if label != "" {
			st.Job.Display = &contracts.JobDisplay{StateLabel: label}
		}
		return st
	}
	withState := func(res *contracts.ActionResult, st *contracts.JobState) *contracts.ActionResult {
		res.JobState = st
		return res
	}
	results := []*contracts.ActionResult{
		withState(OK(Effect{Type: "job.synced", JobID: "j1", Status: "running"}), jobState("j1", "running", "Drafting")),
		withState(OK(Effect{Type: "job.synced", JobID: "j2", Status: "running"}), jobState("j2", `run "<1>"`, "é\u2028\\")),
		OK(Effect{Type: "job.progressed", JobID: "j1", Status: "completed", Message: "now <completed>"}),
		OK(Effect{Type: "note.echoed"}),
		Fail("job_not_found", "no job %s", "j3"),
	}
	v := validate.Default()
	viaParse, viaTape := store.NewMemory(), store.NewMemory()
	views := map[bool]*taskview.View{
		false: taskview.New(viaParse, slog.New(slog.DiscardHandler), sse.Options{}),
		true:  taskview.New(viaTape, slog.New(slog.DiscardHandler), sse.Options{}),
	}
	req := &ActionRequest{AgentSlug: "a", Workspace: contracts.WorkspaceRef{ID: "ws"}}
	for i, res := range results {
		tape := wire.Get()
		raw, _, parsed, err := v.AppendResultTape([]byte("prefix"), res, tape)
		require.NoError(t, err, "result %d", i)
		require.True(t, parsed, "result %d: the validation hands over its tape", i)
		raw = raw[len("prefix"):]
		require.Equal(t, raw, tape.Src, "the tape reads the appended bytes")
		var parsedTape wire.Tape
		require.True(t, parsedTape.Parse(raw))
		require.Equal(t, parsedTape.Nodes, tape.Nodes, "result %d: the tape Parse builds", i)
		views[true].Observe(t.Context(), recordWorkspace(req), req.AgentSlug, raw, tape, nil)
		views[false].Observe(t.Context(), recordWorkspace(req), req.AgentSlug, raw, nil, nil)
		wire.Put(tape)
	}
	dump := func(st store.Store) map[string]string {
		out := map[string]string{}
		require.NoError(t, st.Scan(context.Background(), "", func(k string, v []byte) error { out[k] = string(v); return nil }))
		return out
	}
	want := dump(viaParse)
	require.Len(t, want, 2, "j1 and j2 are in the view")
	assert.Equal(t, want, dump(viaTape))
	rec, _, err := viaParse.Get(t.Context(), taskview.Key("ws", "a", "j1"))
	require.NoError(t, err)
	jv, ok := taskview.DecodeRecord(rec)
	require.True(t, ok)
	assert.Equal(t, "completed", jv.Status, "the effect's status")
	assert.Equal(t, "now <completed>", jv.Text)
}
