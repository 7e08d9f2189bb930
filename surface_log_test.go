package supervaizer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
)

// TestInvalidDocumentLogsTheRule: a surface handler returning an invalid
// ResourceImport gets -32603 on the wire (no detail leaked) and a log line that
// names the violated rule.
func TestInvalidDocumentLogsTheRule(t *testing.T) {
	reg := mustRegistration(t, sv.RegistrationSpec{AgentSlug: "research-agent", DisplayName: "R", A2UICatalogVersion: "r.1",
		Surfaces: sv.Surfaces("mission.agent.surface.contact_import")})
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1", Registration: reg})
	require.NoError(t, err)
	var logs bytes.Buffer
	srv, err := sv.NewServer([]*sv.Agent{a}, sv.WithEnv(func(string) string { return "" }), sv.WithLocalMode(true),
		sv.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	srv.HandleSurface("mission.agent.surface.contact_import", func(ctx context.Context, req *sv.SurfaceRequest) (*sv.SurfaceResult, error) {
		doc := a2ui.ResourceImport{ID: "imp", Title: "Import", Resource: "contacts",
			Submit: a2ui.Submit{Action: "resource.contacts.import"}} // csv accepted by default, but no columns
		return sv.NewSurfaceResult(ctx, req.Surface, doc)
	})
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": sv.MethodSurfaceLoad, "params": map[string]any{
		"request_id": "r", "actor": map[string]any{"user_id": "u"}, "workspace": map[string]any{"id": "w"},
		"mission_id": "m", "agent_slug": "research-agent", "surface": "mission.agent.surface.contact_import"}})
	r := httptest.NewRequest("POST", "/a2a", bytes.NewReader(body))
	r.Header.Set(sv.HeaderAPIKey, sv.LocalModeAPIKey)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Surface handler failed",
		"data":{"agent_slug":"research-agent","surface":"mission.agent.surface.contact_import"}}}`, w.Body.String())
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "surface handler failed") {
			line = l
		}
	}
	require.NotEmpty(t, line, logs.String())
	assert.Contains(t, line, "/document/columns")
	assert.Contains(t, line, "a CSV import must declare its columns")
}
