package supervaizer

import (
	"github.com/supervaize/supervaizer-go/contracts"
)

// dashboardRefProblems returns one problem per dashboard widget whose data
// reference (mode "ref") names no dataset declared in reg, located at
// /dashboards/<i>/widgets/<j>/data/datasetId (rule "dataset_ref"). A missing
// or empty datasetId is left to the contract schema, which reports it.
// BuildRegistration appends these problems to its own after the merge.
func dashboardRefProblems(reg *contracts.Registration) []contracts.Problem {
	declared := make(map[string]bool, len(reg.Datasets))
	for _, d := range reg.Datasets {
		declared[d.ID] = true
	}
	var ps []contracts.Problem
	for i, d := range reg.Dashboards {
		for j, w := range d.Widgets {
			if w.Data == nil || (w.Data.Mode != "" && w.Data.Mode != contracts.DataModeRef) {
				continue
			}
			if w.Data.DatasetID == nil || *w.Data.DatasetID == "" || declared[*w.Data.DatasetID] {
				continue
			}
			loc := []any{"dashboards", i, "widgets", j, "data", "datasetId"}
			ps = append(ps, contracts.Problem{Loc: loc, Msg: "names no declared dataset", Type: "dataset_ref", Path: pointerOf(loc)})
		}
	}
	return ps
}
