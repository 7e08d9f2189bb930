// Package resource serves the typed resources and datasets an agent declares
// in its registration: the DataResource handlers an author writes
// ([Handlers], [Context], [ScopeKey], [ListQuery], [DatasetQuery]), the
// business refusals they return ([ErrNotFound], [RefusalError]), the CSV imports
// ([ImportBatch], [ImportReport], [ImportLimits], [ImportRowError]) and the
// DataResource context headers, mission metadata included ([ContextHeaders],
// [ParseDataResourceContext]).
//
// An author implements the operations of a declared resource once and
// registers them with supervaizer.RegisterResource; a dataset query is
// registered with supervaizer.RegisterDataset. The server then serves each
// operation both as the resource.<id>.<op> action of POST /a2a and on the
// DataResource REST routes ([Routes]), with one core shared by the two
// transports: the verified scope ([Context].Scope), the item checks against
// the declared fields and the mapping of errors to refusals.
//
//	supervaizer.RegisterResource(srv, "contacts", resource.Handlers[contact]{
//		List: func(ctx context.Context, rc resource.Context, q resource.ListQuery) ([]contact, error) {
//			return store.List(rc.Scope.String(), q.Offset, q.Limit)
//		},
//	})
//
// [Bind], [BindDataset] and [Routes] are the engine the server runs: an agent
// author does not call them.
//
// # Errors
//
// A handler returns [ErrNotFound] for an item its scope does not hold
// (not_found, HTTP 404), a *[RefusalError] for a business refusal (a status
// "error" result carrying its code; HTTP 422 or its Status), and any other
// error for a failure (logged, never sent: -32603, HTTP 500).
// [ParseDataResourceContext] refuses a malformed or contradicting context
// header with a *[ContextHeaderError]; an import reports each refused row as
// an [ImportRowError].
package resource
