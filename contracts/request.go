package contracts

import "encoding/json"

// ActionRequest is a supervaizer/action.invoke request (V2ActionRequest,
// the protocol). It is an open model: unknown keys reach the handler in
// Extra. WorkspaceAuthorization is never trusted from the client: the SDK
// overwrites it with the verified context, or nil for bootstrap actions.
type ActionRequest struct {
	RequestID              string                    `json:"request_id" sv:"required"`
	Actor                  Actor                     `json:"actor" sv:"required"`
	Workspace              WorkspaceRef              `json:"workspace" sv:"required"`
	MissionID              string                    `json:"mission_id" sv:"required"`
	AgentSlug              string                    `json:"agent_slug" sv:"required"`
	Surface                string                    `json:"surface" sv:"required"`
	Action                 string                    `json:"action" sv:"required"`
	Input                  json.RawMessage           `json:"input,omitempty" sv:"object"`
	IdempotencyKey         string                    `json:"idempotency_key,omitempty" sv:"null"`
	DraftSessionID         string                    `json:"draft_session_id,omitempty" sv:"null"`
	JobID                  string                    `json:"job_id,omitempty" sv:"null"`
	CaseID                 string                    `json:"case_id,omitempty" sv:"null"`
	StepID                 string                    `json:"step_id,omitempty" sv:"null"`
	Mission                *MissionContext           `json:"mission,omitempty"`
	WorkspaceAuthorization *VerifiedWorkspaceContext `json:"workspace_authorization,omitempty"`
	Extra                  Extra                     `json:"-"`
}

func (r *ActionRequest) encodeDefaults() {
	if r.Input == nil {
		r.Input = json.RawMessage("{}")
	}
}

func (r *ActionRequest) afterDecode() {
	if r.Input == nil {
		r.Input = json.RawMessage("{}")
	}
}

// SurfaceRequest is a supervaizer/surface.load request (V2SurfaceRequest,
// the protocol): an ActionRequest without action and idempotency_key.
type SurfaceRequest struct {
	RequestID              string                    `json:"request_id" sv:"required"`
	Actor                  Actor                     `json:"actor" sv:"required"`
	Workspace              WorkspaceRef              `json:"workspace" sv:"required"`
	MissionID              string                    `json:"mission_id" sv:"required"`
	AgentSlug              string                    `json:"agent_slug" sv:"required"`
	Surface                string                    `json:"surface" sv:"required"`
	Input                  json.RawMessage           `json:"input,omitempty" sv:"object"`
	DraftSessionID         string                    `json:"draft_session_id,omitempty" sv:"null"`
	JobID                  string                    `json:"job_id,omitempty" sv:"null"`
	CaseID                 string                    `json:"case_id,omitempty" sv:"null"`
	StepID                 string                    `json:"step_id,omitempty" sv:"null"`
	Mission                *MissionContext           `json:"mission,omitempty"`
	WorkspaceAuthorization *VerifiedWorkspaceContext `json:"workspace_authorization,omitempty"`
	Extra                  Extra                     `json:"-"`
}

func (r *SurfaceRequest) encodeDefaults() {
	if r.Input == nil {
		r.Input = json.RawMessage("{}")
	}
}

func (r *SurfaceRequest) afterDecode() {
	if r.Input == nil {
		r.Input = json.RawMessage("{}")
	}
}

// Actor is the Studio user behind a request.
type Actor struct {
	UserID string `json:"user_id" sv:"required"`
	Extra  Extra  `json:"-"`
}

// WorkspaceRef is the request's workspace. The slug is a display and routing
// hint, never authority: use the verified context.
type WorkspaceRef struct {
	ID    string `json:"id" sv:"required"`
	Slug  string `json:"slug,omitempty" sv:"null"`
	Extra Extra  `json:"-"`
}

// MissionContext is the mission a request belongs to (V2MissionContext,
// the protocol). Metadata is Studio's Mission.metadata object, carried
// without reading its keys; it is never null and never a string.
type MissionContext struct {
	ID       string          `json:"id" sv:"required"`
	Name     string          `json:"name,omitempty" sv:"null"`
	Metadata json.RawMessage `json:"metadata,omitempty" sv:"object"`
	Extra    Extra           `json:"-"`
}

func (m *MissionContext) encodeDefaults() {
	if m.Metadata == nil {
		m.Metadata = json.RawMessage("{}")
	}
}

func (m *MissionContext) afterDecode() {
	if m.Metadata == nil {
		m.Metadata = json.RawMessage("{}")
	}
}

// VerifiedWorkspaceContext is the verified workspace authorization injected into
// a request (V2VerifiedWorkspaceContext).
// Handlers use these values, never the raw workspace object, for every access
// decision. GrantID "local-mode" marks the unverified development bypass.
type VerifiedWorkspaceContext struct {
	GrantID           string   `json:"grant_id"`
	WorkspaceID       string   `json:"workspace_id"`
	WorkspaceSlug     *string  `json:"workspace_slug"`
	AgentID           string   `json:"agent_id"`
	AgentSlug         string   `json:"agent_slug"`
	ServerID          string   `json:"server_id"`
	Scopes            []string `json:"scopes"`
	AgentWorkspaceRef *string  `json:"agent_workspace_ref"`
}

// LocalModeGrantID is the grant id of the unverified local-mode context.
const LocalModeGrantID = "local-mode"

func (*VerifiedWorkspaceContext) strictKeys() {}

// encodeDefaults writes nil Scopes as [], which the schema requires.
func (c *VerifiedWorkspaceContext) encodeDefaults() {
	if c.Scopes == nil {
		c.Scopes = []string{}
	}
}
