package supervaizer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
)

// TestLocalModeNeverCallsStudio: in local mode the Studio account variables
// are ignored: startup, an action and a surface load send nothing to Studio.
func TestLocalModeNeverCallsStudio(t *testing.T) {
	var calls atomic.Int64
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(fake.Close)
	env := map[string]string{
		"SUPERVAIZER_LOCAL_MODE": "true", "SUPERVAIZE_API_URL": fake.URL, "SUPERVAIZE_API_KEY": "account-key",
		"SUPERVAIZE_WORKSPACE_ID": "ws-1", "SUPERVAIZER_PUBLIC_URL": "http://127.0.0.1:1",
	}
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
	assert.Zero(t, calls.Load(), "no request reaches Studio in local mode")
}
