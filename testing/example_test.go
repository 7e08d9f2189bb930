package testing_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/errcode"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// exampleT stands in for the *testing.T of a test, which Examples do not
// have. It implements the methods the kit calls.
type exampleT struct {
	testing.TB // nil: any other method panics
	cleanups   []func()
}

func (t *exampleT) Helper()                  {}
func (t *exampleT) Cleanup(f func())         { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Context() context.Context { return context.Background() }
func (t *exampleT) Errorf(format string, args ...any) {
	fmt.Printf("FAIL: "+format+"\n", args...)
}
func (t *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleT) Logf(string, ...any)               {}

// runExample runs f like a test body, then its cleanups.
func runExample(f func(t testing.TB)) {
	t := &exampleT{}
	defer func() {
		for i := len(t.cleanups) - 1; i >= 0; i-- {
			t.cleanups[i]()
		}
	}()
	f(t)
}

// StartInput is the input of the example agent's job.start.
type StartInput struct {
	TopicID string `json:"topic_id"`
}

// exampleAgent is a research agent with one typed job.start handler.
func exampleAgent() *supervaizer.Agent {
	reg := supervaizer.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research Agent", A2UICatalogVersion: "1.0.0",
		Actions: supervaizer.Actions("job.start"),
	}
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: reg})
	if err != nil {
		panic(err)
	}
	supervaizer.HandleActionFor(agent, "job.start",
		func(ctx context.Context, req *supervaizer.ActionRequest, in StartInput) (*supervaizer.ActionResult, error) {
			return supervaizer.OK(supervaizer.JobStarted(req.JobID, map[string]any{"topic_id": in.TopicID})), nil
		})
	return agent
}

func ExampleNewTestServer() {
	runExample(func(t testing.TB) { // in a test: func TestStart(t *testing.T) {
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{exampleAgent()})
		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})
		req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
		res, err := ts.Invoke(t.Context(), req)
		if err != nil {
			t.Fatalf("invoke: %v", err)
		}
		fmt.Println(res.Status, res.Effects[0].Type, res.Effects[0].JobID)

		_, err = ts.Invoke(t.Context(), ts.Request("job.start", map[string]any{}))
		fmt.Println(supervaizer.CodeOf(err) == errcode.InvalidParams)
	})
	// Output:
	// ok job.started job-77
	// true
}

func ExampleAssertConfirmIdempotent() {
	runExample(func(t testing.TB) { // in a test: func TestStartIsIdempotent(t *testing.T) {
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{exampleAgent()})
		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})
		req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
		ok := svtest.AssertConfirmIdempotent(t, ts, req,
			svtest.RecommendedChecks(StartInput{TopicID: "another-topic"}))
		fmt.Println(ok)
	})
	// Output: true
}

func ExampleFakeStudio_ActionClaims() {
	runExample(func(t testing.TB) {
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{exampleAgent()})
		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})

		c := ts.Studio.ActionClaims(req) // a valid token for this call...
		c.ExpiresAt = time.Now().Add(-time.Hour)
		expired := ts.Studio.Mint(c) // ...that expired an hour ago

		_, err := ts.InvokeWithToken(t.Context(), req, expired)
		fmt.Println(supervaizer.CodeOf(err), svtest.AuthCode(err))
	})
	// Output: -32030 workspace_authorization_expired
}

func ExampleGolden() {
	runExample(func(t testing.TB) {
		ts := svtest.NewTestServer(t, []*supervaizer.Agent{exampleAgent()})
		req := ts.Request("job.start", StartInput{TopicID: "battery-market"})
		req.IdempotencyKey, req.JobID = "setup-7f3c", "job-77"
		raw, err := ts.InvokeRaw(t.Context(), req)
		if err != nil {
			t.Fatalf("invoke: %v", err)
		}
		fmt.Println(string(raw))
		// In a test: svtest.Golden(t, filepath.Join("testdata", "start.golden.json"), raw)
	})
	// Output: {"status":"ok","effects":[{"type":"job.started","job_id":"job-77","data":{"topic_id":"battery-market"}}],"replay_safety":{"dedupe_keys":["setup-7f3c"],"stable_external_ids_required":true,"strictly_idempotent_response":true,"convergent":true}}
}
