package resource

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/wsctx"
)

// DataResource context headers.
const (
	HeaderWorkspaceID     = "X-Supervaize-Workspace-Id"
	HeaderWorkspaceSlug   = "X-Supervaize-Workspace-Slug"
	HeaderMissionID       = "X-Supervaize-Mission-Id"
	HeaderAgentSlug       = "X-Supervaize-Agent-Slug"
	HeaderRequestID       = "X-Supervaize-Request-Id"
	HeaderMissionMetadata = "X-Supervaize-Mission-Metadata"
)

// MaxMissionMetadataHeaderBytes bounds the encoded X-Supervaize-Mission-Metadata
// value: 4096 bytes are accepted, 4097 rejected.
const MaxMissionMetadataHeaderBytes = 4096

// ErrMissionMetadataTooLarge is returned by [ContextHeaders] when the encoded
// mission metadata would exceed [MaxMissionMetadataHeaderBytes].
var ErrMissionMetadataTooLarge = fmt.Errorf("supervaizer: encoded mission metadata exceeds %d bytes", MaxMissionMetadataHeaderBytes)

// ContextHeaderValues are the DataResource context values [ContextHeaders]
// writes; empty values are left out.
type ContextHeaderValues struct {
	WorkspaceID   string
	WorkspaceSlug string
	MissionID     string
	AgentSlug     string
	RequestID     string
	// MissionMetadata is Studio's Mission.metadata object, for mission-scoped
	// calls only (MissionID is then required). Empty: no header.
	MissionMetadata map[string]any
}

// ContextHeaders builds the DataResource context headers: each
// header only when its value is non-empty; the mission metadata as compact
// UTF-8 JSON, base64url-encoded without padding. It fails when the encoded
// metadata exceeds [MaxMissionMetadataHeaderBytes] (errors.Is
// [ErrMissionMetadataTooLarge]), when metadata is given without a mission id
// (the receiving side would answer 400), or when it cannot be encoded as JSON.
func ContextHeaders(v ContextHeaderValues) (http.Header, error) {
	h := make(http.Header, 6)
	for _, kv := range [...]struct{ name, value string }{
		{HeaderWorkspaceID, v.WorkspaceID}, {HeaderWorkspaceSlug, v.WorkspaceSlug},
		{HeaderMissionID, v.MissionID}, {HeaderAgentSlug, v.AgentSlug}, {HeaderRequestID, v.RequestID},
	} {
		if kv.value != "" {
			h[kv.name] = []string{kv.value}
		}
	}
	if len(v.MissionMetadata) == 0 {
		return h, nil
	}
	if v.MissionID == "" {
		return nil, errors.New("supervaizer: ContextHeaders: mission metadata needs a mission id")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v.MissionMetadata); err != nil {
		return nil, fmt.Errorf("supervaizer: ContextHeaders: encode mission metadata: %w", err)
	}
	raw := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if base64.RawURLEncoding.EncodedLen(len(raw)) > MaxMissionMetadataHeaderBytes {
		return nil, fmt.Errorf("%w (%d bytes)", ErrMissionMetadataTooLarge, base64.RawURLEncoding.EncodedLen(len(raw)))
	}
	h[HeaderMissionMetadata] = []string{base64.RawURLEncoding.EncodeToString(raw)}
	return h, nil
}

// DataResourceContext is the context of a DataResource call.
// WorkspaceID and WorkspaceSlug come from the verified workspace context when
// there is one; MissionID, AgentSlug and RequestID from the headers.
type DataResourceContext struct {
	WorkspaceID            string                              `json:"workspace_id"`
	WorkspaceSlug          string                              `json:"workspace_slug,omitempty"`
	MissionID              string                              `json:"mission_id,omitempty"`
	AgentSlug              string                              `json:"agent_slug,omitempty"`
	RequestID              string                              `json:"request_id,omitempty"`
	WorkspaceAuthorization *contracts.VerifiedWorkspaceContext `json:"workspace_authorization"`
	// Mission has ID = X-Supervaize-Mission-Id and Metadata = the decoded
	// X-Supervaize-Mission-Metadata (no Name); nil without the metadata header.
	// The header is not signed: narrow results with it, never grant access.
	Mission *contracts.MissionContext `json:"mission"`
}

// ContextHeaderError is a DataResource context that must be refused: answer
// StatusCode with {"detail": Message} and do not call the agent's callback.
type ContextHeaderError struct {
	Header  string // the offending header
	Message string
	Status  int // http.StatusBadRequest, or http.StatusForbidden for a workspace that contradicts the token
}

// Error returns the message.
func (e *ContextHeaderError) Error() string { return e.Message }

// StatusCode returns the HTTP status to answer.
func (e *ContextHeaderError) StatusCode() int { return e.Status }

func badHeader(name, format string, args ...any) *ContextHeaderError {
	return &ContextHeaderError{Header: name, Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...)}
}

// ParseDataResourceContext reads the DataResource context of r. verified is
// the verified workspace context of the call (the first non-nil one is used;
// default: supervaizer.WorkspaceFrom on the request's context). The error is always a
// *[ContextHeaderError] answered with HTTP 400 when the mission-metadata
// header is present and: there is no X-Supervaize-Mission-Id, the value
// exceeds [MaxMissionMetadataHeaderBytes], it is not base64url (padding
// optional), the bytes are not UTF-8 JSON, or the JSON is not an object. A
// repeated metadata header is refused too. An X-Supervaize-Workspace-Id that
// contradicts the verified workspace is answered 403.
func ParseDataResourceContext(r *http.Request, verified ...*contracts.VerifiedWorkspaceContext) (*DataResourceContext, error) {
	var vc *contracts.VerifiedWorkspaceContext
	for _, v := range verified {
		if v != nil {
			vc = v
			break
		}
	}
	if vc == nil {
		vc, _ = wsctx.From(r.Context())
	}
	h := r.Header
	c := &DataResourceContext{
		WorkspaceID: h.Get(HeaderWorkspaceID), WorkspaceSlug: h.Get(HeaderWorkspaceSlug),
		MissionID: h.Get(HeaderMissionID), AgentSlug: h.Get(HeaderAgentSlug), RequestID: h.Get(HeaderRequestID),
		WorkspaceAuthorization: vc,
	}
	if vc != nil {
		if c.WorkspaceID != "" && c.WorkspaceID != vc.WorkspaceID {
			return nil, &ContextHeaderError{Header: HeaderWorkspaceID, Status: http.StatusForbidden,
				Message: HeaderWorkspaceID + " does not match the verified workspace"}
		}
		c.WorkspaceID, c.WorkspaceSlug = vc.WorkspaceID, ""
		if vc.WorkspaceSlug != nil {
			c.WorkspaceSlug = *vc.WorkspaceSlug
		}
		if c.AgentSlug == "" {
			c.AgentSlug = vc.AgentSlug
		}
	}
	values := h.Values(HeaderMissionMetadata)
	if len(values) == 0 {
		return c, nil
	}
	meta, err := decodeMissionMetadata(values, c.MissionID)
	if err != nil {
		return nil, err
	}
	c.Mission = &contracts.MissionContext{ID: c.MissionID, Metadata: meta}
	return c, nil
}

// decodeMissionMetadata checks and decodes the metadata header values.
func decodeMissionMetadata(values []string, missionID string) (json.RawMessage, error) {
	const name = HeaderMissionMetadata
	if len(values) > 1 {
		return nil, badHeader(name, "%s is repeated", name)
	}
	if missionID == "" {
		return nil, badHeader(HeaderMissionID, "%s requires %s", name, HeaderMissionID)
	}
	v := values[0]
	if len(v) > MaxMissionMetadataHeaderBytes {
		return nil, badHeader(name, "%s exceeds %d bytes", name, MaxMissionMetadataHeaderBytes)
	}
	enc := base64.RawURLEncoding
	if strings.HasSuffix(v, "=") {
		enc = base64.URLEncoding
	}
	raw, err := enc.DecodeString(v)
	if err != nil {
		return nil, badHeader(name, "%s is not valid base64url", name)
	}
	if !utf8.Valid(raw) || !json.Valid(raw) {
		return nil, badHeader(name, "%s is not UTF-8 JSON", name)
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, badHeader(name, "%s must be a JSON object", name)
	}
	return json.RawMessage(raw), nil
}
