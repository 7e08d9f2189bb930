package supervaizer_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// TestLocalModeNeverCallsStudio: in local mode the Studio account variables
// are ignored: startup, an action and a surface load send nothing to Studio.
func TestLocalModeNeverCallsStudio(t *testing.T) {
	api := svtest.NewFakeStudioAPI(t, svtest.NewFakeStudio(t))
	env := api.Env()
	env["SUPERVAIZER_LOCAL_MODE"], env["SUPERVAIZER_PUBLIC_URL"] = "true", "http://127.0.0.1:1"
	reg := mustRegistration(t, sv.RegistrationSpec{AgentSlug: "research-agent", DisplayName: "R", A2UICatalogVersion: "r.1",
		Surfaces: sv.Surfaces("job.start"), Actions: sv.Actions("job.stop")})
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1", Registration: reg})
	require.NoError(t, err)
	srv, err := sv.NewServer([]*sv.Agent{a}, sv.WithEnv(func(k string) string { return env[k] }))
	require.NoError(t, err)
	assert.Nil(t, srv.Studio(), "local mode attaches no account")
	srv.HandleAction("job.stop", func(context.Context, *sv.ActionRequest) (*sv.ActionResult, error) { return sv.OK(), nil })
	srv.HandleSurface("job.start", func(ctx context.Context, req *sv.SurfaceRequest) (*sv.SurfaceResult, error) {
		return sv.NewSurfaceResult(ctx, req.Surface, map[string]any{"type": "Form", "fields": []any{},
			"submit": map[string]any{"action": "job.stop"}})
	})
	require.NoError(t, srv.Start(t.Context()))

	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"supervaizer/action.invoke","params":{"request_id":"r","actor":{"user_id":"u"},"workspace":{"id":"w"},"mission_id":"m","agent_slug":"research-agent","surface":"job.start","action":"job.stop"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"supervaizer/surface.load","params":{"request_id":"r","actor":{"user_id":"u"},"workspace":{"id":"w"},"mission_id":"m","agent_slug":"research-agent","surface":"job.start"}}`,
	} {
		r := httptest.NewRequest("POST", "/a2a", strings.NewReader(body))
		r.Header.Set(sv.HeaderAPIKey, sv.LocalModeAPIKey)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		assert.NotContains(t, w.Body.String(), `"error"`, w.Body.String())
	}
	assert.Empty(t, api.Requests(), "no request reaches Studio in local mode")
}
