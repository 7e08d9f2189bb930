package main

import (
	"context"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/resource"
)

// progressRow is one row of the progress_metrics dataset: the number of jobs
// of the mission at one stage.
type progressRow struct {
	Stage string `json:"stage"`
	Label string `json:"label"`
	Value int    `json:"value"`
}

// stages are the dataset's rows, in display order.
var stages = []string{jobAwaiting, jobActive, jobCompleted, jobStopped, jobFailed}

// registerProgress serves dataset.progress_metrics.query. The dataset is
// mission-scoped: the SDK refuses a query without mission_id, and rc.Scope is
// the verified workspace plus that mission.
func (a *app) registerProgress() {
	supervaizer.RegisterDataset(a.srv, datasetProgress, a.queryProgress)
}

// queryProgress counts the mission's jobs by stage, inside the verified
// workspace only (restricted to q.JobID when a job-level dashboard asks).
func (a *app) queryProgress(ctx context.Context, rc resource.Context, q resource.DatasetQuery) ([]progressRow, error) {
	counts := map[string]int{}
	err := a.jobs.each(ctx, workspaceOf(rc.Scope), func(j *jobRecord) error {
		if j.MissionID == rc.Scope.Mission && (q.JobID == "" || j.ID == q.JobID) {
			counts[j.Status]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rows := make([]progressRow, 0, len(stages))
	for _, s := range stages {
		rows = append(rows, progressRow{Stage: s, Label: stateLabel(s), Value: counts[s]})
	}
	if q.Offset >= len(rows) {
		return []progressRow{}, nil
	}
	return rows[q.Offset:], nil // the SDK truncates to q.Limit
}

// analyticsDocument is the Dashboard of mission.analytics: Studio queries
// progress_metrics through dataset.progress_metrics.query and renders the
// widgets declared in the registration.
func analyticsDocument() a2ui.Dashboard {
	return a2ui.Dashboard{
		ID: "research-agent." + dashboardID, Title: "Mission overview",
		Datasets: []a2ui.DashboardDataset{{ID: datasetProgress, Metrics: []map[string]any{
			{"id": "jobs_total", "label": "Jobs", "reducer": "sum", "field": "value"},
		}}},
		Controls: []map[string]any{},
		Widgets:  dashboardWidgets(),
	}
}
