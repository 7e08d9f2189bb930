package testing

import (
	"context"
	"errors"
	"fmt"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/store"
)

// errNoTwin is returned by newTwin for a TestServer of [Connect]: the
// handler runs in another process.
var errNoTwin = errors.New("the controller runs in another process (Connect): no twin server can serve its agents")

// twinServer is a server serving the same agents as a TestServer, with the
// same options, on an empty store: what a controller is after its
// idempotency records were lost. A call to it reaches the agent's handler
// even when the TestServer's idempotency layer would answer from its
// record. It is built from the public API only (supervaizer.NewServer) and
// is never started, registered or served over the network.
type twinServer struct {
	*TestServer
	mem *store.Memory
}

// newTwin builds the twin of ts: ts's agents, the test defaults
// (no environment, ts's API key, the workspace-authorization settings of
// ts.Studio), the options the caller gave ts, then a fresh in-memory store
// and neither a shared backend, nor a Studio attachment, nor an observer, so
// that the twin shares no state with ts and is invisible to its figures.
func (ts *TestServer) newTwin() (*twinServer, error) {
	if ts.Server == nil || len(ts.agents) == 0 {
		return nil, errNoTwin
	}
	serverID := ts.Studio.ServerID() // the server id the tokens ts.Studio mints are bound to
	mem := store.NewMemory()
	opts := append([]supervaizer.Option{
		supervaizer.WithEnv(func(string) string { return "" }),
		supervaizer.WithAPIKey(ts.APIKey, supervaizer.ScopeWrite),
		supervaizer.WithServerID(serverID),
		supervaizer.WithWorkspaceAuth(ts.Studio.Settings(serverID)),
	}, ts.opts...)
	opts = append(opts,
		supervaizer.WithStore(mem),
		supervaizer.WithBackend(nil),
		supervaizer.WithStudio(nil),
		supervaizer.WithObserver(nil),
	)
	srv, err := supervaizer.NewServer(ts.agents, opts...)
	if err != nil {
		_ = mem.Close()
		return nil, fmt.Errorf("build the twin server: %w", err)
	}
	return &twinServer{
		TestServer: &TestServer{Server: srv, Studio: ts.Studio, APIKey: ts.APIKey, t: ts.t, agentSlug: ts.agentSlug},
		mem:        mem,
	}, nil
}

// close shuts the twin down (the agents go back to ts's server, see
// checkpoint.Runtime.Attach) and closes its store.
func (tw *twinServer) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return errors.Join(tw.Server.Shutdown(ctx), tw.mem.Close())
}
