package resource

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/studiotest"
	"github.com/supervaize/supervaizer-go/internal/wsctx"
)

// metadataOfEncodedLen returns metadata whose compact JSON is n bytes long.
func metadataOfEncodedLen(tb testing.TB, raw int) map[string]any {
	tb.Helper()
	m := map[string]any{"k": strings.Repeat("x", raw-len(`{"k":""}`))}
	b, err := json.Marshal(m)
	require.NoError(tb, err)
	require.Len(tb, b, raw)
	return m
}

func TestContextHeaders(t *testing.T) {
	t.Parallel()
	h, err := ContextHeaders(ContextHeaderValues{WorkspaceID: "ws-1", MissionID: "mis-3", AgentSlug: studiotest.AgentSlug,
		MissionMetadata: map[string]any{"filter": map[string]any{"contact": "c<1>&"}}})
	require.NoError(t, err)
	assert.Equal(t, http.Header{
		HeaderWorkspaceID: {"ws-1"}, HeaderMissionID: {"mis-3"}, HeaderAgentSlug: {studiotest.AgentSlug},
		HeaderMissionMetadata: {base64.RawURLEncoding.EncodeToString([]byte(`{"filter":{"contact":"c<1>&"}}`))},
	}, h, "only non-empty values; compact JSON, base64url without padding")

	h, err = ContextHeaders(ContextHeaderValues{RequestID: "req-1", MissionMetadata: map[string]any{}})
	require.NoError(t, err)
	assert.Equal(t, http.Header{HeaderRequestID: {"req-1"}}, h, "empty metadata: no header")

	_, err = ContextHeaders(ContextHeaderValues{MissionMetadata: map[string]any{"a": 1}})
	require.ErrorContains(t, err, "needs a mission id")
	_, err = ContextHeaders(ContextHeaderValues{MissionID: "m", MissionMetadata: map[string]any{"a": func() {}}})
	require.ErrorContains(t, err, "encode mission metadata")
}

func TestContextHeadersSizeBoundary(t *testing.T) {
	t.Parallel()
	// 3072 JSON bytes encode to exactly 4096 characters; 3073 bytes to 4098
	// (unpadded base64url cannot be 4097 characters long).
	h, err := ContextHeaders(ContextHeaderValues{MissionID: "m", MissionMetadata: metadataOfEncodedLen(t, 3072)})
	require.NoError(t, err)
	require.Len(t, h.Get(HeaderMissionMetadata), MaxMissionMetadataHeaderBytes)

	_, err = ContextHeaders(ContextHeaderValues{MissionID: "m", MissionMetadata: metadataOfEncodedLen(t, 3073)})
	require.ErrorIs(t, err, ErrMissionMetadataTooLarge)

	// The receiving side: 4096 bytes accepted, 4097 rejected.
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set(HeaderMissionID, "m")
	r.Header.Set(HeaderMissionMetadata, h.Get(HeaderMissionMetadata))
	c, err := ParseDataResourceContext(r)
	require.NoError(t, err)
	require.NotNil(t, c.Mission)
	r.Header.Set(HeaderMissionMetadata, h.Get(HeaderMissionMetadata)+"=")
	_, err = ParseDataResourceContext(r)
	var he *ContextHeaderError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusBadRequest, he.StatusCode())
	assert.Contains(t, he.Message, "exceeds 4096 bytes")
}

func TestParseDataResourceContext(t *testing.T) {
	t.Parallel()
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	slug := "acme"
	verified := &contracts.VerifiedWorkspaceContext{GrantID: "g", WorkspaceID: "ws-1", WorkspaceSlug: &slug, AgentID: studiotest.StudioAgent,
		AgentSlug: studiotest.AgentSlug, ServerID: studiotest.StudioServer, Scopes: []string{"resource.contacts.list"}}
	tests := []struct {
		name       string
		headers    map[string][]string
		verified   *contracts.VerifiedWorkspaceContext
		want       *DataResourceContext
		wantStatus int
		wantMsg    string
	}{
		{name: "no metadata header",
			headers: map[string][]string{HeaderWorkspaceID: {"ws-1"}, HeaderWorkspaceSlug: {"hint"}, HeaderMissionID: {"mis-3"}, HeaderAgentSlug: {studiotest.AgentSlug}, HeaderRequestID: {"req-1"}},
			want:    &DataResourceContext{WorkspaceID: "ws-1", WorkspaceSlug: "hint", MissionID: "mis-3", AgentSlug: studiotest.AgentSlug, RequestID: "req-1"}},
		{name: "metadata unpadded",
			headers: map[string][]string{HeaderMissionID: {"mis-3"}, HeaderMissionMetadata: {enc(`{"filter":{"contact":"c-1"}}`)}},
			want: &DataResourceContext{MissionID: "mis-3",
				Mission: &contracts.MissionContext{ID: "mis-3", Metadata: json.RawMessage(`{"filter":{"contact":"c-1"}}`)}}},
		{name: "metadata padded",
			headers: map[string][]string{HeaderMissionID: {"mis-3"}, HeaderMissionMetadata: {base64.URLEncoding.EncodeToString([]byte(`{"a":1}`))}},
			want:    &DataResourceContext{MissionID: "mis-3", Mission: &contracts.MissionContext{ID: "mis-3", Metadata: json.RawMessage(`{"a":1}`)}}},
		{name: "verified context wins",
			headers:  map[string][]string{HeaderWorkspaceID: {"ws-1"}, HeaderWorkspaceSlug: {"spoofed"}},
			verified: verified,
			want:     &DataResourceContext{WorkspaceID: "ws-1", WorkspaceSlug: "acme", AgentSlug: studiotest.AgentSlug, WorkspaceAuthorization: verified}},
		{name: "workspace contradicts the token", headers: map[string][]string{HeaderWorkspaceID: {"ws-2"}}, verified: verified,
			wantStatus: http.StatusForbidden, wantMsg: "does not match the verified workspace"},
		{name: "metadata without mission id", headers: map[string][]string{HeaderMissionMetadata: {enc(`{}`)}},
			wantStatus: 400, wantMsg: "requires X-Supervaize-Mission-Id"},
		{name: "not base64url", headers: map[string][]string{HeaderMissionID: {"m"}, HeaderMissionMetadata: {"eyJ+Ijox/Q"}},
			wantStatus: 400, wantMsg: "not valid base64url"},
		{name: "bad padding", headers: map[string][]string{HeaderMissionID: {"m"}, HeaderMissionMetadata: {"e30=="}},
			wantStatus: 400, wantMsg: "not valid base64url"},
		{name: "not UTF-8", headers: map[string][]string{HeaderMissionID: {"m"}, HeaderMissionMetadata: {enc("{\"a\":\"\xff\"}")}},
			wantStatus: 400, wantMsg: "not UTF-8 JSON"},
		{name: "not JSON", headers: map[string][]string{HeaderMissionID: {"m"}, HeaderMissionMetadata: {enc(`{a:1}`)}},
			wantStatus: 400, wantMsg: "not UTF-8 JSON"},
		{name: "empty value", headers: map[string][]string{HeaderMissionID: {"m"}, HeaderMissionMetadata: {""}},
			wantStatus: 400, wantMsg: "not UTF-8 JSON"},
		{name: "JSON array", headers: map[string][]string{HeaderMissionID: {"m"}, HeaderMissionMetadata: {enc(`[1]`)}},
			wantStatus: 400, wantMsg: "must be a JSON object"},
		{name: "JSON string", headers: map[string][]string{HeaderMissionID: {"m"}, HeaderMissionMetadata: {enc(`"{}"`)}},
			wantStatus: 400, wantMsg: "must be a JSON object"},
		{name: "repeated", headers: map[string][]string{HeaderMissionID: {"m"}, HeaderMissionMetadata: {enc(`{}`), enc(`{}`)}},
			wantStatus: 400, wantMsg: "repeated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/api/agents/research-agent/data/contacts/", nil)
			for k, vs := range tt.headers {
				for _, v := range vs {
					r.Header.Add(k, v)
				}
			}
			got, err := ParseDataResourceContext(r, nil, tt.verified)
			if tt.wantStatus != 0 {
				var he *ContextHeaderError
				require.ErrorAs(t, err, &he)
				assert.Equal(t, tt.wantStatus, he.StatusCode())
				assert.Contains(t, he.Error(), tt.wantMsg)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseDataResourceContextFromRequestContext(t *testing.T) {
	t.Parallel()
	vc := &contracts.VerifiedWorkspaceContext{WorkspaceID: "ws-1", AgentSlug: studiotest.AgentSlug}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r = r.WithContext(wsctx.With(r.Context(), vc))
	got, err := ParseDataResourceContext(r)
	require.NoError(t, err)
	assert.Same(t, vc, got.WorkspaceAuthorization)
	assert.Equal(t, "ws-1", got.WorkspaceID)
}

func TestContextHeadersRoundTrip(t *testing.T) {
	t.Parallel()
	meta := map[string]any{"filter": map[string]any{"contact": "Zoë"}, "limit": 3.0}
	h, err := ContextHeaders(ContextHeaderValues{WorkspaceID: "ws-1", MissionID: "mis-3", RequestID: "req-1", MissionMetadata: meta})
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header = h
	c, err := ParseDataResourceContext(r)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(c.Mission.Metadata, &back))
	assert.Equal(t, meta, back)
	assert.Equal(t, "mis-3", c.Mission.ID)
	assert.Empty(t, c.Mission.Name)
}

func FuzzParseDataResourceContext(f *testing.F) {
	f.Add("mis-3", base64.RawURLEncoding.EncodeToString([]byte(`{"filter":{"contact":"c-1"}}`)))
	f.Add("mis-3", "e30=")
	f.Add("", "e30")
	f.Add("m", "W10")
	f.Add("m", "eyJ+Ijox/Q")
	f.Add("m", strings.Repeat("A", 4097))
	f.Fuzz(func(t *testing.T, missionID, meta string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header[HeaderMissionID] = []string{missionID}
		r.Header[HeaderMissionMetadata] = []string{meta}
		c, err := ParseDataResourceContext(r)
		if err != nil {
			var he *ContextHeaderError
			if !errors.As(err, &he) || he.StatusCode() != http.StatusBadRequest {
				t.Fatalf("error %v is not a 400 ContextHeaderError", err)
			}
			return
		}
		if missionID == "" || len(meta) > MaxMissionMetadataHeaderBytes || c.Mission == nil || c.Mission.ID != missionID {
			t.Fatalf("accepted %q for mission %q", meta, missionID)
		}
		var obj map[string]any
		if !utf8.Valid(c.Mission.Metadata) || json.Unmarshal(c.Mission.Metadata, &obj) != nil || obj == nil {
			t.Fatalf("metadata %q is not a UTF-8 JSON object", c.Mission.Metadata)
		}
	})
}

func BenchmarkParseDataResourceContext(b *testing.B) {
	h, err := ContextHeaders(ContextHeaderValues{WorkspaceID: "ws-1", MissionID: "mis-3", AgentSlug: studiotest.AgentSlug, RequestID: "req-1",
		MissionMetadata: map[string]any{"filter": map[string]any{"contact": "c-1", "region": "eu"}}})
	require.NoError(b, err)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header = h
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseDataResourceContext(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkContextHeaders(b *testing.B) {
	v := ContextHeaderValues{WorkspaceID: "ws-1", MissionID: "mis-3", AgentSlug: studiotest.AgentSlug, RequestID: "req-1",
		MissionMetadata: map[string]any{"filter": map[string]any{"contact": "c-1", "region": "eu"}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ContextHeaders(v); err != nil {
			b.Fatal(err)
		}
	}
}
