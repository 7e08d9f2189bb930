// Package supervaizer is the Go SDK for Supervaizer v2 agent controllers: the
// HTTP service an agent author runs next to their agent, which Supervaize
// Studio calls.
//
// A controller serves Agent Cards under /.well-known/, the JSON-RPC 2.0
// endpoint POST /a2a (supervaizer/action.invoke and supervaizer/surface.load)
// and the event stream GET /a2a/events. The SDK verifies every Studio request
// (the transport API key and a Studio-signed Ed25519 workspace token),
// dispatches it to the agent's handler and validates every result against the
// contracts before it goes on the wire. The protocol defines the shape; the
// agent defines the vocabulary.
//
// # Quick start
//
//	reg, err := supervaizer.BuildRegistration(supervaizer.RegistrationSpec{
//		AgentSlug: "hello-agent", DisplayName: "Hello Agent", A2UICatalogVersion: "hello.2026-11-01",
//		Surfaces: supervaizer.Surfaces("job.start"),
//		Actions:  supervaizer.Actions("job.start"),
//	})
//	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Hello Agent", Version: "1.0.0", Registration: reg})
//	srv, err := supervaizer.NewServer([]*supervaizer.Agent{agent})
//	type Start struct {
//		TopicID string `json:"topic_id" sv:"nonblank"`
//	}
//	supervaizer.HandleActionFor(srv, "job.start", func(ctx context.Context, req *supervaizer.ActionRequest, in Start) (*supervaizer.ActionResult, error) {
//		return supervaizer.OK(supervaizer.JobStarted(req.JobID, map[string]any{"topic_id": in.TopicID})), nil
//	})
//	http.ListenAndServe("127.0.0.1:8080", srv) // a *Server is an http.Handler
//
// # Handlers and results
//
// [Agent.HandleAction] and [Agent.HandleSurface] register plain handlers;
// [HandleActionFor] validates the action input against the JSON Schema derived
// from a Go type and decodes it first. Results are built with [OK], [Fail], the
// effect constructors ([JobStarted], [DatasetQueried], …) and
// [NewSurfaceResult] with an a2ui document. [RegisterResource] and
// [RegisterDataset] serve typed resources (also over the DataResource REST
// routes) and datasets.
//
// # State, Studio and governance
//
// job.start is idempotent by default: retries with the same idempotency_key get
// the original result, byte for byte ([Agent.Idempotent] opts other actions in).
// What must survive a restart goes through the [store.Store] given with
// [WithStore]. With a [studio.Client] ([WithStudio] or the SUPERVAIZE_* variables)
// [Server.Start] registers the controller with Studio and checks the handshake.
// [NewRuleCheckpointGate] and [RunGuardedStep] guard an external effect with
// Studio decisions taken before and after it, never replaying an uncertain
// effect after a crash.
//
// # Packages
//
// The root package holds what agent authors use every day. Package contracts
// holds the wire models, their JSON Schema (generated from the Go types) and the
// Validator; a2a the Agent Card; a2ui the surface documents and field helpers;
// store the persistence interface (in-memory and embedded durable); testing
// (imported as svtest) the test kit: a fake Studio that mints real tokens, test
// servers and AssertConfirmIdempotent.
//
// # Errors
//
// Handlers return business failures as results with status "error" ([Fail]).
// Any other handler error, a panic or a result that breaks the contract is sent
// as -32603 and logged; the SDK's own protocol errors carry the codes of
// [Code].
package supervaizer
