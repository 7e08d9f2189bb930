// Package testing is the test kit for Supervaizer agents: testing an agent is
// as easy as httptest. It builds only on the public API of the SDK. Import it
// under the alias svtest, beside the standard library's testing:
//
//	import svtest "github.com/supervaize/supervaizer-go/testing"
//
// # Quick start
//
//	func TestStart(t *testing.T) {
//		ts := svtest.NewTestServer(t, []*supervaizer.Agent{newAgent(t)})
//		req := ts.Request("job.start", map[string]any{"topic_id": "t-1"})
//		req.IdempotencyKey, req.JobID = "setup-1", "job-1"
//		res, err := ts.Invoke(t.Context(), req)
//		require.NoError(t, err)
//		assert.Equal(t, "ok", res.Status)
//	}
//
// [NewTestServer] gives a [supervaizer.Server] isolated from the process
// environment, with a known API key and a [FakeStudio] whose settings it
// trusts. [TestServer.Invoke] and [TestServer.LoadSurface] send calls through
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
// (model.md §10) on its job.start handler:
//
//	func TestStartIsIdempotent(t *testing.T) {
//		ts := svtest.NewTestServer(t, []*supervaizer.Agent{newAgent(t)})
//		req := ts.Request("job.start", map[string]any{"topic_id": "t-1"})
//		req.IdempotencyKey, req.JobID = "setup-1", "job-1"
//		svtest.AssertConfirmIdempotent(t, ts, req,
//			svtest.RecommendedChecks(map[string]any{"topic_id": "t-2"}))
//	}
//
// # Golden files
//
// [Golden] compares wire JSON with a file under testdata/ and rewrites it
// under -update; [TestServer.InvokeRaw] gives the result exactly as sent.
package testing
