package testing_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/studio"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// surfaceExampleAgent is the example agent with a "dashboard" surface.
func surfaceExampleAgent() *supervaizer.Agent {
	reg := supervaizer.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "1.0.0",
		Actions:  supervaizer.Actions("job.start"),
		Surfaces: supervaizer.Surfaces("dashboard"),
	}
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: reg})
	if err != nil {
		panic(err)
	}
	agent.HandleSurface("dashboard", func(ctx context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
		return supervaizer.NewSurfaceResult(ctx, req.Surface, map[string]any{"type": contracts.DocumentConfigurator, "title": "Sources"})
	})
	return agent
}

func ExampleAuthCode() {
	runExample(func(t testing.TB) {
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{exampleAgent()})
		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})

		_, err := ts.InvokeWithToken(t.Context(), req, "") // no workspace token
		fmt.Printf("%d %q\n", supervaizer.CodeOf(err), svtest.AuthCode(err))

		_, err = ts.Invoke(t.Context(), ts.Request("job.start", map[string]any{})) // not an authorization error
		fmt.Printf("%d %q\n", supervaizer.CodeOf(err), svtest.AuthCode(err))
	})
	// Output:
	// -32030 "workspace_authorization_missing"
	// -32602 ""
}

func ExampleControllerKey() {
	runExample(func(t testing.TB) {
		key := svtest.ControllerKey(t) // generated once per test binary
		fmt.Println(key.N.BitLen(), key == svtest.ControllerKey(t))
		// In a test: supervaizer.NewServer(..., supervaizer.WithControllerKey(svtest.ControllerKey(t)))
	})
	// Output: 2048 true
}

func ExampleControllerKeyPEM() {
	runExample(func(t testing.TB) {
		pemKey := svtest.ControllerKeyPEM(t) // the value of SUPERVAIZER_PRIVATE_KEY

		block, _ := pem.Decode([]byte(pemKey))
		key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		fmt.Println(block.Type, svtest.ControllerKey(t).Equal(key))
	})
	// Output: PRIVATE KEY true
}

func ExampleDefaultStudioAgentID() {
	runExample(func(t testing.TB) {
		studio := svtest.NewFakeStudio(t)
		fmt.Println(svtest.DefaultStudioAgentID("research-agent"), studio.StudioAgentID("research-agent"))

		studio.Link(exampleAgent(), "sa-4f1c") // through the registration handshake, with Studio's own id
		fmt.Println(studio.StudioAgentID("research-agent"))
	})
	// Output:
	// studio-agent-research-agent studio-agent-research-agent
	// sa-4f1c
}

func ExampleEncryptParameters() {
	runExample(func(t testing.TB) {
		key := svtest.ControllerKey(t)
		enc, err := svtest.EncryptParameters(&key.PublicKey, map[string]any{"REGION": "eu", "MAX_SOURCES": 12})
		if err != nil {
			t.Fatalf("encrypt: %v", err)
		}

		// What the controller does with parameters_encrypted:
		raw, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		size := key.Size() // raw is the RSA-OAEP encrypted AES key, the IV, the ciphertext
		aesKey, err := rsa.DecryptOAEP(sha256.New(), nil, key, raw[:size], nil)
		if err != nil {
			t.Fatalf("decrypt the AES key: %v", err)
		}
		block, _ := aes.NewCipher(aesKey)
		iv, data := raw[size:size+aes.BlockSize], raw[size+aes.BlockSize:]
		cipher.NewCBCDecrypter(block, iv).CryptBlocks(data, data)
		fmt.Println(string(data[:len(data)-int(data[len(data)-1])])) // without the PKCS#7 padding
	})
	// Output: [{"name":"MAX_SOURCES","value":12},{"name":"REGION","value":"eu"}]
}

func ExampleNewFakeStudio() {
	runExample(func(t testing.TB) {
		studio := svtest.NewFakeStudio(t)
		settings := studio.Settings("ctrl-eu-1") // what a controller with this server id must trust
		fmt.Println(settings.Enabled, settings.Issuer, settings.Audience)

		c := studio.Claims(studio.Grant("research-agent"))
		fmt.Println(c.Subject, c.AgentID, c.ServerID, c.WorkspaceID)
		fmt.Println(c.ExpiresAt.Sub(c.IssuedAt))
	})
	// Output:
	// true https://studio.supervaize.test supervaizer-server:ctrl-eu-1
	// workspace-agent-grant:grant-test studio-agent-research-agent ctrl-eu-1 ws-test
	// 10m0s
}

func ExampleNewTestServerWithStudio() {
	runExample(func(t testing.TB) {
		studio := svtest.NewFakeStudio(t)
		studio.Settings("ctrl-eu-1") // bind the fake Studio to the controller's id
		agent := exampleAgent()
		studio.Link(agent, "sa-4f1c")

		ts := svtest.NewTestServerWithStudio(t, studio, []*supervaizer.Agent{agent})
		fmt.Println(ts.Server.ServerID(), ts.Studio == studio)

		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})
		req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
		c := studio.ActionClaims(req)
		fmt.Println(c.AgentID, c.Audience)
		res, err := ts.Invoke(t.Context(), req)
		if err != nil {
			t.Fatalf("invoke: %v", err)
		}
		fmt.Println(res.Status)
	})
	// Output:
	// ctrl-eu-1 true
	// sa-4f1c [supervaizer-server:ctrl-eu-1]
	// ok
}

func ExampleNewAttachedTestServerWithAPI() {
	runExample(func(t testing.TB) {
		api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
		api.FailNext(api.WorkspacePath(svtest.EventsPath), svtest.DropConnection) // server.register is retried
		ts := svtest.NewAttachedTestServerWithAPI(t, api, []*supervaizer.Agent{exampleAgent()})

		for _, r := range api.Requests() {
			fmt.Println(r.Method, r.Path, r.Status)
		}
		reg, _ := api.Registration()
		fmt.Println(reg.ServerID, reg.URL == ts.URL(), reg.Agents[0].Slug)
	})
	// Output:
	// POST /w/ws-test/api/v1/ctrl-events/ 0
	// POST /w/ws-test/api/v1/ctrl-events/ 200
	// GET /w/ws-test/api/v1/agents/studio-agent-research-agent 200
	// svtest-controller true research-agent
}

func ExampleWithAccountKey() {
	runExample(func(t testing.TB) {
		api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t), svtest.WithAccountKey("acme-account-key"))
		api.AddContext(svtest.ContextItem{Ref: "supervaize.context.workspace.billing", Title: "Billing"})

		res, err := api.Client().Context().Search(t.Context(), studio.SearchRequest{Query: "billing"})
		if err != nil {
			t.Fatalf("search: %v", err)
		}
		fmt.Println(len(res.Results), api.Env()["SUPERVAIZE_API_KEY"] == "acme-account-key")

		cfg := api.ClientConfig()
		cfg.APIKey = svtest.DefaultAccountKey // not the key this Studio expects
		wrong, err := studio.NewClient(cfg)
		if err != nil {
			t.Fatalf("account: %v", err)
		}
		_, err = wrong.Context().Search(t.Context(), studio.SearchRequest{Query: "billing"})
		fmt.Println(err)
	})
	// Output:
	// 1 true
	// supervaizer: Studio POST /w/ws-test/api/v1/context/search/: HTTP 401: {"detail":"invalid or missing account key (Authorization: Api-Key \u003ckey\u003e)"}
}

func ExampleWithWorkspaceID() {
	runExample(func(t testing.TB) {
		api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t), svtest.WithWorkspaceID("ws-acme"))
		fmt.Println(api.WorkspaceID(), api.Env()["SUPERVAIZE_WORKSPACE_ID"], api.WorkspacePath(svtest.EventsPath))

		svtest.NewAttachedTestServerWithAPI(t, api, []*supervaizer.Agent{exampleAgent()})
		ev := api.Events()[0]
		fmt.Println(ev.Type, ev.Workspace)
	})
	// Output:
	// ws-acme ws-acme /w/ws-acme/api/v1/ctrl-events/
	// server.register ws-acme
}

func ExampleExpectConflict() {
	runExample(func(t testing.TB) {
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{exampleAgent()})
		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})
		req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
		changed := StartInput{TopicID: "another-topic"}
		fmt.Println(svtest.AssertConfirmIdempotent(t, ts, req, svtest.ExpectConflict(changed)))

		// The third call it makes: the same idempotency_key with another input.
		req.Input, _ = json.Marshal(changed)
		res, err := ts.Invoke(t.Context(), req)
		if err != nil {
			t.Fatalf("invoke: %v", err)
		}
		fmt.Println(res.Status, res.Errors[0].Code)
	})
	// Output:
	// true
	// error idempotency_conflict
}

func ExampleRecommendedChecks() {
	runExample(func(t testing.TB) {
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{exampleAgent()})
		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})
		req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
		changed := StartInput{TopicID: "another-topic"}

		fmt.Println(svtest.AssertConfirmIdempotent(t, ts, req, svtest.RecommendedChecks(changed)))
		// The same checks, one by one:
		fmt.Println(svtest.AssertConfirmIdempotent(t, ts, req,
			svtest.RequireIdempotencyKey(), svtest.RequireStrictlyIdempotent(), svtest.ExpectConflict(changed)))
	})
	// Output:
	// true
	// true
}

func ExampleRequireIdempotencyKey() {
	runExample(func(t testing.TB) {
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{exampleAgent()})
		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})
		req.JobID = "job-77" // but no IdempotencyKey
		fmt.Println(svtest.AssertConfirmIdempotent(t, ts, req, svtest.RequireIdempotencyKey()))
	})
	// Output:
	// FAIL: svtest.AssertConfirmIdempotent: rule "idempotency_key present" (recommended) failed: the request has no idempotency_key (action "job.start")
	// false
}

func ExampleRequireStrictlyIdempotent() {
	runExample(func(t testing.TB) {
		reg := supervaizer.RegistrationSpec{
			AgentSlug: "quota-agent", DisplayName: "Quota Agent", A2UICatalogVersion: "1.0.0",
			Actions: supervaizer.Actions("job.start"),
		}
		agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Quota Agent", Version: "1.0.0", Registration: reg})
		if err != nil {
			t.Fatalf("agent: %v", err)
		}
		agent.HandleAction("job.start", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
			return supervaizer.Fail("quota_exceeded", "no quota left"), nil // a business failure, replayed as is
		})
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{agent})
		req := ts.Request("job.start", map[string]any{})
		req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
		fmt.Println(svtest.AssertConfirmIdempotent(t, ts, req, svtest.RequireStrictlyIdempotent()))
	})
	// Output:
	// FAIL: svtest.AssertConfirmIdempotent: rule "strictly idempotent response" (recommended) failed: result 1 has status "error", want "ok"
	// 	result 1: {"status":"error","effects":[],"replay_safety":{"dedupe_keys":["setup-7f3c"],"stable_external_ids_required":true,"strictly_idempotent_response":true,"convergent":true},"errors":[{"code":"quota_exceeded","message":"no quota left"}]}
	// false
}

func ExampleWithEffectProbe() {
	runExample(func(t testing.TB) {
		reg := supervaizer.RegistrationSpec{
			AgentSlug: "crm-agent", DisplayName: "CRM Agent", A2UICatalogVersion: "1.0.0",
			Actions: supervaizer.Actions("lead.create"),
		}
		agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "CRM Agent", Version: "1.0.0", Registration: reg})
		if err != nil {
			t.Fatalf("agent: %v", err)
		}
		var leads atomic.Int64 // the records the agent created
		agent.HandleAction("lead.create", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
			leads.Add(1) // a new lead on every call, ignoring the idempotency key
			return supervaizer.OK(supervaizer.Effect{Type: "lead.created", Data: map[string]any{"key": req.IdempotencyKey}}), nil
		})
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{agent})
		req := ts.Request("lead.create", map[string]any{})
		req.IdempotencyKey = "lead-acme"

		// The two results are equal: only the probe sees the duplicate lead.
		fmt.Println(svtest.AssertConfirmIdempotent(t, ts, req, svtest.WithEffectProbe(leads.Load)), leads.Load())
	})
	// Output:
	// FAIL: svtest.AssertConfirmIdempotent: rule "the retry creates nothing" (effect probe) failed: the effect probe went from 1 (after call 1) to 3 during the identical calls 2 and 3
	// false 3
}

func ExampleFakeStudio_Mint() {
	runExample(func(t testing.TB) {
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{exampleAgent()})
		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})

		wrongAgent := ts.Studio.ActionClaims(req)
		wrongAgent.AgentID = "studio-agent-other"
		noScopes := ts.Studio.ActionClaims(req)
		noScopes.Omit = []string{"scopes"} // remove a claim...
		badExp := ts.Studio.ActionClaims(req)
		badExp.Set = map[string]any{"exp": "soon"} // ...or write any raw value

		for _, c := range []svtest.Claims{wrongAgent, noScopes, badExp} {
			_, err := ts.InvokeWithToken(t.Context(), req, ts.Studio.Mint(c))
			fmt.Println(svtest.AuthCode(err))
		}
	})
	// Output:
	// workspace_authorization_wrong_agent
	// workspace_authorization_invalid_claims
	// workspace_authorization_invalid_claims
}

func ExampleFakeStudio_TokenForAction() {
	runExample(func(t testing.TB) {
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{exampleAgent()})
		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})
		req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
		tok := ts.Studio.TokenForAction(req) // sent as the X-Supervaize-Workspace-Authorization header

		res, err := ts.InvokeWithToken(t.Context(), req, tok)
		if err != nil {
			t.Fatalf("invoke: %v", err)
		}
		fmt.Println(res.Status)

		other := req
		other.Action = "job.stop" // a token names the action it allows
		_, err = ts.InvokeWithToken(t.Context(), other, tok)
		fmt.Println(svtest.AuthCode(err))
	})
	// Output:
	// ok
	// workspace_authorization_missing_scope
}

func ExampleFakeStudio_RotateKey() {
	runExample(func(t testing.TB) {
		studio := svtest.NewFakeStudio(t)
		withPEM := svtest.NewTestServerWithStudio(t, studio, []*supervaizer.Agent{exampleAgent()})
		withJWKS := svtest.NewTestServerWithStudio(t, studio, []*supervaizer.Agent{exampleAgent()},
			supervaizer.WithWorkspaceAuth(studio.JWKSSettings(studio.ServerID())))

		kid := studio.RotateKey()
		fmt.Println(kid == studio.KeyID())
		for _, ts := range []*svtest.TestServer{withPEM, withJWKS} {
			req := ts.Request("job.start", StartInput{TopicID: "battery-market"})
			req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
			_, err := ts.Invoke(t.Context(), req)
			fmt.Printf("%q\n", svtest.AuthCode(err))
		}
	})
	// Output:
	// true
	// "workspace_authorization_bad_signature"
	// ""
}

func ExampleFakeStudio_JWKSSettings() {
	runExample(func(t testing.TB) {
		studio := svtest.NewFakeStudio(t)
		settings := studio.JWKSSettings(studio.ServerID())
		fmt.Println(settings.JWKSURL == studio.JWKSURL(), settings.PublicKeyPEM == "", settings.Audience)

		ts := svtest.NewTestServerWithStudio(t, studio, []*supervaizer.Agent{exampleAgent()},
			supervaizer.WithWorkspaceAuth(settings))
		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})
		req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
		res, err := ts.Invoke(t.Context(), req) // the controller fetched the key from the JWKS
		if err != nil {
			t.Fatalf("invoke: %v", err)
		}
		fmt.Println(res.Status)
	})
	// Output:
	// true true supervaizer-server:studio-server-test
	// ok
}

func ExampleFakeStudioAPI_SetDecision() {
	runExample(func(t testing.TB) {
		agent := governedExampleAgent()
		ts := svtest.NewAttachedTestServer(t, []*supervaizer.Agent{agent})
		ts.API.SetDecision(svtest.AnyOccurrence, contracts.PhaseBefore, checkpoint.Stop)
		ts.API.SetDecision("send-brief-job-77-case-1", svtest.AnyPhase, checkpoint.Allow) // more specific

		start := ts.Request("job.start", map[string]any{"topic_id": "t-1", "rule_snapshot": ts.API.RuleSnapshot("rs_9a41c0")})
		start.JobID = "job-77"
		gate, err := checkpoint.NewGate(agent.Checkpoints(), ts.Server.Studio(), &start)
		if err != nil {
			t.Fatalf("gate: %v", err)
		}
		for _, occurrence := range []string{"send-brief-job-77-case-1", "archive-job-77-case-1"} {
			_, err := checkpoint.Run(t.Context(), gate, checkpoint.Step[string]{
				CaseID: "case-1", OccurrenceID: occurrence, StepID: "step-" + occurrence,
				Effect:       func(context.Context) (string, error) { return "done", nil },
				AfterContext: func(r string) map[string]any { return map[string]any{"outcome": r} },
			})
			fmt.Println(occurrence, errors.Is(err, checkpoint.ErrBlocked))
		}
		for _, c := range ts.API.Checkpoints() {
			fmt.Println(c.OccurrenceID, c.Phase, c.Status)
		}
	})
	// Output:
	// send-brief-job-77-case-1 false
	// archive-job-77-case-1 true
	// send-brief-job-77-case-1 before allow
	// send-brief-job-77-case-1 after allow
	// archive-job-77-case-1 before stop
}

func ExampleFakeStudioAPI_FailNext() {
	runExample(func(t testing.TB) {
		api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
		search := api.WorkspacePath(svtest.ContextSearchPath)
		api.FailNext(search, svtest.DropConnection) // a transport failure: the SDK retries...
		api.FailNext(search, 429)                   // ...but returns an HTTP answer

		_, err := api.Client().Context().Search(t.Context(), studio.SearchRequest{Query: "billing"})
		fmt.Println(err)
		for _, r := range api.Requests() {
			fmt.Println(r.Method, r.Path, r.Status)
		}
	})
	// Output:
	// supervaizer: Studio POST /w/ws-test/api/v1/context/search/: HTTP 429: {"detail":"svtest: injected failure"}
	// POST /w/ws-test/api/v1/context/search/ 0
	// POST /w/ws-test/api/v1/context/search/ 429
}

func ExampleTestServer_Invoke() {
	runExample(func(t testing.TB) {
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{exampleAgent()})
		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})
		req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
		res, err := ts.Invoke(t.Context(), req)
		if err != nil {
			t.Fatalf("invoke: %v", err)
		}
		fmt.Println(res.Status, res.Effects[0].Type, res.ReplaySafety.DedupeKeys)

		_, err = ts.Invoke(t.Context(), ts.Request("job.pause", nil)) // a JSON-RPC error, as a *supervaizer.Error
		fmt.Println(supervaizer.CodeOf(err) == errcode.ActionNotRegistered)

		ts.APIKey = "wrong-key" // refused before JSON-RPC applies
		_, err = ts.Invoke(t.Context(), req)
		var httpErr *svtest.HTTPError
		if errors.As(err, &httpErr) {
			fmt.Println(httpErr.StatusCode)
		}
	})
	// Output:
	// ok job.started [setup-7f3c]
	// true
	// 401
}

func ExampleTestServer_LoadSurface() {
	runExample(func(t testing.TB) {
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{surfaceExampleAgent()})
		res, err := ts.LoadSurface(t.Context(), ts.SurfaceRequest("dashboard"))
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		fmt.Println(res.Surface, *res.A2UICatalogVersion, string(res.Document))

		_, err = ts.LoadSurface(t.Context(), ts.SurfaceRequest("settings"))
		fmt.Println(supervaizer.CodeOf(err) == errcode.SurfaceNotRegistered)
	})
	// Output:
	// dashboard 1.0.0 {"title":"Sources","type":"Configurator"}
	// true
}

func ExampleTestServer_Call() {
	runExample(func(t testing.TB) {
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{exampleAgent()})
		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})
		req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
		params := map[string]any{"action_request": req}
		body, err := ts.Call(t.Context(), supervaizer.MethodActionInvoke, params, ts.Studio.TokenForAction(req))
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		fmt.Println(string(body))

		body, err = ts.Call(t.Context(), "supervaizer/nope", nil, "") // JSON-RPC errors are in the body
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		fmt.Println(string(body))
	})
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"status":"ok","effects":[{"type":"job.started","job_id":"job-77","data":{"topic_id":"battery-market"}}],"replay_safety":{"dedupe_keys":["setup-7f3c"],"stable_external_ids_required":true,"strictly_idempotent_response":true,"convergent":true}}}
	// {"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found: supervaizer/nope"}}
}
