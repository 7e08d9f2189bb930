package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// TestKnownValidResults: a result the compiled schema judged valid is
// remembered by its model and bytes, and the same bytes again give the same
// output; a result it refused is never remembered, and is refused again;
// the same bytes under another model are another document.
func TestKnownValidResults(t *testing.T) {
	v, err := New(contracts.DefaultValidator())
	require.NoError(t, err)
	good := &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{{Type: "job.synced", JobID: "j", Status: "active"}},
		JobState: &contracts.JobState{Job: contracts.Job{ID: "j", AgentSlug: "a", MissionID: "m", Status: "active", Source: contracts.JobSource{Type: contracts.SourceFreshStart}}}}
	tape := wire.Get()
	defer wire.Put(tape)
	first, effects, parsed, err := v.AppendResultTape(nil, good, tape)
	require.NoError(t, err)
	require.True(t, parsed)
	assert.True(t, v.known.has(knownDigest(contracts.ModelActionResult, first)), "remembered")
	assert.False(t, v.known.has(knownDigest(contracts.ModelSurfaceResult, first)), "per model")
	for range 2 {
		again, againEffects, parsed, err := v.AppendResultTape(nil, good, tape)
		require.NoError(t, err)
		assert.True(t, parsed)
		assert.Equal(t, string(first), string(again))
		assert.Equal(t, string(effects), string(againEffects))
	}

	bad := &contracts.ActionResult{Status: "maybe"}
	for range 2 {
		out, _, _, err := v.AppendResultTape(nil, bad, tape)
		require.Error(t, err)
		assert.Empty(t, out)
	}
	raw, err := contracts.Marshal(bad)
	require.NoError(t, err)
	assert.False(t, v.known.has(knownDigest(contracts.ModelActionResult, raw)), "a refused result is not remembered")
}
