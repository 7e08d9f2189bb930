package supervaizer

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/supervaize/supervaizer-go/contracts"
)

// Datasets: every declared dataset has the read-only action
// dataset.<id>.query, whose result carries the rows in a dataset.queried
// effect (dataset, count, rows). Dashboards (mission.analytics,
// job.analytics) query them; they never create REST routes.

// jobAnalyticsSurface is the surface whose dataset queries must carry a job.
const jobAnalyticsSurface = "job.analytics"

// DatasetQuery is the input of a dataset query. The handler returns at most
// Limit rows of rc.Scope from Offset, restricted to JobID when it is set, and
// narrowed by Filters.
type DatasetQuery struct {
	Limit  int // 1..1000; 100 when the request names none
	Offset int // rows to skip, >= 0
	// JobID is the request's job. It is always set on job.analytics (a query
	// from that surface without job_id is refused) and for job-scoped
	// datasets; when set, every row MUST belong to that job.
	JobID string
	// Filters is input.filters: the dashboard controls' values. Narrowing
	// only, never authorization.
	Filters map[string]any
	// Input is the whole action input, for keys the SDK does not read.
	Input json.RawMessage
}

// RegisterDataset registers query as the handler of dataset.<id>.query for
// the dataset id declared in the registration of r's agent. The action input
// is {"limit"?: int, "offset"?: int, "filters"?: object} (other keys reach
// the handler in q.Input); the result is a dataset.queried effect whose rows
// are the returned rows (truncated to q.Limit), each encoded as a JSON
// object. A query from the job.analytics surface without job_id, or on a
// job- or mission-scoped dataset without its id, is refused with a status
// "error" result naming the missing key, and query does not run.
//
// It panics (a setup error) when the dataset is not declared, when its action
// already has a handler, when query is nil or when Row does not encode to a
// JSON object (a struct, a pointer to a struct or a map with string keys).
func RegisterDataset[Row any](r HandlerRegistry, id string, query func(ctx context.Context, rc ResourceContext, q DatasetQuery) ([]Row, error)) {
	a := r.agentFor("RegisterDataset")
	fail := func(format string, args ...any) {
		panic(fmt.Sprintf("supervaizer: RegisterDataset(%q) on agent %q: ", id, a.slug) + fmt.Sprintf(format, args...))
	}
	if query == nil {
		fail("nil query")
	}
	def, ok := a.datasetDefinition(id)
	if !ok {
		fail("the dataset is not declared in the registration")
	}
	if _, err := itemJSONNames(reflect.TypeFor[Row]()); err != nil {
		fail("%v", err)
	}
	a.HandleAction(datasetAction(id), func(ctx context.Context, req *ActionRequest) (*ActionResult, error) {
		if req.Surface == jobAnalyticsSurface && req.JobID == "" {
			return missingContext("job_id", "a query from "+jobAnalyticsSurface+" must be restricted to a job").Result(), nil
		}
		rc, oe := resolveContext(id, "query", def.Scope, nil, callFromRequest(req))
		if oe != nil {
			return oe.Result(), nil
		}
		in := readInput(req.Input)
		limit, offset := in.page()
		q := DatasetQuery{Limit: limit, Offset: offset, JobID: req.JobID, Filters: in.objectValue("filters"), Input: req.Input}
		if err := in.err(); err != nil {
			return nil, err
		}
		rows, err := query(ctx, rc, q)
		if err != nil {
			if oe, ok := asOpError(err); ok {
				return oe.Result(), nil
			}
			return nil, err
		}
		if len(rows) > q.Limit {
			rows = rows[:q.Limit]
		}
		objs, err := itemsToObjects(rows)
		if err != nil {
			return nil, err
		}
		return OK(datasetQueried(id, objs)), nil
	})
}

// datasetAction returns the query action of dataset id.
func datasetAction(id string) string { return "dataset." + id + ".query" }

// datasetDefinition returns the declared dataset id.
func (a *Agent) datasetDefinition(id string) (contracts.DatasetDefinition, bool) {
	if a.reg == nil {
		return contracts.DatasetDefinition{}, false
	}
	for _, d := range a.reg.Datasets {
		if d.ID == id {
			return d, true
		}
	}
	return contracts.DatasetDefinition{}, false
}

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
