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
// A complete agent (examples/hello): one action with a typed input and the
// surface that starts it, served with [Server.ListenAndServe] (timeouts on
// headers, reads and idle connections; a clean stop on SIGINT or SIGTERM). In
// local mode it needs no Studio and no configuration; its startup log names
// the address and the API key to send. Without local mode it must verify Studio's workspace tokens and
// refuses to start, naming the variables to set, until it can.
//
//	package main
//
//	import (
//		"context"
//		"log"
//		"os"
//		"os/signal"
//		"syscall"
//
//		sv "github.com/supervaize/supervaizer-go"
//		"github.com/supervaize/supervaizer-go/a2ui"
//	)
//
//	type StartInput struct {
//		Name string `json:"name" sv:"nonblank"` // checked before the handler runs
//	}
//
//	func main() {
//		// The registration's defaults come from the name and version; the
//		// handlers declare the surfaces and actions.
//		srv, err := sv.New(sv.AgentSpec{Name: "Hello Agent", Version: "1.0.0"}, sv.WithLocalMode(true)) // local mode: development only
//		if err != nil {
//			log.Fatal(err)
//		}
//		srv.HandleSurface("job.start", sv.StaticSurface(a2ui.NewForm("hello.start", "Say hello", "job.start",
//			a2ui.StringField("name", "Name", a2ui.Required()))))
//		sv.HandleActionFor(srv, "job.start", func(ctx context.Context, req *sv.ActionRequest, in StartInput) (*sv.ActionResult, error) {
//			return sv.OK(sv.JobStarted(req.JobID, map[string]any{"greeting": "Hello, " + in.Name})), nil
//		})
//		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//		defer stop()
//		if err := srv.ListenAndServe(ctx); err != nil { // SUPERVAIZER_ADDR, default 127.0.0.1:8080
//			log.Fatal(err)
//		}
//	}
//
// Start a job as Studio would (the doc check runs the quick start and sends
// this call to the address it bound):
//
//	curl -s 127.0.0.1:8080/a2a -H 'X-API-Key: local-dev' -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":{"action_request":{"request_id":"r1","actor":{"user_id":"me"},"workspace":{"id":"ws-1"},"mission_id":"m1","agent_slug":"hello-agent","surface":"job.start","action":"job.start","job_id":"job-1","idempotency_key":"k1","input":{"name":"Ada"}}}}'
//
// # Handlers and results
//
// [New] builds the agent and its server. The agent's registration is declared
// in [AgentSpec].Registration (a [RegistrationSpec]) and built and validated
// by New: its agent slug, display name and catalog version default to the
// agent's slug, name and "<slug>.<version>". When it lists no surface and no
// action, the handlers registered before the server serves declare them;
// otherwise every handler must be declared there.
//
// [Server.HandleAction] and [Server.HandleSurface] register plain handlers;
// [HandleActionFor] validates the action input against the JSON Schema derived
// from a Go type and decodes it first. Results are built with [OK], [Fail], the
// effect constructors ([JobStarted], [JobSynced], …) and
// [NewSurfaceResult] with an a2ui document ([StaticSurface] for a document that
// does not depend on the request). [RegisterResource] and
// [RegisterDataset] serve typed resources (also over the DataResource REST
// routes) and datasets, whose handlers, scopes and imports are in package
// [github.com/supervaize/supervaizer-go/resource].
//
// # Several agents on one server
//
// A server usually carries one agent, built with [New], and handlers are
// registered on the [Server]. A server carrying several agents is the one case
// for the explicit per-agent form: build each with [NewAgent], serve them with
// [NewServer], and register on each [Agent] ([Agent.HandleAction],
// [Agent.HandleSurface], and HandleActionFor, RegisterResource and
// RegisterDataset with the *Agent), since [Server.HandleAction] cannot tell
// which agent is meant and panics. [Server.Agent] looks an agent up by slug.
//
// An agent has one identity in calls, its slug (agent_slug), derived from
// [AgentSpec].Name. The registration's agent.id is [RegistrationSpec].AgentID
// (default: the slug); the id Studio assigns at the handshake is
// [Agent.StudioAgentID].
//
// # State, Studio and governance
//
// job.start is idempotent by default: retries with the same idempotency_key get
// the original result, byte for byte ([Agent.Idempotent] opts other actions in).
// What must survive a restart goes through the [store.Store] given with
// [WithStore]. With a [studio.Client] ([WithStudio] or the SUPERVAIZE_* variables)
// [Server.Start] registers the controller with Studio and checks the handshake.
// Package checkpoint's gates and guarded steps ([checkpoint.NewGate] with
// [Agent.Checkpoints], [checkpoint.Run]) guard an external effect with
// Studio decisions taken before and after it, never replaying an uncertain
// effect after a crash.
//
// # Packages
//
// The root package holds what agent authors use every day. Package contracts
// holds the wire models, their JSON Schema (generated from the Go types) and the
// Validator; a2a the Agent Card; a2ui the surface documents and field helpers;
// checkpoint the rule checkpoints (gates, guarded steps, recovery); store the
// persistence interface (in-memory and embedded durable); testing
// (imported as svtest) the test kit: a fake Studio that mints real tokens, test
// servers and AssertConfirmIdempotent.
//
// # Errors
//
// Handlers return business failures as results with status "error" ([Fail]).
// Any other handler error, a panic or a result that breaks the contract is sent
// as -32603 and logged. The errors an author meets:
//
//   - [*Error]: a JSON-RPC error object, with a code of package errcode: the
//     SDK's answer to a call its own checks refused, as svtest's calls return
//     it, or the -32602 a typed handler's invalid input gets. [CodeOf] reads
//     the code of any error as the wire would carry it.
//   - [*AuthError]: what a [WorkspaceVerifier] returns to refuse a token,
//     answered -32030 with its code in data.code.
//   - [ErrInstanceInUse]: [Server.Start] found the instance id held by
//     another live process.
//
// Setup errors of [NewServer] and [Server.Start] are plain errors naming
// what to fix.
package supervaizer
