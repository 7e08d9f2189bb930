package resource

import (
	"context"
	"encoding/json"
	"errors"
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

// DatasetAction returns the query action of dataset id: dataset.<id>.query.
func DatasetAction(id string) string { return "dataset." + id + ".query" }

// Dataset is a declared dataset bound to its query handler, with the row
// type erased (rows travel as JSON objects). The server builds one per
// registered dataset ([BindDataset]) and serves dataset.<id>.query with it
// ([Dataset.Query]).
type Dataset struct {
	def   contracts.DatasetDefinition
	query func(ctx context.Context, rc Context, q DatasetQuery) ([]map[string]any, error)
}

// BindDataset binds query to the declared dataset def. The error is a setup
// error: query is nil, or Row does not encode to a JSON object (a struct, a
// pointer to a struct or a map with string keys).
func BindDataset[Row any](def contracts.DatasetDefinition, query func(ctx context.Context, rc Context, q DatasetQuery) ([]Row, error)) (*Dataset, error) {
	if query == nil {
		return nil, errors.New("nil query")
	}
	if _, err := itemJSONNames(reflect.TypeFor[Row]()); err != nil {
		return nil, err
	}
	return &Dataset{def: def, query: func(ctx context.Context, rc Context, q DatasetQuery) ([]map[string]any, error) {
		rows, err := query(ctx, rc, q)
		if err != nil {
			return nil, err
		}
		if len(rows) > q.Limit {
			rows = rows[:q.Limit]
		}
		return itemsToObjects(rows)
	}}, nil
}

// Query serves dataset.<id>.query, req being the request the server verified.
// The action input is {"limit"?: int, "offset"?: int, "filters"?: object}
// (other keys reach the handler in q.Input); the result is a dataset.queried
// effect whose rows are the returned rows (truncated to q.Limit), each
// encoded as a JSON object. A query from the job.analytics surface without
// job_id, or on a job- or mission-scoped dataset without its id, is a status
// "error" result naming the missing key, and the handler does not run; so
// are its [ErrNotFound] and [RefusalError]. Malformed input returns the problems
// found (answered with JSON-RPC -32602). Any other error is the handler's
// failure.
func (d *Dataset) Query(ctx context.Context, req *contracts.ActionRequest) (res *contracts.ActionResult, problems []contracts.Problem, err error) {
	if req.Surface == jobAnalyticsSurface && req.JobID == "" {
		return missingContext("job_id", "a query from "+jobAnalyticsSurface+" must be restricted to a job").result(), nil, nil
	}
	rc, oe := resolveContext(d.def.ID, "query", d.def.Scope, nil, callFromRequest(req))
	if oe != nil {
		return oe.result(), nil, nil
	}
	in := readInput(req.Input)
	limit, offset := in.page()
	q := DatasetQuery{Limit: limit, Offset: offset, JobID: req.JobID, Filters: in.objectValue("filters"), Input: req.Input}
	if in.failed() {
		return nil, in.probs, nil
	}
	rows, err := d.query(ctx, rc, q)
	if err != nil {
		if oe, ok := asOpError(err); ok {
			return oe.result(), nil, nil
		}
		return nil, nil, err
	}
	return ok(datasetQueried(d.def.ID, rows)), nil, nil
}

// datasetQueried is the dataset.queried effect of dataset.<id>.query.
func datasetQueried(dataset string, rows []map[string]any) contracts.Effect {
	if rows == nil {
		rows = []map[string]any{}
	}
	n := len(rows)
	return contracts.Effect{Type: "dataset.queried", Dataset: dataset, Count: &n, Rows: rows}
}
