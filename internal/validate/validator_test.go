package validate_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/validate"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// TestAppendResult: the result's effects come back as the bytes of its
// "effects" value in the appended JSON, after what dst held.
func TestAppendResult(t *testing.T) {
	v := validate.Default()
	tests := []struct {
		name string
		res  *contracts.ActionResult
	}{
		{"no effects", &contracts.ActionResult{Status: contracts.StatusOK}},
		{"effects", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{
			{Type: "job.synced", JobID: "j1", Data: map[string]any{"k": "]}\"", "n": []any{1, "x"}}}, {Type: "b"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, effects, err := v.AppendResult([]byte("prefix"), tt.res)
			require.NoError(t, err)
			require.True(t, len(out) > len("prefix"))
			assert.Equal(t, "prefix", string(out[:len("prefix")]))
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(out[len("prefix"):], &m))
			require.NotNil(t, effects)
			assert.Equal(t, string(m["effects"]), string(effects))
			assert.Equal(t, len(effects), cap(effects), "capacity clipped")
		})
	}
	_, _, err := v.AppendResult(nil, &contracts.ActionResult{Status: "maybe"})
	assert.Error(t, err)
}

// TestAppendResultTape: the tape handed over is the one Parse builds from
// the appended bytes, whether the encoder built it or the validation parsed
// the output of json.Marshal (a value nested deeper than the encoder goes);
// an invalid result hands over none.
func TestAppendResultTape(t *testing.T) {
	deep := map[string]any{"leaf": "x"}
	for range 300 {
		deep = map[string]any{"d": deep}
	}
	v := validate.Default()
	tests := []struct {
		name string
		res  *contracts.ActionResult
	}{
		{"effects and a job_state", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "job.synced", JobID: "j", Status: "a\"<b>"}},
			JobState: &contracts.JobState{Job: contracts.Job{ID: "j", AgentSlug: "a", MissionID: "m", Status: "active", Source: contracts.JobSource{Type: contracts.SourceFreshStart}}}}},
		{"deeper than the encoder", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "deep", Data: deep}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, effects, err := v.AppendResult([]byte("prefix"), tt.res)
			require.NoError(t, err)
			tape := wire.Get()
			defer wire.Put(tape)
			out, tapeEffects, parsed, err := v.AppendResultTape([]byte("prefix"), tt.res, tape)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(out), "the same bytes as AppendResult")
			assert.Equal(t, string(effects), string(tapeEffects))
			require.True(t, parsed)
			assert.Equal(t, string(out[len("prefix"):]), string(tape.Src))
			var p wire.Tape
			require.True(t, p.Parse(out[len("prefix"):]))
			assert.Equal(t, p.Nodes, tape.Nodes)
		})
	}
	tape := wire.Get()
	defer wire.Put(tape)
	out, _, parsed, err := v.AppendResultTape([]byte("prefix"), &contracts.ActionResult{Status: "maybe"}, tape)
	require.Error(t, err)
	assert.False(t, parsed)
	assert.Equal(t, "prefix", string(out))
}

// TestAppendValueAppends checks that AppendValue extends dst with exactly
// the bytes ValidateValue returns, and leaves dst unchanged on failure.
func TestAppendValueAppends(t *testing.T) {
	v := validate.Default()
	res := &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "job.synced", JobID: "j"}},
		JobState: &contracts.JobState{Job: contracts.Job{ID: "j", AgentSlug: "a", MissionID: "m", Status: "active", Source: contracts.JobSource{Type: contracts.SourceFreshStart}}}}
	want, err := v.ValidateValue(contracts.ModelActionResult, res)
	require.NoError(t, err)
	got, err := v.AppendValue([]byte("prefix:"), contracts.ModelActionResult, res)
	require.NoError(t, err)
	assert.Equal(t, "prefix:"+string(want), string(got))

	bad := &contracts.ActionResult{Status: "maybe"}
	got, err = v.AppendValue([]byte("prefix:"), contracts.ModelActionResult, bad)
	require.Error(t, err)
	assert.Equal(t, "prefix:", string(got))
	raw, err := v.ValidateValue(contracts.ModelActionResult, bad)
	require.Error(t, err)
	assert.Nil(t, raw)
}

// TestTypedPlanAgreesWithReference: the Go rules validate a typed setup plan
// against the schema with the compiled schemas first; the verdicts and
// problems are the reference's.
func TestTypedPlanAgreesWithReference(t *testing.T) {
	tests := []struct {
		name  string
		steps []contracts.SetupStep
		valid bool
	}{
		{"valid plan", []contracts.SetupStep{{ID: "a", Title: "A"}, {ID: "b", Title: "B"}}, true},
		{"id used twice (Go rule)", []contracts.SetupStep{{ID: "a", Title: "A"}, {ID: "a", Title: "Again"}}, false},
		{"blank title (schema of the plan)", []contracts.SetupStep{{ID: "a", Title: " "}}, false},
		{"unknown status (schema of the plan)", []contracts.SetupStep{{ID: "a", Title: "A", Status: "maybe"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := contracts.ActionResult{Status: contracts.StatusOK, SetupPlan: contracts.TypedPlan(contracts.SetupPlan{Steps: tt.steps})}
			want, wantErr := contracts.DefaultValidator().ValidateValue(contracts.ModelActionResult, &res)
			got, gotErr := validate.Default().ValidateValue(contracts.ModelActionResult, &res)
			assert.Equal(t, wantErr, gotErr)
			assert.Equal(t, string(want), string(got))
			assert.Equal(t, tt.valid, gotErr == nil, "%v", gotErr)
		})
	}
}
