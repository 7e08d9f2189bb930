package supervaizer_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// TestInvalidDocumentLogsTheRule: a surface handler returning an invalid
// ResourceImport gets -32603 on the wire (no detail leaked) and a log line that
// names the violated rule.
func TestInvalidDocumentLogsTheRule(t *testing.T) {
	reg := mustRegistration(t, sv.RegistrationSpec{AgentSlug: "research-agent", DisplayName: "R", A2UICatalogVersion: "r.1",
		Surfaces: sv.Surfaces("mission.agent.surface.contact_import")})
	a, err := sv.NewAgent(sv.AgentSpec{Name: "Research Agent", Version: "1", Registration: reg})
	require.NoError(t, err)
	var logs proctest.Buffer
	ts := svtest.NewTestServer(t, []*sv.Agent{a}, sv.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	ts.Server.HandleSurface("mission.agent.surface.contact_import", func(ctx context.Context, req *sv.SurfaceRequest) (*sv.SurfaceResult, error) {
		doc := a2ui.ResourceImport{ID: "imp", Title: "Import", Resource: "contacts",
			Submit: a2ui.Submit{Action: "resource.contacts.import"}} // csv accepted by default, but no columns
		return sv.NewSurfaceResult(ctx, req.Surface, doc)
	})
	_, err = ts.LoadSurface(t.Context(), ts.SurfaceRequest("mission.agent.surface.contact_import"))
	var rpcErr *sv.Error
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, errcode.InternalError, sv.CodeOf(err))
	assert.Equal(t, "Surface handler failed", rpcErr.Error(), "no detail leaked")
	assert.Equal(t, map[string]any{"agent_slug": "research-agent", "surface": "mission.agent.surface.contact_import"}, rpcErr.Data())
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
