package studio

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/studiotest"
)

const (
	searchPath = "/w/ws-1/api/v1/context/search/"
	openPath   = "/w/ws-1/api/v1/context/open/"
)

func TestContextSearchRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  SearchRequest
		want string
	}{
		{"defaults", SearchRequest{Query: "billing"}, `{"query":"billing","limit":5}`},
		{"everything", SearchRequest{Query: "billing", Limit: 3, MissionID: "mis-3", Scope: "mission", Tags: []string{"ops"}, ExpectedWorkspaceID: studiotest.Workspace},
			`{"query":"billing","limit":3,"mission_id":"mis-3","scope":"mission","tags":["ops"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := studiotest.New(t)
			f.Answer("POST /context/search/", http.StatusOK, `{"query":"billing","results":[
				{"ref":"supervaize.context.workspace.billing","title":"Billing","scope":"workspace","source_type":"text","version":1,
				 "tags":["ops"],"excerpt":"Billing policy","score":3,
				 "citation":{"ref":"supervaize.context.workspace.billing","title":"Billing","source_type":"text","version":1}},
				{"ref":"supervaize.context.workspace.bare","title":"Bare","scope":"workspace","source_type":"text","version":2}]}`)
			resp, err := testClient(t, f).Context().Search(context.Background(), tt.req)
			require.NoError(t, err)
			reqs := f.Recorded()
			require.Len(t, reqs, 1)
			assert.Equal(t, searchPath, reqs[0].Path)
			assert.Equal(t, "Api-Key "+studiotest.AccountKey, reqs[0].Header.Get("Authorization"))
			assert.JSONEq(t, tt.want, string(reqs[0].Body))

			require.Len(t, resp.Results, 2)
			assert.Equal(t, ContextSearchResult{Ref: "supervaize.context.workspace.billing", Title: "Billing", Scope: "workspace",
				SourceType: "text", Version: 1, Tags: []string{"ops"}, Excerpt: "Billing policy", Score: 3,
				Citation: &ContextCitation{Ref: "supervaize.context.workspace.billing", Title: "Billing", SourceType: "text", Version: 1}}, resp.Results[0])
			assert.Equal(t, ContextSearchResult{Ref: "supervaize.context.workspace.bare", Title: "Bare", Scope: "workspace",
				SourceType: "text", Version: 2, Tags: []string{}}, resp.Results[1], "defaults for absent keys")
		})
	}
}

func TestContextOpenRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  OpenRequest
		want string
	}{
		{"defaults", OpenRequest{Ref: "supervaize.context.mission.january-brief"}, `{"ref":"supervaize.context.mission.january-brief","max_chars":3000}`},
		{"everything", OpenRequest{Ref: "supervaize.context.mission.january-brief", MaxChars: 9000, MissionID: "mis-3", Query: "pricing"},
			`{"ref":"supervaize.context.mission.january-brief","max_chars":9000,"mission_id":"mis-3","query":"pricing"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := studiotest.New(t)
			f.Answer("POST /context/open/", http.StatusOK, `{"ref":"supervaize.context.mission.january-brief","title":"January brief",
				"scope":"mission","source_type":"text","version":3,"content":"Prices rise in February."}`)
			doc, err := testClient(t, f).Context().Open(context.Background(), tt.req)
			require.NoError(t, err)
			reqs := f.Recorded()
			require.Len(t, reqs, 1)
			assert.Equal(t, openPath, reqs[0].Path)
			assert.JSONEq(t, tt.want, string(reqs[0].Body))
			assert.Equal(t, &ContextDocument{Ref: "supervaize.context.mission.january-brief", Title: "January brief", Scope: "mission",
				SourceType: "text", Version: 3, Content: "Prices rise in February.", Tags: []string{}, Citations: []ContextCitation{}}, doc)
		})
	}
}

func TestContextClientChecksBeforeSending(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	c := testClient(t, f).Context()
	ctx := context.Background()
	_, err := c.Search(ctx, SearchRequest{Query: "q", MissionID: "  "})
	require.ErrorContains(t, err, "mission_id must be a non-empty string")
	_, err = c.Open(ctx, OpenRequest{Ref: "r", MissionID: "\t"})
	require.ErrorContains(t, err, "mission_id must be a non-empty string")
	_, err = c.Search(ctx, SearchRequest{Query: "q", ExpectedWorkspaceID: "ws-2"})
	require.ErrorContains(t, err, `expected workspace "ws-2"`)
	_, err = c.Open(ctx, OpenRequest{Ref: "r", ExpectedWorkspaceID: "ws-2"})
	require.ErrorContains(t, err, `expected workspace "ws-2"`)
	_, err = c.Open(ctx, OpenRequest{Ref: " "})
	require.ErrorContains(t, err, "ref is required")
	_, err = c.Open(ctx, OpenRequest{Ref: "r", MaxChars: -1})
	require.ErrorContains(t, err, "max_chars")
	_, err = c.Search(ctx, SearchRequest{Query: "q", Limit: -2})
	require.ErrorContains(t, err, "limit")
	_, err = c.Search(ctx, SearchRequest{Query: "q", Scope: "job"})
	require.ErrorContains(t, err, "scope")
	assert.Empty(t, f.Recorded(), "nothing is sent")

	f.Answer("POST /context/open/", http.StatusNotFound, `{"detail":"Unknown ref"}`)
	_, err = c.Open(ctx, OpenRequest{Ref: "r"})
	var se *StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusNotFound, se.StatusCode)
	f.Answer("POST /context/search/", http.StatusOK, `[]`)
	_, err = c.Search(ctx, SearchRequest{Query: "q"})
	require.ErrorContains(t, err, "not a JSON object")
}

// stubOpener answers from a version table and counts the opens.
type stubOpener struct {
	versions map[string]int
	err      error
	calls    []OpenRequest
}

func (s *stubOpener) Open(_ context.Context, req OpenRequest) (*ContextDocument, error) {
	s.calls = append(s.calls, req)
	if s.err != nil {
		return nil, s.err
	}
	return &ContextDocument{Ref: req.Ref, Title: "T " + req.Ref, Version: s.versions[req.Ref], SourceType: "text",
		Content: "content of " + req.Ref, Tags: []string{}, Citations: []ContextCitation{}}, nil
}

func TestContextAssign(t *testing.T) {
	t.Parallel()
	synced := time.Date(2026, 10, 11, 9, 30, 0, 0, time.FixedZone("CEST", 2*3600))
	hash := func(s string) string { sum := sha256.Sum256([]byte(s)); return "sha256:" + hex.EncodeToString(sum[:]) }
	tests := []struct {
		name      string
		input     string
		versions  map[string]int
		openErr   error
		wantCode  string // "" = ok
		wantErr   string
		wantOpens []OpenRequest
		wantSaved int // -1 = Save not called
	}{
		{name: "not an object", input: `[]`, wantCode: contracts.ErrorInvalidContextAssignment, wantSaved: -1},
		{name: "missing job_id", input: `{"items":[],"assigned_at":"2026-10-11T07:00:00Z"}`, wantCode: contracts.ErrorInvalidContextAssignment, wantSaved: -1},
		{name: "bad scope", input: `{"job_id":"j","assigned_at":"2026-10-11T07:00:00Z","items":[{"ref":"a","version":1,"scope":"job","title":"A"}]}`,
			wantCode: contracts.ErrorInvalidContextAssignment, wantSaved: -1},
		{name: "mission item without mission_id", input: `{"job_id":"j","assigned_at":"2026-10-11T07:00:00Z","items":[{"ref":"m","version":1,"scope":"mission","title":"M"}]}`,
			wantCode: contracts.ErrorInvalidContextAssignment, wantSaved: -1},
		{name: "empty items means no context", input: `{"job_id":"j","assigned_at":"2026-10-11T07:00:00Z","items":[]}`, wantSaved: 0},
		{name: "version mismatch stores nothing",
			input:    `{"job_id":"j","mission_id":"mis-3","assigned_at":"2026-10-11T07:00:00Z","items":[{"ref":"w","version":1,"scope":"workspace","title":"W"},{"ref":"m","version":2,"scope":"mission","title":"M"}]}`,
			versions: map[string]int{"w": 1, "m": 3}, wantCode: contracts.ErrorContextVersionMismatch,
			wantOpens: []OpenRequest{{Ref: "w", MaxChars: 20000}, {Ref: "m", MaxChars: 20000, MissionID: "mis-3"}}, wantSaved: -1},
		{name: "frozen snapshots",
			input:     `{"job_id":"j","mission_id":"mis-3","assigned_at":"2026-10-11T07:00:00Z","items":[{"ref":"w","version":1,"scope":"workspace","title":"W"},{"ref":"m","version":2,"scope":"mission","title":"M"},{"ref":"w","version":1,"scope":"workspace","title":"W"}]}`,
			versions:  map[string]int{"w": 1, "m": 2},
			wantOpens: []OpenRequest{{Ref: "w", MaxChars: 20000}, {Ref: "m", MaxChars: 20000, MissionID: "mis-3"}}, wantSaved: 2},
		{name: "open failure", input: `{"job_id":"j","assigned_at":"2026-10-11T07:00:00Z","items":[{"ref":"w","version":1,"scope":"workspace","title":"W"}]}`,
			openErr: errors.New("studio down"), wantErr: "studio down", wantOpens: []OpenRequest{{Ref: "w", MaxChars: 20000}}, wantSaved: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			op := &stubOpener{versions: tt.versions, err: tt.openErr}
			saved := -1
			var snaps []ContextSnapshot
			ca := &ContextAssigner{Opener: op, MaxChars: 20000, Now: func() time.Time { return synced },
				Save: func(_ context.Context, a *contracts.ContextAssignment, s []ContextSnapshot) error {
					assert.Equal(t, "j", a.JobID)
					saved, snaps = len(s), s
					return nil
				}}
			res, err := ca.Handle(context.Background(), &contracts.ActionRequest{Input: json.RawMessage(tt.input)})
			assert.Equal(t, tt.wantOpens, op.calls, "each ref opened once")
			assert.Equal(t, tt.wantSaved, saved)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			_, verr := contracts.DefaultValidator().ValidateValue(contracts.ModelActionResult, res)
			require.NoError(t, verr, "the result honours the contract")
			if tt.wantCode != "" {
				assert.Equal(t, contracts.StatusError, res.Status)
				require.Len(t, res.Errors, 1)
				assert.Equal(t, tt.wantCode, res.Errors[0].Code)
				if tt.wantCode == contracts.ErrorContextVersionMismatch {
					assert.Contains(t, res.Errors[0].Message, "m (assigned version 2, current 3)")
					assert.JSONEq(t, `["m"]`, string(res.Errors[0].Extra["refs"]))
				}
				return
			}
			assert.Equal(t, contracts.StatusOK, res.Status)
			require.Len(t, res.Effects, 1)
			e := res.Effects[0]
			assert.Equal(t, EffectContextAssigned, e.Type)
			assert.Equal(t, tt.wantSaved, *e.Count)
			for i, s := range snaps {
				assert.Equal(t, ContextProvenance{Ref: s.Ref, Version: s.Version, Hash: hash("content of " + s.Ref),
					SyncedAt: "2026-10-11T07:30:00Z", MaxChars: 20000}, s.Provenance)
				assert.Equal(t, s.Provenance.Hash, e.Items[i]["hash"])
			}
		})
	}
}

func TestContextAssignThroughStudio(t *testing.T) {
	t.Parallel()
	f := studiotest.New(t)
	f.Answer("POST /context/open/", http.StatusOK, `{"ref":"supervaize.context.mission.january-brief","title":"January brief","scope":"mission","version":3,"content":"Brief"}`)
	var got []ContextSnapshot
	ca := &ContextAssigner{Opener: testClient(t, f).Context(), Save: func(_ context.Context, _ *contracts.ContextAssignment, s []ContextSnapshot) error {
		got = s
		return nil
	}}
	res, err := ca.Assign(context.Background(), json.RawMessage(`{"job_id":"job-1","mission_id":"mis-3","assigned_at":"2026-10-11T07:00:00Z",
		"items":[{"ref":"supervaize.context.mission.january-brief","version":3,"scope":"mission","title":"January brief"}]}`))
	require.NoError(t, err)
	assert.Equal(t, contracts.StatusOK, res.Status)
	require.Len(t, got, 1)
	assert.Equal(t, DefaultContextMaxChars, got[0].Provenance.MaxChars)
	reqs := f.Recorded()
	require.Len(t, reqs, 1)
	assert.JSONEq(t, `{"ref":"supervaize.context.mission.january-brief","max_chars":3000,"mission_id":"mis-3"}`, string(reqs[0].Body))
}
