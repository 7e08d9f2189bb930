package observe_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/observe"
)

// callLogger prints each call: it is an interceptor (supervaizer.Interceptor)
// and an observer whose hooks are observe.Nop's, so that WithObserver
// installs both.
type callLogger struct{ observe.Nop }

func (callLogger) WrapUnary(next supervaizer.UnaryFunc) supervaizer.UnaryFunc {
	return func(ctx context.Context, c *supervaizer.Call) {
		next(ctx, c)
		fmt.Printf("%s %s %s code=%d idempotency=%q\n", c.Method, c.AgentSlug, c.Name, c.Code, c.Idempotency)
	}
}

func (callLogger) WrapStream(next supervaizer.StreamFunc) supervaizer.StreamFunc { return next }

func (callLogger) WrapHandler(next supervaizer.HandlerFunc) supervaizer.HandlerFunc { return next }

func Example() {
	reg := supervaizer.RegistrationSpec{
		AgentSlug: "research-agent", DisplayName: "Research", A2UICatalogVersion: "research-catalog/1",
		Surfaces: supervaizer.Surfaces("job.start"), Actions: supervaizer.Actions("job.start"),
	}
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Research Agent", Version: "1.0.0", Registration: reg})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{agent}, supervaizer.WithLocalMode(true),
		supervaizer.WithServerID("example-server"), supervaizer.WithEnv(func(string) string { return "" }),
		supervaizer.WithObserver(callLogger{}))
	if err != nil {
		log.Fatal(err)
	}
	agent.HandleAction("job.start", func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(supervaizer.JobStarted(req.JobID, nil)), nil
	})
	params := `{"request_id":"r-7","actor":{"user_id":"u-1"},"workspace":{"id":"w-1"},"mission_id":"m-1",
		"agent_slug":"research-agent","surface":"job.start","action":"job.start","job_id":"j-1","idempotency_key":"k-1"}`
	for range 2 { // the second call is replayed from the idempotency record
		body := `{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":` + params + `}`
		r := httptest.NewRequest(http.MethodPost, "http://localhost/a2a", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(supervaizer.HeaderAPIKey, supervaizer.LocalModeAPIKey)
		srv.ServeHTTP(httptest.NewRecorder(), r)
	}
	// Output:
	// supervaizer/action.invoke research-agent job.start code=0 idempotency="ran"
	// supervaizer/action.invoke research-agent job.start code=0 idempotency="replayed"
}
