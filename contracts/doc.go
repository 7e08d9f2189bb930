// Package contracts is the single source of truth for every Supervaizer v2 wire
// shape: the Go types of the models, the JSON Schema derived from them, and the
// Validator the SDK runs on every request and every handler result.
//
// # Models
//
// Each model of the spec is a Go struct: the registration ([Registration] and
// its parts), requests ([ActionRequest], [SurfaceRequest]), results
// ([ActionResult], [SurfaceResult], [Effect]), snapshots ([JobState], [Job],
// [Case], [Step], [ArtifactRef]), the shared field schema ([Field],
// [AwaitingField], [ResourceField]), setup plans, the surface documents
// ([FormDocument], [ResourceImportDocument], …) and the agent-level blocks
// ([Introduction], [FullDescription], [BillingCatalog]). Models are open:
// unknown keys are kept in Extra and survive a decode/encode round trip, and a
// key that differs from a declared key only in letter case is refused (encoding/json
// would otherwise let it override the real key).
//
// # Encoding
//
// The models are plain structs without JSON methods: encode them with
// [Marshal] and decode them with [Unmarshal], as protojson encodes protocol
// buffers. Those two write and read the wire form: Extra's keys after the
// declared ones, always-written lists as [] when nil, the protocol defaults of
// empty fields, folded keys refused. encoding/json sees only the declared
// fields (it drops Extra and writes a nil list as null). The SDK encodes and
// decodes every payload this way; a handler returns models and never encodes
// them itself.
//
// Absent and null are deliberate and pinned by golden files: registrations keep
// their nulls (ag_ui_version, renderer_surface, workspace_binding…), action
// results drop every null of a typed object, surface results write their
// versions as null when unset, and the newer optional keys (display texts,
// action kind, target_field, dry_run, scheduled_start…) stay off the wire at
// their defaults so older registrations serialize as before. Decoding applies
// the contract defaults (an action is mutating with job scope unless it says
// otherwise); a Go literal does not, so prefer the SDK's builders.
//
// # Schema
//
// [Schema] returns one JSON Schema document (draft 2020-12) whose $defs hold
// every model, generated from the Go declarations: json tags give the keys, Go
// types the JSON types (a pointer is nullable), and an `sv` struct tag adds the
// rules JSON Schema can express (required, nonblank, minLen/maxLen in code
// points, enum, const, pattern, format, minItems/maxItems, minimum/maximum).
// Rules spanning several keys are if/then schemas whose description names the
// rule; rules JSON Schema cannot express (unique ids, min <= max, cross
// references) are Go checks run after the schema. The document is published as
// schema/supervaizer-v2.schema.json (go generate ./contracts rewrites it; a
// test fails when it is stale) and a test proves the published file and the
// Validator agree on a corpus of valid and invalid documents.
//
// # Validation
//
// [Validator] validates raw JSON (numbers stay exact) with
// santhosh-tekuri/jsonschema, the reference implementation, then runs the Go
// rules ([Validator.Check]); each problem is one line with a JSON Pointer path
// and the rule broken, never the input value. [InputValidator] does the same
// for an agent's own action input type, strict by default (unknown keys
// refused).
//
// This package is the truth, not the hot path: the SDK's dispatcher validates
// and encodes with its own compiled validator and append-style encoder, which
// the SDK's tests hold to this package's verdicts and to [Marshal]'s bytes.
// The compiled validator also serves the Go rules' own schema checks, through
// [Validator.WithSchemaCheck].
package contracts
