package main

import (
	"maps"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// TestDeployments runs the real binary in each deployment docs/deploying.md
// walks through ("Production deployments"), with the variables it lists,
// against the test kit's fake Studio, and calls it with real workspace tokens:
// attached to Studio (the registration handshake gives the Studio agent id),
// standalone (SUPERVAIZER_STUDIO_AGENT_ID gives it), and standalone without
// the id, which never starts (spec item 70).
func TestDeployments(t *testing.T) {
	bin := proctest.Build(t, "research-agent")
	tests := []struct {
		name string
		env  func(t *testing.T, studio *svtest.FakeStudio) map[string]string
		// refused: the startup error names these; empty: the agent serves.
		refused []string
	}{
		{
			name: "attached to Studio",
			env: func(t *testing.T, studio *svtest.FakeStudio) map[string]string {
				env := studioEnv(studio, t.TempDir())
				maps.Copy(env, svtest.NewFakeStudioAPI(t, studio).Env())
				env["SUPERVAIZER_PUBLIC_URL"] = "http://127.0.0.1:8080"
				env["SUPERVAIZER_PRIVATE_KEY"] = svtest.ControllerKeyPEM(t)
				return env
			},
		},
		{
			name: "standalone",
			env: func(t *testing.T, studio *svtest.FakeStudio) map[string]string {
				env := studioEnv(studio, t.TempDir())
				env["SUPERVAIZER_STUDIO_AGENT_ID"] = studio.StudioAgentID(agentSlug)
				return env
			},
		},
		{
			name: "standalone without the Studio agent id",
			env: func(t *testing.T, studio *svtest.FakeStudio) map[string]string {
				return studioEnv(studio, t.TempDir())
			},
			refused: []string{"SUPERVAIZER_STUDIO_AGENT_ID", "SUPERVAIZE_API_URL", "SUPERVAIZE_API_KEY", "SUPERVAIZE_WORKSPACE_ID", agentSlug},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			studio := svtest.NewFakeStudio(t)
			env := tt.env(t, studio)
			env["SUPERVAIZER_ADDR"] = "127.0.0.1:0"
			var list []string
			for k, v := range env {
				list = append(list, k+"="+v)
			}
			slices.Sort(list)
			proc := proctest.Start(t, bin, list)
			if len(tt.refused) > 0 {
				require.Error(t, proc.Wait(t), "a deployment that cannot authorize does not start")
				for _, s := range tt.refused {
					assert.Contains(t, proc.Stderr.String(), s)
				}
				assert.NotContains(t, proc.Output(), "controller ready")
				return
			}
			c := &client{t: t, base: proc.AwaitURL(t), studio: studio}
			res := c.invoke(actionRequest(t, wsA, "resource.contacts.create", map[string]any{"item": map[string]any{"name": "Ada", "email": "ada@example.com"}}))
			assert.Equal(t, contracts.StatusOK, res.Status, "%+v", res.Errors)
			proc.Stop(t, syscall.SIGTERM)
		})
	}
}
