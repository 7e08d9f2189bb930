package resource

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
)

// ErrNotFound is what a resource handler returns (or wraps) when no item has
// the requested id in rc.Scope. It is answered with a status "error" result
// carrying [contracts.ErrorNotFound] on POST /a2a and with HTTP 404 on the
// DataResource routes. Never distinguish "exists in another workspace" from
// "does not exist".
var ErrNotFound = errors.New("supervaizer: item not found")

// RefusalError is a business refusal a resource or dataset handler returns, for
// example a duplicate e-mail address. It is answered with a status "error"
// result carrying Code, Message and Field on POST /a2a, and with Status
// (default 422) and {"detail": Message, "errors": [...]} on the DataResource
// routes. Message is sent to Studio: never put secrets in it.
type RefusalError struct {
	Code    string // machine-readable, e.g. "duplicate_email"; required
	Message string // human-readable
	Field   string // the item field concerned, if any
	Status  int    // HTTP status on the DataResource routes; 0 means 422
}

// Error returns the code and the message.
func (e *RefusalError) Error() string { return e.Code + ": " + e.Message }

// ScopeKey is the verified partition of a resource or dataset call: the only
// key a handler may select, store and delete items by. Workspace comes from
// the verified workspace token (its agent_workspace_ref when Studio bound the
// workspace to an agent-side record, else the workspace id); Mission and Job
// come from the request and are set only for mission- and job-scoped
// resources, inside that workspace. It is comparable: use it as a map key, or
// its String form as a storage key (add a separator before using it as a
// prefix: "workspace:ws-1" is a prefix of "workspace:ws-10").
type ScopeKey struct {
	Level     string // the declared scope: contracts.ScopeWorkspace, ScopeMission or ScopeJob
	Workspace string // agent_workspace_ref, or the verified workspace id when ByRef is false
	ByRef     bool   // Workspace is an agent_workspace_ref (the two namespaces never mix)
	Mission   string // the mission id; mission scope only
	Job       string // the job id; job scope only
}

// String returns a canonical key, e.g. "ref:acme-prod" or
// "workspace:ws-1/mission:m-1". Components are path-escaped, so two
// different scope keys never share a string.
func (k ScopeKey) String() string {
	var b strings.Builder
	if k.ByRef {
		b.WriteString("ref:")
	} else {
		b.WriteString("workspace:")
	}
	b.WriteString(url.PathEscape(k.Workspace))
	if k.Mission != "" {
		b.WriteString("/mission:")
		b.WriteString(url.PathEscape(k.Mission))
	}
	if k.Job != "" {
		b.WriteString("/job:")
		b.WriteString(url.PathEscape(k.Job))
	}
	return b.String()
}

// Context is what a resource or dataset handler receives besides its input.
// Scope is the partition the handler MUST restrict every read and write to;
// it comes only from the verified workspace token and the declared scope,
// never from a slug or a filter of the request. The other request context
// (mission, job, mission metadata) may narrow results inside Scope, never
// widen them: mission metadata in particular is not signed.
type Context struct {
	Resource  string   // the resource or dataset id
	Operation string   // list, get, create, update, delete, import, or query for datasets
	Scope     ScopeKey // the verified partition

	// Workspace is the verified workspace context (the token's claims).
	Workspace *contracts.VerifiedWorkspaceContext
	AgentSlug string // the agent addressed (route or request)
	RequestID string // the request id ("" when a REST call sends none)

	MissionID string                    // the request's mission ("" when absent)
	JobID     string                    // the request's job ("" when absent; REST calls carry none)
	CaseID    string                    // the request's case (POST /a2a only)
	StepID    string                    // the request's step (POST /a2a only)
	Mission   *contracts.MissionContext // mission and its metadata; nil when none was sent
}

// ListQuery is the input of a list operation. Limit and Offset page the
// items of rc.Scope; Search and Filters narrow them. The handler applies
// them: the SDK only checks their range and truncates a longer answer to Limit.
type ListQuery struct {
	Limit   int            // 1..1000; 100 when the request names none
	Offset  int            // items to skip, >= 0
	Search  string         // free text, "" for none
	Filters map[string]any // caller-supplied narrowing (POST /a2a input.filters); never authorization
}

// Handlers is the implementation of a declared resource for the item type T
// (a struct, or a map with string keys, that encodes to a JSON object),
// registered with supervaizer.RegisterResource. Set the operations the
// resource implements; each must be declared in the resource's operations.
// Items sent by Studio are checked against the declared resource fields
// before Create and Update run.
//
// Every operation receives the verified [Context]: read and write only
// inside rc.Scope. Return [ErrNotFound] for an id absent from rc.Scope, a
// *[RefusalError] for a business refusal, any other error for a failure (logged,
// answered as an internal error).
type Handlers[T any] struct {
	// List returns at most q.Limit items of rc.Scope, from q.Offset.
	List func(ctx context.Context, rc Context, q ListQuery) ([]T, error)
	// Get returns the item id of rc.Scope.
	Get func(ctx context.Context, rc Context, id string) (T, error)
	// Create stores a new item in rc.Scope and returns it as stored.
	Create func(ctx context.Context, rc Context, item T) (T, error)
	// Update replaces the item id of rc.Scope and returns it as stored.
	Update func(ctx context.Context, rc Context, id string, item T) (T, error)
	// Delete removes the item id of rc.Scope.
	Delete func(ctx context.Context, rc Context, id string) error
	// Import applies a checked batch of rows to rc.Scope. It is called only
	// when every row passed the checks of ImportDocument, unless
	// PartialImport is set.
	Import func(ctx context.Context, rc Context, batch ImportBatch[T]) (ImportReport[T], error)

	// ImportDocument is the ResourceImport document of the resource's import
	// view: its columns are the contract every uploaded row is checked
	// against, its fields the contextual values an import carries. Required
	// with Import; it must accept CSV.
	ImportDocument *a2ui.ResourceImport
	// ImportLimits bounds an uploaded file; zero fields take the defaults
	// (5 MiB, 10,000 rows).
	ImportLimits ImportLimits
	// PartialImport lets Import run with the rows that passed the checks when
	// others failed (their errors are in ImportBatch.Errors). Default false:
	// a single failing row rejects the whole file and Import is not called.
	PartialImport bool
}

// The operations of a resource.
const (
	OpList   = "list"
	OpGet    = "get"
	OpCreate = "create"
	OpUpdate = "update"
	OpDelete = "delete"
	OpImport = "import"
)

// Action returns the action id of operation op of resource id:
// resource.<id>.<op>.
func Action(id, op string) string { return "resource." + id + "." + op }

// Paging of resource lists and dataset queries.
const (
	defaultPageLimit = 100     // rows or items returned when the request names none
	maxPageLimit     = 1000    // the largest limit a request may ask for
	maxOffset        = 1 << 30 // bounds offsets so that offset+limit never overflows
)

// The conventional effect types of resource operations.
const (
	effectResourceListed   = "resource.listed"
	effectResourceFetched  = "resource.fetched"
	effectResourceCreated  = "resource.created"
	effectResourceUpdated  = "resource.updated"
	effectResourceDeleted  = "resource.deleted"
	effectResourceImported = "resource.imported"
)

// ok returns a result with status "ok" and the effects.
func ok(effects ...contracts.Effect) *contracts.ActionResult {
	return &contracts.ActionResult{Status: contracts.StatusOK, Effects: effects}
}

// resourceListed is the resource.listed effect of resource.<id>.list.
func resourceListed(resource string, items []map[string]any) contracts.Effect {
	if items == nil {
		items = []map[string]any{}
	}
	return contracts.Effect{Type: effectResourceListed, Resource: resource, Items: items}
}
