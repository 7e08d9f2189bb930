// Package sdkhook lends the SDK's own packages outside the root (svtest, the
// load check) two things the root package does on behalf of the wire or of
// Studio and does not export: building the *supervaizer.Error a client reads,
// and linking an agent to its Studio agent id as the registration handshake
// does. The root package sets both functions when it is initialized; nothing
// here is part of the public API.
package sdkhook

var (
	// NewError returns a *supervaizer.Error carrying the code, message and
	// data of a JSON-RPC error object read from the wire.
	NewError func(code int, message string, data any) error

	// LinkStudioAgent links agent, a *supervaizer.Agent, to the Studio agent
	// id, as Studio's registration handshake does.
	LinkStudioAgent func(agent any, id string) error
)
