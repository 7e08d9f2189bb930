package supervaizer

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
)

func TestDashboardRefProblems(t *testing.T) {
	ref := func(id string) *contracts.WidgetData {
		return &contracts.WidgetData{Mode: contracts.DataModeRef, DatasetID: &id}
	}
	reg := &contracts.Registration{
		Datasets: []contracts.DatasetDefinition{{ID: "progress"}, {ID: "costs"}},
		Dashboards: []contracts.DashboardDefinition{
			{ID: "a", Widgets: []contracts.Widget{
				{ID: "ok", Data: ref("progress")},
				{ID: "unknown", Data: ref("progres")},
				{ID: "no data"},
				{ID: "action", Data: &contracts.WidgetData{Mode: contracts.DataModeAction, Action: new("x.y")}},
				{ID: "default mode", Data: &contracts.WidgetData{DatasetID: new("missing")}},
			}},
			{ID: "b", Widgets: []contracts.Widget{{ID: "ok", Data: ref("costs")}, {ID: "empty id", Data: ref("")}}},
		},
	}
	ps := dashboardRefProblems(reg)
	var paths []string
	for _, p := range ps {
		paths = append(paths, p.Path)
		assert.Equal(t, "dataset_ref", p.Type)
		assert.Equal(t, "names no declared dataset", p.Msg)
	}
	assert.Equal(t, []string{"/dashboards/0/widgets/1/data/datasetId", "/dashboards/0/widgets/4/data/datasetId"}, paths)
	assert.Equal(t, []any{"dashboards", 0, "widgets", 1, "data", "datasetId"}, ps[0].Loc)
	assert.Empty(t, dashboardRefProblems(&contracts.Registration{}))
}

// TestActionOutcome: the problems of malformed resource or dataset input are
// answered with -32602, before any result or error.
func TestActionOutcome(t *testing.T) {
	probs := []contracts.Problem{{Loc: []any{"input", "limit"}, Msg: "must be an integer", Type: "type", Path: "/input/limit"}}
	res, err := actionOutcome(OK(), probs, nil)
	assert.Nil(t, res)
	assert.Equal(t, errcode.InvalidParams, CodeOf(err))
	res, err = actionOutcome(OK(), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, contracts.StatusOK, res.Status)
	failure := errors.New("store down")
	_, err = actionOutcome(nil, nil, failure)
	assert.Equal(t, failure, err)
}
