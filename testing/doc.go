// Package testing is the test kit for Supervaizer agents: testing an agent is
// as easy as httptest. It builds only on the public API of the SDK and the
// real protocol, as a user's code would: it imports no internal package, its
// fake Studio links agents through the registration handshake, and the
// JSON-RPC errors it reads are decoded into *[supervaizer.Error] with
// encoding/json. It registers no flag. Import it under the alias svtest,
// beside the standard library's testing:
//
//	import svtest "github.com/supervaize/supervaizer-go/testing"
//
// # Quick start
//
// researchAgent(t) stands for a function of your tests that builds your agent
// with its handlers registered:
//
//	func TestStart(t *testing.T) {
//		ts := svtest.NewTestServer(t, []*supervaizer.Agent{researchAgent(t)})
//		req := ts.Request("job.start", map[string]any{"topic_id": "t-1"})
//		req.IdempotencyKey, req.JobID = "setup-1", "job-1"
//		res, err := ts.Invoke(t.Context(), req)
//		require.NoError(t, err)
//		assert.Equal(t, "ok", res.Status)
//	}
//
// [NewTestServer] gives a [supervaizer.Server] isolated from the process
// environment, with a known API key and a [FakeStudio] whose settings it
// trusts; its agents are linked to their Studio agent ids by the fake
// Studio's answer to the registration handshake ([FakeStudio.Link]), which
// makes their registrations final, as Server.Start does: register handlers
// first. [TestServer.Invoke] and [TestServer.LoadSurface] send calls through
// the real pipeline with a freshly minted workspace token, and return JSON-RPC
// errors as *[supervaizer.Error], so [supervaizer.CodeOf] works.
//
// # Workspace tokens
//
// [FakeStudio] mints real Ed25519 workspace authorization tokens. Start from
// the claims of a valid call, break one, and mint:
//
//	req := ts.Request("job.start", in)
//	c := ts.Studio.ActionClaims(req) // the claims of a valid token for req
//	c.ExpiresAt = time.Now().Add(-time.Hour)
//	_, err := ts.InvokeWithToken(ctx, req, ts.Studio.Mint(c))
//	assert.Equal(t, "workspace_authorization_expired", svtest.AuthCode(err))
//
// [FakeStudio.JWKSSettings] and [FakeStudio.RotateKey] exercise the JWKS key
// source and key rotation.
//
// # job.start idempotency
//
// Every agent ships a test that runs the conformance helper of the protocol
// on its job.start handler:
//
//	func TestStartIsIdempotent(t *testing.T) {
//		ts := svtest.NewTestServer(t, []*supervaizer.Agent{researchAgent(t)})
//		req := ts.Request("job.start", map[string]any{"topic_id": "t-1"})
//		req.IdempotencyKey, req.JobID = "setup-1", "job-1"
//		svtest.AssertConfirmIdempotent(t, ts, req,
//			svtest.RecommendedChecks(map[string]any{"topic_id": "t-2"}))
//	}
//
// The helper reaches the handler twice: after the first call through the
// pipeline, it makes the identical call on a twin server (the same agents and
// options on an empty store, as after a lost record), where the SDK's
// idempotency layer has nothing to answer from, then retries through the
// pipeline, which must answer the recorded bytes.
//
// # Attached to Studio
//
// A controller attached to Studio registers at startup and calls Studio while
// it works. [FakeStudioAPI] fakes that HTTP side on an httptest server:
// controller events and the registration handshake, the agent lookup with
// encrypted parameters, rule checkpoints, the context client and billing.
// [NewAttachedTestServer] starts a server attached to one, through the real
// Server.Start (server.register, handshake, lookup):
//
//	api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
//	api.SetAgent("research-agent", svtest.AgentDetail{Parameters: map[string]any{"SEARCH_API_KEY": "sk-test"}})
//	ts := svtest.NewAttachedTestServerWithAPI(t, api, []*supervaizer.Agent{researchAgent(t)})
//	sa, _ := ts.Server.Studio().Agent("research-agent") // decrypted parameters
//
// The controller's own server id is [DefaultControllerID]; Studio's id for it
// ([FakeStudio.ServerID]) comes with the handshake's audience, and the tokens
// the fake Studio mints carry it. [FakeStudioAPI.ServerOptions] gives the same
// configuration for startup-failure tests, [FakeStudioAPI.Env] the
// SUPERVAIZE_* variables for agents configured from the environment.
//
// Governed jobs take a snapshot from [FakeStudioAPI.RuleSnapshot]; its token
// is accepted on checkpoints of that snapshot only, and its checkpoint_url is
// a decoy that [FakeStudioAPI.SnapshotURLCalls] proves never called.
// Decisions are allow unless [FakeStudioAPI.SetDecision] says otherwise; a
// paused checkpoint is resumed with [TestServer.ResumeRequest]:
//
//	ts.API.SetDecision(svtest.AnyOccurrence, contracts.PhaseBefore, checkpoint.Pause)
//	start := ts.Request("job.start", map[string]any{"topic_id": "t-1", "rule_snapshot": ts.API.RuleSnapshot("rs_1")})
//	start.JobID = "job-1"
//	gate, err := checkpoint.NewGate(agent.Checkpoints(), ts.Server.Studio(), &start)
//	go func() { done <- run(gate) }() // checkpoint.Run waits for the decision
//	before := ts.API.WaitCheckpoints(t, 1)[0]
//	res, err := ts.Invoke(ctx, ts.ResumeRequest(before, checkpoint.Allow, "dec-1"))
//
// What the fake received is read with typed accessors (Events, Registrations,
// Checkpoints, BillingRecords, ContextCalls, Requests), safe for concurrent
// use; the Wait methods block until it arrives. [FakeStudioAPI.FailNext]
// injects an HTTP failure or a dropped connection on the next request of a
// path. The fake checks the account headers and the wire format of every
// request, so SDK regressions surface as Studio errors.
//
// # Running controllers
//
// [Connect] drives a controller that already runs, over HTTP: Invoke,
// LoadSurface and [AssertConfirmIdempotent] work as with a TestServer.
//
//	remote := svtest.Connect(t, url, apiKey, studio) // url: the controller's, such as http://127.0.0.1:8080
//
// # Golden files
//
// [Golden] compares wire JSON with a file under testdata/ and rewrites it
// when the environment variable SUPERVAIZER_UPDATE_GOLDEN is true
// ([UpdateGoldenEnv]); [GoldenUpdate] takes the choice as a parameter, for
// example from a -update flag of your own. Importing svtest registers no
// flag. [TestServer.InvokeRaw] gives the result exactly as sent:
//
//	SUPERVAIZER_UPDATE_GOLDEN=1 go test ./...
package testing
