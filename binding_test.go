package supervaizer_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// TestWorkspaceBindingRequired is spec item 78: with workspace_binding.required,
// a call other than the bootstrap ids whose verified token carries no
// agent_workspace_ref is answered before its handler: an action with
// status "error" and errors[0].code "workspace_binding_missing", a surface
// load with -32030 and data.code "workspace_binding_missing". A bound
// workspace, the bootstrap ids and an agent that does not require a binding
// reach their handlers.
func TestWorkspaceBindingRequired(t *testing.T) {
	t.Parallel()
	newServer := func(t *testing.T, required bool) (*svtest.TestServer, map[string]int) {
		reg := sv.RegistrationSpec{
			AgentSlug: "bound-agent", DisplayName: "Bound Agent", A2UICatalogVersion: "1.0.0",
			Actions:  sv.Actions("job.start"),
			Surfaces: sv.Surfaces("job.start"),
			WorkspaceBinding: &contracts.WorkspaceBinding{Required: required, Modes: []string{contracts.BindExisting, contracts.CreateAndBind},
				Create: &contracts.BindingCreate{}},
		}
		agent, err := sv.NewAgent(sv.AgentSpec{Name: "Bound Agent", Version: "1.0.0", Registration: reg})
		require.NoError(t, err)
		ran := map[string]int{}
		ok := func(_ context.Context, req *sv.ActionRequest) (*sv.ActionResult, error) {
			ran[req.Action]++
			return sv.OK(), nil
		}
		for _, id := range []string{"job.start", contracts.BootstrapOptionsAction, contracts.BootstrapCreateAction} {
			agent.HandleAction(id, ok)
		}
		surface := func(ctx context.Context, req *sv.SurfaceRequest) (*sv.SurfaceResult, error) {
			ran["surface:"+req.Surface]++
			return sv.NewSurfaceResult(ctx, req.Surface, map[string]any{"type": contracts.DocumentConfigurator, "surface": req.Surface})
		}
		agent.HandleSurface("job.start", surface)
		agent.HandleSurface(contracts.BootstrapCreateSurface, surface)
		return svtest.NewTestServer(t, []*sv.Agent{agent}), ran
	}

	t.Run("unbound workspace", func(t *testing.T) {
		t.Parallel()
		ts, ran := newServer(t, true)
		res, err := ts.Invoke(t.Context(), ts.Request("job.start", nil))
		require.NoError(t, err)
		assert.Equal(t, contracts.StatusError, res.Status)
		require.NotEmpty(t, res.Errors)
		assert.Equal(t, contracts.ErrorWorkspaceBindingMissing, res.Errors[0].Code)
		_, err = ts.LoadSurface(t.Context(), ts.SurfaceRequest("job.start"))
		assert.Equal(t, errcode.Unauthorized, sv.CodeOf(err))
		assert.Equal(t, contracts.ErrorWorkspaceBindingMissing, svtest.AuthCode(err))
		assert.Zero(t, ran["job.start"]+ran["surface:job.start"], "no handler ran")

		// The bootstrap ids are how a workspace gets bound: they run.
		for _, id := range []string{contracts.BootstrapOptionsAction, contracts.BootstrapCreateAction} {
			res, err := ts.Invoke(t.Context(), ts.Request(id, nil))
			require.NoError(t, err, id)
			assert.Equal(t, contracts.StatusOK, res.Status, id)
		}
		_, err = ts.LoadSurface(t.Context(), ts.SurfaceRequest(contracts.BootstrapCreateSurface))
		require.NoError(t, err)
		assert.Equal(t, map[string]int{contracts.BootstrapOptionsAction: 1, contracts.BootstrapCreateAction: 1,
			"surface:" + contracts.BootstrapCreateSurface: 1}, ran)
	})
	t.Run("bound workspace", func(t *testing.T) {
		t.Parallel()
		ts, ran := newServer(t, true)
		ts.Studio.BindWorkspace("bound-agent", svtest.DefaultWorkspaceID, "crm-account-7")
		res, err := ts.Invoke(t.Context(), ts.Request("job.start", nil))
		require.NoError(t, err)
		assert.Equal(t, contracts.StatusOK, res.Status)
		_, err = ts.LoadSurface(t.Context(), ts.SurfaceRequest("job.start"))
		require.NoError(t, err)
		assert.Equal(t, map[string]int{"job.start": 1, "surface:job.start": 1}, ran)
	})
	t.Run("binding not required", func(t *testing.T) {
		t.Parallel()
		ts, ran := newServer(t, false)
		res, err := ts.Invoke(t.Context(), ts.Request("job.start", nil))
		require.NoError(t, err)
		assert.Equal(t, contracts.StatusOK, res.Status)
		_, err = ts.LoadSurface(t.Context(), ts.SurfaceRequest("job.start"))
		require.NoError(t, err)
		assert.Equal(t, map[string]int{"job.start": 1, "surface:job.start": 1}, ran)
	})
}
