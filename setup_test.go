package supervaizer_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
)

// goroutines counts the goroutines once those that earlier tests left ending
// are gone: the count no longer changes for a few milliseconds.
func goroutines() int {
	n := runtime.NumGoroutine()
	for range 100 {
		time.Sleep(5 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return n
		}
		n = m
	}
	return n
}

// TestNewServerStartsNoGoroutine: building a Server starts nothing, so one
// built and dropped leaves nothing running; its background work (following
// a backend's event log) starts when it starts or first serves, and stops
// at Shutdown; a Server shut down before it served never starts it.
func TestNewServerStartsNoGoroutine(t *testing.T) {
	tests := []struct {
		name    string
		opts    []sv.Option
		serving int // goroutines while it serves
		first   func(*sv.Server)
	}{
		{name: "local mode", opts: []sv.Option{sv.WithLocalMode(true)}},
		{name: "not local, memory store", opts: []sv.Option{sv.WithAPIKey("k", sv.ScopeWrite)}},
		{name: "backend, first served", opts: []sv.Option{sv.WithLocalMode(true), sv.WithBackend(newMemBackend())}, serving: 1,
			first: func(srv *sv.Server) {
				srv.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, sv.ReadinessPath, nil))
			}},
		{name: "backend, started", opts: []sv.Option{sv.WithLocalMode(true), sv.WithBackend(newMemBackend())}, serving: 1,
			first: func(srv *sv.Server) { _ = srv.Start(context.Background()) }},
		{name: "backend, shut down before serving", opts: []sv.Option{sv.WithLocalMode(true), sv.WithBackend(newMemBackend())},
			first: func(srv *sv.Server) {
				_ = srv.Shutdown(context.Background())
				srv.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, sv.ReadinessPath, nil))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]sv.Option{sv.WithEnv(emptyEnv), sv.WithServerID(testServerID),
				sv.WithLogger(slog.New(slog.DiscardHandler))}, tt.opts...)
			before := goroutines()
			srv, err := sv.NewServer([]*sv.Agent{newTestAgent(t, "Research Agent")}, opts...)
			require.NoError(t, err)
			assert.Equal(t, before, goroutines(), "NewServer started a goroutine")
			if tt.first == nil {
				return // dropped
			}
			tt.first(srv)
			assert.Equal(t, before+tt.serving, goroutines(), "while serving")
			require.NoError(t, srv.Shutdown(t.Context()))
			assert.Equal(t, before, goroutines(), "after Shutdown")
		})
	}
}

// TestSetupErrorsAreNeverAnswered: what a registration still lacks once the
// server serves (a scheduled start without a job.start handler, an action
// made idempotent that no handler declared) is an error of Start and of
// ListenAndServe; a server mounted as a plain http.Handler logs it and serves
// the registration as declared, never a 500.
func TestSetupErrorsAreNeverAnswered(t *testing.T) {
	tests := []struct {
		name     string
		reg      sv.RegistrationSpec
		setup    func(*sv.Server)
		err      string
		declared []string // the actions of the card's registration
	}{
		{name: "scheduled start without job.start", reg: sv.RegistrationSpec{ScheduledStart: true},
			setup:    func(srv *sv.Server) { srv.HandleAction("job.stop", okAction) },
			err:      `supervaizer: agent "hello-agent": AgentSpec.Registration: /scheduled_start: scheduled_start requires the action "job.start": no handler was registered for it`,
			declared: []string{"job.start", "job.stop"}},
		{name: "idempotent action without a handler",
			setup: func(srv *sv.Server) {
				a, _ := srv.Agent("hello-agent")
				a.Idempotent("contact.sync")
				srv.HandleAction("job.start", okAction)
			},
			err:      `supervaizer: agent "hello-agent": Idempotent("contact.sync"): the action is not declared: no handler was registered for it`,
			declared: []string{"job.start"}},
	}
	for _, tt := range tests {
		for _, served := range []string{"Start", "ListenAndServe", "http.Handler"} {
			t.Run(tt.name+"/"+served, func(t *testing.T) {
				var logs proctest.Buffer
				srv, err := sv.New(sv.AgentSpec{Name: "Hello Agent", Version: "1.0.0", Registration: tt.reg},
					sv.WithLocalMode(true), sv.WithEnv(emptyEnv), sv.WithAddr("127.0.0.1:0"),
					sv.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
				require.NoError(t, err)
				tt.setup(srv)
				switch served {
				case "Start":
					require.EqualError(t, srv.Start(t.Context()), tt.err)
				case "ListenAndServe":
					require.ErrorContains(t, srv.ListenAndServe(t.Context()), tt.err)
				default:
					hs := httptest.NewServer(srv)
					defer hs.Close()
					res, err := http.Get(hs.URL + a2a.CardPath("hello-agent"))
					require.NoError(t, err)
					defer res.Body.Close()
					assert.Equal(t, http.StatusOK, res.StatusCode)
					a, _ := srv.Agent("hello-agent")
					var ids []string
					for _, d := range a.Registration().Capabilities.Actions {
						ids = append(ids, d.ID)
					}
					assert.Equal(t, tt.declared, ids)
					assert.Contains(t, logs.String(), "the registration is incomplete")
					require.EqualError(t, srv.Start(t.Context()), tt.err, "Start still reports it")
					require.NoError(t, srv.Shutdown(t.Context()))
				}
			})
		}
	}
}

// TestEachHandlerIsDeclaredWhenRegistered: on an agent whose handlers declare
// its surfaces and actions, each registration call builds and validates the
// registration it declares, so the registration is current before the server
// serves and sealing has nothing left to refuse.
func TestEachHandlerIsDeclaredWhenRegistered(t *testing.T) {
	agent, err := sv.NewAgent(sv.AgentSpec{Name: "Hello Agent", Version: "1.0.0"})
	require.NoError(t, err)
	assert.Nil(t, agent.Registration(), "no handler: no registration")
	steps := []struct {
		register func()
		surfaces []string
		actions  []string
	}{
		{func() { agent.HandleAction("job.start", okAction) }, []string{}, []string{"job.start"}},
		{func() { agent.HandleSurface("job.start", sv.StaticSurface(startForm)) }, []string{"job.start"}, []string{"job.start"}},
		{func() { agent.HandleAction("job.stop", okAction) }, []string{"job.start"}, []string{"job.start", "job.stop"}},
	}
	for i, st := range steps {
		st.register()
		reg := agent.Registration()
		require.NotNil(t, reg, "step %d", i)
		var ids []string
		for _, d := range reg.Capabilities.Actions {
			ids = append(ids, d.ID)
		}
		assert.Equal(t, st.surfaces, reg.Capabilities.Surfaces, "step %d", i)
		assert.Equal(t, st.actions, ids, "step %d", i)
		assert.Contains(t, string(agent.RegistrationJSON()), `"job.start"`, "step %d", i)
	}
}
