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

// MarshalJSON implements json.Marshaler; a nil Input is written as {}.
func (r ActionRequest) MarshalJSON() ([]byte, error) {
	type alias ActionRequest
	if r.Input == nil {
		r.Input = json.RawMessage("{}")
	}
	return marshalOpen((*alias)(&r), r.Extra)
}

// UnmarshalJSON implements json.Unmarshaler; an absent input is read as {}.
func (r *ActionRequest) UnmarshalJSON(b []byte) error {
	type alias ActionRequest
	var v alias
	extra, err := unmarshalOpen(b, &v)
	if v.Input == nil {
		v.Input = json.RawMessage("{}")
	}
	*r = ActionRequest(v)
	r.Extra = extra
	return err
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

// MarshalJSON implements json.Marshaler; a nil Input is written as {}.
func (r SurfaceRequest) MarshalJSON() ([]byte, error) {
	type alias SurfaceRequest
	if r.Input == nil {
		r.Input = json.RawMessage("{}")
	}
	return marshalOpen((*alias)(&r), r.Extra)
}

// UnmarshalJSON implements json.Unmarshaler; an absent input is read as {}.
func (r *SurfaceRequest) UnmarshalJSON(b []byte) error {
	type alias SurfaceRequest
	var v alias
	extra, err := unmarshalOpen(b, &v)
	if v.Input == nil {
		v.Input = json.RawMessage("{}")
	}
	*r = SurfaceRequest(v)
	r.Extra = extra
	return err
}

// Actor is the Studio user behind a request.
type Actor struct {
	UserID string `json:"user_id" sv:"required"`
	Extra  Extra  `json:"-"`
}

// MarshalJSON implements json.Marshaler.
func (a Actor) MarshalJSON() ([]byte, error) {
	type alias Actor
	return marshalOpen((*alias)(&a), a.Extra)
}

// UnmarshalJSON implements json.Unmarshaler.
func (a *Actor) UnmarshalJSON(b []byte) error {
	type alias Actor
	var v alias
	extra, err := unmarshalOpen(b, &v)
	*a = Actor(v)
	a.Extra = extra
	return err
}

// WorkspaceRef is the request's workspace. The slug is a display and routing
// hint, never authority: use the verified context.
type WorkspaceRef struct {
	ID    string `json:"id" sv:"required"`
	Slug  string `json:"slug,omitempty" sv:"null"`
	Extra Extra  `json:"-"`
}

// MarshalJSON implements json.Marshaler.
func (w WorkspaceRef) MarshalJSON() ([]byte, error) {
	type alias WorkspaceRef
	return marshalOpen((*alias)(&w), w.Extra)
}

// UnmarshalJSON implements json.Unmarshaler.
func (w *WorkspaceRef) UnmarshalJSON(b []byte) error {
	type alias WorkspaceRef
	var v alias
	extra, err := unmarshalOpen(b, &v)
	*w = WorkspaceRef(v)
	w.Extra = extra
	return err
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

// MarshalJSON implements json.Marshaler; nil metadata is written as {}.
func (m MissionContext) MarshalJSON() ([]byte, error) {
	type alias MissionContext
	if m.Metadata == nil {
		m.Metadata = json.RawMessage("{}")
	}
	return marshalOpen((*alias)(&m), m.Extra)
}

// UnmarshalJSON implements json.Unmarshaler; absent metadata is read as {}.
func (m *MissionContext) UnmarshalJSON(b []byte) error {
	type alias MissionContext
	var v alias
	extra, err := unmarshalOpen(b, &v)
	if v.Metadata == nil {
		v.Metadata = json.RawMessage("{}")
	}
	*m = MissionContext(v)
	m.Extra = extra
	return err
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

// UnmarshalJSON implements json.Unmarshaler. It refuses a key that differs from
// a declared key only in letter case, which encoding/json would otherwise read
// into the declared field; other unknown keys are ignored.
func (c *VerifiedWorkspaceContext) UnmarshalJSON(b []byte) error {
	type alias VerifiedWorkspaceContext
	var v alias
	if _, err := unmarshalOpen(b, &v); err != nil {
		return err
	}
	*c = VerifiedWorkspaceContext(v)
	return nil
}

// MarshalJSON implements json.Marshaler; nil Scopes are written as [], which the
// schema requires.
func (c VerifiedWorkspaceContext) MarshalJSON() ([]byte, error) {
	type alias VerifiedWorkspaceContext
	return marshalOpen((*alias)(&c), nil)
}
