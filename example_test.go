package supervaizer_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
)

// exampleServer serves a research agent in local mode (API key "local-dev",
// workspace authorization bypassed), isolated from the environment.
func exampleServer() *supervaizer.Server {
	reg := supervaizer.RegistrationSpec{
		AgentSlug:          "research-agent",
		DisplayName:        "Research",
		A2UICatalogVersion: "research-catalog/1",
		Surfaces:           supervaizer.Surfaces("job.start"),
		Actions:            supervaizer.Actions("job.start"),
	}
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{
		Name: "Research Agent", Version: "1.0.0", Description: "Turns a question into a sourced brief.",
		Registration: reg,
	})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{agent},
		supervaizer.WithLocalMode(true),
		supervaizer.WithServerID("example-server"),
		supervaizer.WithEnv(func(string) string { return "" }),
	)
	if err != nil {
		log.Fatal(err)
	}
	return srv
}

// exampleCall posts a JSON-RPC call to srv as Studio would and prints the response.
func exampleCall(srv *supervaizer.Server, method, params string) {
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	r := httptest.NewRequest(http.MethodPost, "http://localhost/a2a", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(supervaizer.HeaderAPIKey, supervaizer.LocalModeAPIKey)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Body.String())
}

func ExampleNewServer() {
	srv := exampleServer() // BuildRegistration, NewAgent, NewServer
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://localhost:8080/.well-known/agents.json", nil))
	fmt.Println(w.Code, w.Body.String())
	// Output:
	// 200 {"schema_version":"a2a_2023_v1","agents":[{"name":"Research Agent","description":"Turns a question into a sourced brief.","developer":"Supervaize","version":"1.0.0","agent_card_url":"http://localhost:8080/.well-known/agents/v1.0.0/research-agent_agent.json"}]}
}

func ExampleHandleActionFor() {
	srv := exampleServer()
	type startInput struct {
		TopicID string `json:"topic_id"`
	}
	supervaizer.HandleActionFor(srv, "job.start",
		func(ctx context.Context, req *supervaizer.ActionRequest, in startInput) (*supervaizer.ActionResult, error) {
			ws, _ := supervaizer.WorkspaceFrom(ctx) // the local-mode context here
			return supervaizer.OK(supervaizer.JobStarted(req.JobID,
				map[string]any{"topic_id": in.TopicID, "grant_id": ws.GrantID})), nil
		})
	request := `{"request_id":"r-7","actor":{"user_id":"u-1"},"workspace":{"id":"w-1"},"mission_id":"m-1",
		"agent_slug":"research-agent","surface":"job.start","action":"job.start","job_id":"j-1"`
	exampleCall(srv, supervaizer.MethodActionInvoke, request+`,"input":{"topic_id":"battery-market"}}`)
	exampleCall(srv, supervaizer.MethodActionInvoke, request+`,"input":{"topic":"battery-market"}}`)
	// Output:
	// 200 {"jsonrpc":"2.0","id":1,"result":{"status":"ok","effects":[{"type":"job.started","job_id":"j-1","data":{"grant_id":"local-mode","topic_id":"battery-market"}}]}}
	// 200 {"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid Supervaizer v2 action request","data":{"errors":[{"loc":["input"],"msg":"unknown properties: topic","type":"additionalProperties","path":"/input"},{"loc":["input","topic_id"],"msg":"missing property","type":"required","path":"/input/topic_id"}]}}}
}

func ExampleServer_HandleSurface() {
	srv := exampleServer()
	srv.HandleSurface("job.start", func(ctx context.Context, req *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
		return supervaizer.NewSurfaceResult(ctx, req.Surface, map[string]any{
			"type":   "Form",
			"fields": []any{map[string]any{"id": "topic_id", "label": "Topic", "type": "string", "required": true}},
			"submit": map[string]any{"action": "job.start", "label": "Start"},
		})
	})
	exampleCall(srv, supervaizer.MethodSurfaceLoad, `{"surface_request":{"request_id":"r-8","actor":{"user_id":"u-1"},
		"workspace":{"id":"w-1"},"mission_id":"m-1","agent_slug":"research-agent","surface":"job.start"}}`)
	// Output:
	// 200 {"jsonrpc":"2.0","id":1,"result":{"surface":"job.start","a2ui_version":"v0.8","a2ui_catalog_version":"research-catalog/1","document":{"fields":[{"id":"topic_id","label":"Topic","required":true,"type":"string"}],"submit":{"action":"job.start","label":"Start"},"type":"Form"}}}
}

func ExampleNewSurfaceResult() {
	// Outside a handler there is no agent in ctx: the A2UI versions stay null.
	res, err := supervaizer.NewSurfaceResult(context.Background(), "mission.agent.dashboard",
		map[string]any{"type": "Dashboard", "title": "Overview"})
	if err != nil {
		log.Fatal(err)
	}
	b, err := contracts.Marshal(res)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))
	// Output:
	// {"surface":"mission.agent.dashboard","a2ui_version":null,"a2ui_catalog_version":null,"document":{"title":"Overview","type":"Dashboard"}}
}

func ExampleOK() {
	n := 2
	res := supervaizer.OK(
		supervaizer.JobStarted("job-77", map[string]any{"topic_id": "battery-market"}),
		supervaizer.Effect{Type: "dataset.queried", Dataset: "sources", Count: &n},
	)
	b, err := contracts.Marshal(res)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))
	// Output:
	// {"status":"ok","effects":[{"type":"job.started","job_id":"job-77","data":{"topic_id":"battery-market"}},{"type":"dataset.queried","dataset":"sources","count":2}]}
}

func ExampleFail() {
	res := supervaizer.Fail(contracts.ErrorIdempotencyConflict, "job %s was started with other input", "job-77")
	b, err := contracts.Marshal(res)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))
	// Output:
	// {"status":"error","effects":[],"errors":[{"code":"idempotency_conflict","message":"job job-77 was started with other input"}]}
}
