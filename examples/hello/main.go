// Command hello is the smallest complete Supervaizer agent: one action with a
// typed input (job.start) and the surface that starts it. Run it with no
// configuration at all; it prints how to call it:
//
//	go run ./examples/hello
package main

import (
	"context"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
)

// StartInput is job.start's input, checked before the handler runs (-32602 otherwise).
type StartInput struct {
	Name string `json:"name" sv:"nonblank"`
}

// newServer builds the agent; its handlers declare its surfaces and actions.
func newServer() (*sv.Server, error) {
	// Local mode: no Studio, the development API key. Remove it to deploy (docs/deploying.md).
	srv, err := sv.New(sv.AgentSpec{Name: "Hello Agent", Version: "1.0.0"}, sv.WithLocalMode(true))
	if err != nil {
		return nil, err
	}
	srv.HandleSurface("job.start", sv.StaticSurface(a2ui.NewForm("hello.start", "Say hello", "job.start",
		a2ui.StringField("name", "Name", a2ui.Required()))))
	sv.HandleActionFor(srv, "job.start", func(ctx context.Context, req *sv.ActionRequest, in StartInput) (*sv.ActionResult, error) {
		return sv.OK(sv.JobStarted(req.JobID, map[string]any{"greeting": "Hello, " + in.Name})), nil // the same answer every time
	})
	return srv, nil
}

func main() {
	srv, err := newServer()
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", srv.NewHTTPServer().Addr) // SUPERVAIZER_ADDR, default 127.0.0.1:8080
	if err != nil {
		log.Fatal(err)
	}
	log.Print(`try: curl -s ` + ln.Addr().String() + `/a2a -H 'X-API-Key: local-dev' -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":1,` +
		`"method":"supervaizer/action.invoke","params":{"action_request":{"request_id":"r1","actor":{"user_id":"me"},` +
		`"workspace":{"id":"ws-1"},"mission_id":"m1","agent_slug":"hello-agent","surface":"job.start",` +
		`"action":"job.start","job_id":"job-1","idempotency_key":"k1","input":{"name":"Ada"}}}}'`)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.Serve(ctx, ln); err != nil {
		log.Fatal(err)
	}
}
