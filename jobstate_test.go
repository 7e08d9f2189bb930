package supervaizer_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
)

func jobRequest() *sv.ActionRequest {
	return &sv.ActionRequest{JobID: "job-77", AgentSlug: "research-agent", MissionID: "mis-3"}
}

func TestJobStateBuilder(t *testing.T) {
	b := sv.NewJobState(jobRequest(), "awaiting").
		Display(contracts.JobDisplay{EntityLabel: "Brief", StateLabel: "Waiting for review"}).
		TotalCost(1.25)
	setup := b.Case("case-1", "setup", "Review sources").Status("awaiting").Metadata("topic_id", "battery")
	setup.Step("step-1", "completed", "Collect sources").
		Output(contracts.ArtifactRef{ID: "t-1", Type: "transcript"}).
		StudioArtifact("report:q3", "report", "file_8842", "Quarterly report").Cost(0.25)
	setup.Step("step-2", "pending", "Review").Awaiting(sv.AwaitingStep{
		Fields:     a2ui.AwaitingFields(a2ui.BooleanField("approve", "Approve", a2ui.Required())),
		Reopenable: true,
	})
	b.Case("case-2", "", "Deliver").Step("step-3", "pending", "").Delegation()
	js, err := b.Build()
	require.NoError(t, err)
	raw, err := json.Marshal(js)
	require.NoError(t, err)
	assert.JSONEq(t, `{
	  "job": {"id": "job-77", "agent_slug": "research-agent", "mission_id": "mis-3", "status": "awaiting",
	          "source": {"type": "fresh_start"}, "information": {"cost": {"total_cost": 1.25}},
	          "display": {"entity_label": "Brief", "state_label": "Waiting for review"}},
	  "cases": [
	    {"id": "case-1", "lane": "setup", "title": "Review sources", "status": "awaiting", "metadata": {"topic_id": "battery"},
	     "steps": [
	       {"id": "step-1", "activity": "operation", "status": "completed", "title": "Collect sources",
	        "outputs": [{"id": "t-1", "type": "transcript"},
	                    {"id": "report:q3", "type": "report", "title": "Quarterly report", "storage": "studio", "file_id": "file_8842"}],
	        "information": {"cost": {"total_cost": 0.25}}},
	       {"id": "step-2", "activity": "operation", "status": "awaiting", "title": "Review",
	        "awaiting": {"reason": "human_input", "surface": "case.step.awaiting", "action": "step.awaiting.submit",
	                     "fields": [{"id": "approve", "label": "Approve", "type": "boolean", "required": true}], "reopenable": true},
	        "outputs": []}]},
	    {"id": "case-2", "lane": "work", "title": "Deliver", "metadata": {},
	     "steps": [{"id": "step-3", "activity": "delegation", "status": "pending", "outputs": []}]}
	  ]}`, string(raw))
}

func TestJobStateBuilderValidates(t *testing.T) {
	tests := []struct {
		name  string
		build func() *sv.JobStateBuilder
		path  string
		rule  string
	}{
		{"display over 120", func() *sv.JobStateBuilder {
			return sv.NewJobState(jobRequest(), "active").Display(contracts.JobDisplay{StateLabel: strings.Repeat("é", 121)})
		}, "/job/display/state_label", "maxLength"},
		{"no job id", func() *sv.JobStateBuilder {
			return sv.NewJobState(&sv.ActionRequest{AgentSlug: "a", MissionID: "m"}, "active")
		}, "/job/id", "nonblank"},
		{"blank status", func() *sv.JobStateBuilder { return sv.NewJobState(jobRequest(), " ") }, "/job/status", "nonblank"},
		{"studio artifact without file id", func() *sv.JobStateBuilder {
			b := sv.NewJobState(jobRequest(), "active")
			b.Case("c", "", "").Step("s", "done", "").StudioArtifact("a", "report", "", "")
			return b
		}, "/cases/0/steps/0/outputs/0/file_id", "required"},
		{"awaiting field rule for another type", func() *sv.JobStateBuilder {
			b := sv.NewJobState(jobRequest(), "active")
			b.Case("c", "", "").Step("s", "", "").Awaiting(sv.AwaitingStep{Fields: a2ui.AwaitingFields(
				a2ui.BooleanField("ok", "OK", a2ui.MinLength(3)))})
			return b
		}, "/cases/0/steps/0/awaiting/fields/0/validation/min_length", "validation_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js, err := tt.build().Build()
			assert.Nil(t, js)
			requireProblem(t, err, tt.path, tt.rule)
		})
	}
}

// TestJobStateBuilderSnapshotsAreIndependent: a built snapshot does not change
// when the builder goes on to produce the next one.
func TestJobStateBuilderSnapshotsAreIndependent(t *testing.T) {
	b := sv.NewJobState(jobRequest(), "active")
	c := b.Case("case-1", "", "Review").Metadata("round", 1)
	s := c.Step("step-1", "running", "Collect")
	s.Output(contracts.ArtifactRef{ID: "a-1", Type: "transcript"})
	first, err := b.Build()
	require.NoError(t, err)
	before, err := json.Marshal(first)
	require.NoError(t, err)
	snap := c.Snapshot()

	c.Metadata("round", 2)
	s.Output(contracts.ArtifactRef{ID: "a-2", Type: "transcript"})
	second, err := b.Build()
	require.NoError(t, err)

	after, err := json.Marshal(first)
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(after))
	assert.Equal(t, 1, snap.Metadata["round"])
	assert.Equal(t, 2, second.Cases[0].Metadata["round"])
	assert.Len(t, second.Cases[0].Steps[0].Outputs, 2)
}
