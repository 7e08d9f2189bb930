package contracts

// JSON-RPC 2.0 error codes of the envelope, answered by POST /a2a before any
// handler runs: clients and tests compare them with the code they receive
// (supervaizer.CodeOf). The codes an agent meets in its own code
// (supervaizer.CodeInvalidParams, CodeInternalError and the Supervaizer codes)
// are in the supervaizer package.
const (
	CodeParseError     = -32700 // the body is not valid JSON
	CodeInvalidRequest = -32600 // not a valid JSON-RPC request
	CodeMethodNotFound = -32601 // unknown JSON-RPC method
)
