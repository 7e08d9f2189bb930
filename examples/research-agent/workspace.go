package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/store"
)

// workspaceRecord is an agent-side workspace: the record a Studio workspace
// is bound to. Its Ref is the agent_workspace_ref Studio stores on the grant
// and puts in every workspace token; the agent then partitions its data by it.
type workspaceRecord struct {
	Ref         string    `json:"agent_workspace_ref"`
	DisplayName string    `json:"display_name"`
	CreatedAt   time.Time `json:"created_at"`
}

// bindingInput is the input of workspace_binding.create: the values of the
// binding's create fields.
type bindingInput struct {
	DisplayName string `json:"display_name" sv:"nonblank,maxLen=120"`
}

// bindingFields are the fields of the workspace_binding.create form.
func bindingFields() []a2ui.Field {
	return []a2ui.Field{a2ui.StringField("display_name", "Workspace name", a2ui.Required(), a2ui.MaxLength(120),
		a2ui.Placeholder("Acme production"))}
}

func workspaceKey(ref string) string { return store.Key(keyRoot, "workspaces", ref) }

// registerWorkspaceBinding serves the bootstrap capabilities. They run before
// Studio has a grant for the workspace, so they get no workspace token
// (req.WorkspaceAuthorization is nil) and must not reveal workspace data: they
// only list and create agent-side workspace records.
func (a *app) registerWorkspaceBinding() {
	a.srv.HandleAction(actionBindOptions, a.bindingOptions)
	supervaizer.HandleActionFor(a.srv, actionBindCreate, a.createBinding)
	a.agent.Idempotent(actionBindCreate) // a retried create returns the same record
	a.srv.HandleSurface(surfaceBindingCreate, func(ctx context.Context, _ *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
		return supervaizer.NewSurfaceResult(ctx, surfaceBindingCreate, a2ui.Form{
			ID: "research-agent.workspace_binding.create", Title: "Create a research workspace",
			Fields: bindingFields(),
			Submit: a2ui.Submit{Action: actionBindCreate, Label: "Create and bind"},
		})
	})
}

// bindingOptions answers the list of existing agent-side workspaces a Studio
// workspace may bind to: always empty. The call is a bootstrap call: it
// carries no workspace token, so the caller proves nothing but the
// controller's API key, and its workspace.id is a claim anyone holding that
// key can make. Listing the stored workspaces would hand every tenant's
// workspace names and refs to any key holder. A binding is therefore only
// ever created (workspace_binding.create) from the workspace that asks, and
// nothing is listed before a grant proves which workspace is calling.
func (a *app) bindingOptions(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
	return supervaizer.OK(supervaizer.WorkspaceBindingOptions(a.agent.Registration().WorkspaceBinding.Existing)), nil
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// createBinding creates an agent-side workspace and returns its
// agent_workspace_ref, which Studio stores on the grant.
func (a *app) createBinding(ctx context.Context, _ *supervaizer.ActionRequest, in bindingInput) (*supervaizer.ActionResult, error) {
	name := strings.TrimSpace(in.DisplayName)
	base := strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if base == "" {
		base = "workspace"
	}
	if len(base) > 40 {
		base = strings.TrimRight(base[:40], "-")
	}
	w := workspaceRecord{Ref: base + "-" + uuid.NewString()[:8], DisplayName: name, CreatedAt: a.now().UTC()}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	if _, stored, err := a.store.PutIfAbsent(ctx, workspaceKey(w.Ref), b); err != nil {
		return nil, err
	} else if !stored {
		return supervaizer.Fail("ref_collision", "try again"), nil
	}
	return supervaizer.OK(supervaizer.Effect{Type: "workspace_binding.created", Status: "created",
		Item: map[string]any{"agent_workspace_ref": w.Ref, "display_name": w.DisplayName}}), nil
}
