package supervaizer_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	"github.com/supervaize/supervaizer-go/studio"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// startupLogs builds a server for the test agent with opts, runs Start and
// returns everything it logged and its error.
func startupLogs(t *testing.T, opts ...supervaizer.Option) (*supervaizer.Server, string, error) {
	t.Helper()
	var logs proctest.Buffer
	all := append([]supervaizer.Option{supervaizer.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))}, opts...)
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{newTestAgent(t, "Research Agent")}, all...)
	require.NoError(t, err)
	err = srv.Start(context.Background())
	return srv, logs.String(), err
}

func TestStartupExplainsItself(t *testing.T) {
	const envKey = "env-controller-key-0123456789"
	studioAgentID := svtest.DefaultStudioAgentID("research-agent")
	for _, tc := range []struct {
		name     string
		env      map[string]string
		opts     []supervaizer.Option
		mode     supervaizer.Mode
		want     []string // substrings of the log
		wantNot  []string
		wantFail []string // substrings of Start's error
	}{{
		name: "local mode prints the development key and says tokens are not verified",
		env:  map[string]string{"SUPERVAIZER_LOCAL_MODE": "true"},
		mode: supervaizer.ModeLocal,
		want: []string{`mode=local`, `api_key=local-dev`, `source="local-mode default"`, `workspace tokens are not verified`},
		// The preview's URL is logged once the address is known, absolute
		// (TestStartupLogsThePreviewURLOnce).
		wantNot: []string{"SUPERVAIZER_PUBLIC_URL", "mode=attached", `url=/_preview/`},
	}, {
		name:    "local mode with verified tokens does not claim a bypass",
		env:     map[string]string{"SUPERVAIZER_LOCAL_MODE": "true", "SUPERVAIZER_STUDIO_AGENT_ID": studioAgentID},
		opts:    []supervaizer.Option{supervaizer.WithWorkspaceAuth(testWorkspaceAuth(svtest.NewFakeStudio(t)))},
		mode:    supervaizer.ModeLocal,
		want:    []string{`mode=local`, `workspace tokens are verified`, `issuer=` + testIssuer, `key_source=SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY`},
		wantNot: []string{"not verified", "bypass", "BYPASS"},
	}, {
		name: "standalone is not called attached",
		env:  map[string]string{"SUPERVAIZER_API_KEY": envKey, "SUPERVAIZER_STUDIO_AGENT_ID": studioAgentID},
		opts: []supervaizer.Option{supervaizer.WithWorkspaceAuth(testWorkspaceAuth(svtest.NewFakeStudio(t)))},
		mode: supervaizer.ModeStandalone,
		want: []string{`mode=standalone`, `api_key_fingerprint=` + studio.KeyFingerprint(envKey), `source=SUPERVAIZER_API_KEY`,
			`not configured: no public URL`, `fix="set SUPERVAIZER_PUBLIC_URL"`,
			// Standalone is what this configuration says: info, not a warning.
			`level=INFO msg="standalone: not attached to Studio`, `to_attach="set SUPERVAIZE_API_URL, SUPERVAIZE_API_KEY and SUPERVAIZE_WORKSPACE_ID"`},
		wantNot: []string{envKey, "attached to Studio\"", "not verified", "local preview", "level=WARN msg=\"not configured: not attached"},
	}, {
		name: "a generated key is never printed and the fix is named",
		env:  map[string]string{"SUPERVAIZER_STUDIO_AGENT_ID": studioAgentID},
		opts: []supervaizer.Option{supervaizer.WithWorkspaceAuth(testWorkspaceAuth(svtest.NewFakeStudio(t)))},
		mode: supervaizer.ModeStandalone,
		want: []string{`source=generated`, `fix="set SUPERVAIZER_API_KEY"`},
	}, {
		name: "an option key is reported as such",
		env:  map[string]string{"SUPERVAIZER_STUDIO_AGENT_ID": studioAgentID},
		opts: []supervaizer.Option{supervaizer.WithWorkspaceAuth(testWorkspaceAuth(svtest.NewFakeStudio(t))), supervaizer.WithAPIKey(envKey, supervaizer.ScopeWrite)},
		mode: supervaizer.ModeStandalone,
		want: []string{`source=WithAPIKey`}, wantNot: []string{envKey},
	}, {
		name:     "nothing configured is refused",
		mode:     supervaizer.ModeStandalone,
		wantFail: []string{"can never authorize a call", "SUPERVAIZER_LOCAL_MODE", "SUPERVAIZER_WORKSPACE_AUTH_"},
	}, {
		name:     "local mode with incomplete token settings is refused",
		env:      map[string]string{"SUPERVAIZER_LOCAL_MODE": "true", "SUPERVAIZER_WORKSPACE_AUTH_ISSUER": "https://studio.example"},
		mode:     supervaizer.ModeLocal,
		wantFail: []string{"SUPERVAIZER_WORKSPACE_AUTH_REQUIRED", "SUPERVAIZER_LOCAL_MODE", "SUPERVAIZER_WORKSPACE_AUTH_"},
	}, {
		// Spec item 70: tokens name the Studio agent id, which only the
		// handshake or the configuration gives.
		name:     "standalone verifying tokens without the Studio agent id is refused",
		env:      map[string]string{"SUPERVAIZER_API_KEY": envKey},
		opts:     []supervaizer.Option{supervaizer.WithWorkspaceAuth(testWorkspaceAuth(svtest.NewFakeStudio(t)))},
		mode:     supervaizer.ModeStandalone,
		wantFail: []string{"can never authorize a call to agent research-agent", "SUPERVAIZER_STUDIO_AGENT_ID", "AgentSpec.StudioAgentID", "SUPERVAIZE_API_URL", "SUPERVAIZE_API_KEY", "SUPERVAIZE_WORKSPACE_ID"},
	}, {
		name:     "local mode verifying tokens without the Studio agent id is refused",
		env:      map[string]string{"SUPERVAIZER_LOCAL_MODE": "true"},
		opts:     []supervaizer.Option{supervaizer.WithWorkspaceAuth(testWorkspaceAuth(svtest.NewFakeStudio(t)))},
		mode:     supervaizer.ModeLocal,
		wantFail: []string{"SUPERVAIZER_STUDIO_AGENT_ID", "SUPERVAIZE_API_URL"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, logs, err := startupLogs(t, append([]supervaizer.Option{supervaizer.WithEnv(envOf(tc.env))}, tc.opts...)...)
			assert.Equal(t, tc.mode, srv.Mode())
			if len(tc.wantFail) > 0 {
				require.Error(t, err)
				for _, w := range tc.wantFail {
					assert.Contains(t, err.Error(), w)
				}
				assert.NotContains(t, logs, "controller ready")
				return
			}
			require.NoError(t, err)
			assert.Contains(t, logs, "controller ready")
			for _, w := range tc.want {
				assert.Contains(t, logs, w)
			}
			for _, w := range tc.wantNot {
				assert.NotContains(t, logs, w)
			}
			if tc.mode != supervaizer.ModeLocal {
				assert.NotContains(t, logs, srv.APIKey(), "only the local-mode development key is printed")
			}
		})
	}
}

func TestStartupAttachedMode(t *testing.T) {
	var logs proctest.Buffer
	agent := newTestAgent(t, "Research Agent")
	ts := svtest.NewAttachedTestServer(t, []*supervaizer.Agent{agent},
		supervaizer.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	assert.Equal(t, supervaizer.ModeAttached, ts.Server.Mode())
	out := logs.String()
	assert.Contains(t, out, `mode="attached to Studio"`)
	assert.Contains(t, out, `workspace tokens are verified`)
	assert.NotContains(t, out, "not configured: not attached")
	assert.NotContains(t, out, svtest.DefaultAPIKey)
}

func TestStartupWarnsMissingHandlers(t *testing.T) {
	srv, logs, err := startupLogs(t, supervaizer.WithEnv(envOf(map[string]string{"SUPERVAIZER_LOCAL_MODE": "true"})))
	require.NoError(t, err)
	line := ""
	for l := range strings.Lines(logs) {
		if strings.Contains(l, "no handler registered") {
			line = l
		}
	}
	require.NotEmpty(t, line, logs)
	assert.Contains(t, line, "agent_slug=research-agent")
	assert.Contains(t, line, "job.start", "declared actions without a handler are listed")
	assert.Contains(t, line, "surface.unhandled", "declared surfaces without a handler are listed")
	assert.Equal(t, 1, strings.Count(logs, "no handler registered"), "warned once")
	require.NoError(t, srv.Start(context.Background()))
}

// TestStartupLogsToDefaultLogger: without WithLogger the SDK logs to
// slog.Default (not run in parallel: it swaps the process default).
func TestStartupLogsToDefaultLogger(t *testing.T) {
	var logs proctest.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{newTestAgent(t, "Research Agent")},
		supervaizer.WithEnv(envOf(map[string]string{"SUPERVAIZER_LOCAL_MODE": "true"})))
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	assert.Contains(t, logs.String(), "controller ready")
	assert.Contains(t, logs.String(), "api_key=local-dev")
}

// TestStandaloneStudioAgentID: a standalone controller verifying workspace
// tokens takes the Studio agent id of its agents from AgentSpec.StudioAgentID
// or, for a single agent, SUPERVAIZER_STUDIO_AGENT_ID (spec item 70).
func TestStandaloneStudioAgentID(t *testing.T) {
	agent := func(t *testing.T, name, studioID string) *supervaizer.Agent {
		a, err := supervaizer.NewAgent(supervaizer.AgentSpec{
			Name: name, Version: testAgentVersion, Registration: testRegistrationSpec(strings.ToLower(strings.ReplaceAll(name, " ", "-"))),
			StudioAgentID: studioID,
		})
		require.NoError(t, err)
		return a
	}
	for _, tc := range []struct {
		name       string
		agents     func(t *testing.T) []*supervaizer.Agent
		env        map[string]string
		wantIDs    []string // each agent's Studio agent id after Start
		newFails   []string // substrings of NewServer's error
		startFails []string // substrings of Start's error
	}{{
		name:    "the variable, one agent",
		agents:  func(t *testing.T) []*supervaizer.Agent { return []*supervaizer.Agent{agent(t, "Research Agent", "")} },
		env:     map[string]string{"SUPERVAIZER_STUDIO_AGENT_ID": " ag-1 "},
		wantIDs: []string{"ag-1"},
	}, {
		name: "the spec field, each agent",
		agents: func(t *testing.T) []*supervaizer.Agent {
			return []*supervaizer.Agent{agent(t, "Research Agent", "ag-1"), agent(t, "Other Agent", "ag-2")}
		},
		wantIDs: []string{"ag-1", "ag-2"},
	}, {
		name: "the variable agreeing with the spec field",
		agents: func(t *testing.T) []*supervaizer.Agent {
			return []*supervaizer.Agent{agent(t, "Research Agent", "ag-1")}
		},
		env:     map[string]string{"SUPERVAIZER_STUDIO_AGENT_ID": "ag-1"},
		wantIDs: []string{"ag-1"},
	}, {
		name: "the variable with several agents",
		agents: func(t *testing.T) []*supervaizer.Agent {
			return []*supervaizer.Agent{agent(t, "Research Agent", ""), agent(t, "Other Agent", "")}
		},
		env:      map[string]string{"SUPERVAIZER_STUDIO_AGENT_ID": "ag-1"},
		newFails: []string{"SUPERVAIZER_STUDIO_AGENT_ID", "serves 2 agents", "AgentSpec.StudioAgentID"},
	}, {
		name: "the variable contradicting the spec field",
		agents: func(t *testing.T) []*supervaizer.Agent {
			return []*supervaizer.Agent{agent(t, "Research Agent", "ag-1")}
		},
		env:      map[string]string{"SUPERVAIZER_STUDIO_AGENT_ID": "ag-9"},
		newFails: []string{"SUPERVAIZER_STUDIO_AGENT_ID", "agent id mismatch"},
	}, {
		name: "one agent of two without an id",
		agents: func(t *testing.T) []*supervaizer.Agent {
			return []*supervaizer.Agent{agent(t, "Research Agent", "ag-1"), agent(t, "Other Agent", "")}
		},
		startFails: []string{"can never authorize a call to agent other-agent", "SUPERVAIZER_STUDIO_AGENT_ID"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			agents := tc.agents(t)
			srv, err := supervaizer.NewServer(agents, supervaizer.WithEnv(envOf(tc.env)),
				supervaizer.WithWorkspaceAuth(testWorkspaceAuth(svtest.NewFakeStudio(t))), supervaizer.WithLogger(slog.New(slog.DiscardHandler)))
			if len(tc.newFails) > 0 {
				require.Error(t, err)
				for _, w := range tc.newFails {
					assert.Contains(t, err.Error(), w)
				}
				return
			}
			require.NoError(t, err)
			err = srv.Start(t.Context())
			if len(tc.startFails) > 0 {
				require.Error(t, err)
				for _, w := range tc.startFails {
					assert.Contains(t, err.Error(), w)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, supervaizer.ModeStandalone, srv.Mode())
			for i, a := range agents {
				id, ok := a.StudioAgentID()
				assert.True(t, ok)
				assert.Equal(t, tc.wantIDs[i], id)
			}
		})
	}
}

// TestStartupWarnsMisnamedProtocolActions: an action named as a
// protocol-defined one that the job policy does not make what its name says
// (job.sync without job_policy.sync: a plain mutating action Studio never
// calls to sync a job) is a startup warning naming the fix (issue 29).
func TestStartupWarnsMisnamedProtocolActions(t *testing.T) {
	ok := func(_ context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(), nil
	}
	for _, tc := range []struct {
		name    string
		reg     supervaizer.RegistrationSpec
		handled []string // actions given a handler
		warned  []string // actions warned about
	}{{
		name:    "a job.sync handler without job_policy.sync",
		handled: []string{"job.sync"},
		warned:  []string{"job.sync"},
	}, {
		name:    "a job.sync handler with job_policy.sync",
		reg:     supervaizer.RegistrationSpec{JobPolicy: &contracts.JobPolicy{Sync: &contracts.JobSyncPolicy{}}},
		handled: []string{"job.sync"},
	}, {
		name:    "job.sync declared while job_policy.sync names another action",
		reg:     supervaizer.RegistrationSpec{Actions: supervaizer.Actions("job.sync"), JobPolicy: &contracts.JobPolicy{Sync: &contracts.JobSyncPolicy{Action: "job.refresh"}}},
		handled: []string{"job.sync", "job.refresh"},
		warned:  []string{"job.sync"},
	}, {
		name:    "the setup actions without job_policy.setup",
		handled: []string{"job.start.preview", "step.awaiting.submit", "job.start"},
		warned:  []string{"job.start.preview"},
	}, {
		// The docs' review step (concepts.md, getting-started.md's smaller
		// agent): an awaiting step names step.awaiting.submit, which is
		// what its name says without any job policy.
		name:    "step.awaiting.submit for a review step, no job policy",
		reg:     supervaizer.RegistrationSpec{Actions: supervaizer.Actions("job.start", "step.awaiting.submit")},
		handled: []string{"job.start", "step.awaiting.submit"},
	}, {
		name:    "the setup actions with job_policy.setup",
		reg:     supervaizer.RegistrationSpec{JobPolicy: &contracts.JobPolicy{Setup: &contracts.JobSetupPolicy{}}},
		handled: []string{"job.start.preview", "step.awaiting.submit", "job.start"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Sync Agent", Version: testAgentVersion, Registration: tc.reg})
			require.NoError(t, err)
			for _, id := range tc.handled {
				a.HandleAction(id, ok)
			}
			var logs proctest.Buffer
			srv, err := supervaizer.NewServer([]*supervaizer.Agent{a}, supervaizer.WithEnv(envOf(map[string]string{"SUPERVAIZER_LOCAL_MODE": "true"})),
				supervaizer.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			require.NoError(t, err)
			require.NoError(t, srv.Start(t.Context()))
			var lines []string
			for l := range strings.Lines(logs.String()) {
				if strings.Contains(l, "is not what its name says") {
					lines = append(lines, l)
				}
			}
			require.Len(t, lines, len(tc.warned), logs.String())
			for i, id := range tc.warned {
				assert.Contains(t, lines[i], "level=WARN")
				assert.Contains(t, lines[i], "action="+id)
				assert.Contains(t, lines[i], "agent_slug=sync-agent")
				assert.Contains(t, lines[i], "fix=\"set RegistrationSpec.JobPolicy")
			}
			if len(tc.warned) > 0 && tc.warned[0] == "job.sync" {
				assert.Contains(t, lines[0], "JobSyncPolicy")
			}
		})
	}
}

// TestStartupLogsThePreviewURLOnce: the local preview's URL is logged once,
// absolute, whether Start ran before Serve (as the example does) or Serve ran
// it (issue 29: the example logged it twice, once relative).
func TestStartupLogsThePreviewURLOnce(t *testing.T) {
	for _, tc := range []struct {
		name        string
		startBefore bool
	}{{"Serve runs Start", false}, {"Start before Serve", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var logs proctest.Buffer
			srv, err := supervaizer.NewServer([]*supervaizer.Agent{newTestAgent(t, "Research Agent")},
				supervaizer.WithEnv(envOf(map[string]string{"SUPERVAIZER_LOCAL_MODE": "true"})),
				supervaizer.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			require.NoError(t, err)
			if tc.startBefore {
				require.NoError(t, srv.Start(t.Context()))
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ctx, ln) }()
			want := "url=http://" + ln.Addr().String() + "/_preview/"
			require.Eventually(t, func() bool { return strings.Contains(logs.String(), want) }, 10*time.Second, 10*time.Millisecond, logs.String())
			cancel()
			require.NoError(t, <-done)
			assert.Equal(t, 1, strings.Count(logs.String(), "local preview: open it"), logs.String())
			assert.Contains(t, logs.String(), want)
		})
	}
}
