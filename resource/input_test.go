package resource

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

func TestScopeKeyString(t *testing.T) {
	tests := []struct {
		key  ScopeKey
		want string
	}{
		{ScopeKey{Level: contracts.ScopeWorkspace, Workspace: "ws-1"}, "workspace:ws-1"},
		{ScopeKey{Level: contracts.ScopeWorkspace, Workspace: "ws-1", ByRef: true}, "ref:ws-1"},
		{ScopeKey{Level: contracts.ScopeMission, Workspace: "a/b", Mission: "m 1"}, "workspace:a%2Fb/mission:m%201"},
		{ScopeKey{Level: contracts.ScopeJob, Workspace: "r", ByRef: true, Job: "j/1"}, "ref:r/job:j%2F1"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.key.String())
		assert.False(t, seen[tt.want])
		seen[tt.want] = true
	}
	// A component cannot forge a separator.
	assert.NotEqual(t, ScopeKey{Workspace: "a/mission:b"}.String(), ScopeKey{Workspace: "a", Mission: "b"}.String())
}

func TestResolveContext(t *testing.T) {
	ws := &contracts.VerifiedWorkspaceContext{GrantID: "g", WorkspaceID: "ws-1", WorkspaceSlug: new("acme"), AgentSlug: "ag"}
	withRef := *ws
	withRef.AgentWorkspaceRef = new("acme-prod")
	emptyRef := *ws
	emptyRef.AgentWorkspaceRef = new("")
	tests := []struct {
		name     string
		level    string
		requires []string
		call     call
		want     ScopeKey
		missing  string // field of the missing_context error
	}{
		{"workspace by id", contracts.ScopeWorkspace, contracts.DefaultRequiresContext(), call{ws: ws},
			ScopeKey{Level: "workspace", Workspace: "ws-1"}, ""},
		{"workspace by ref", "", nil, call{ws: &withRef, missionID: "m"},
			ScopeKey{Level: "workspace", Workspace: "acme-prod", ByRef: true}, ""},
		{"an empty ref is no ref", "", nil, call{ws: &emptyRef}, ScopeKey{Level: "workspace", Workspace: "ws-1"}, ""},
		{"mission", contracts.ScopeMission, nil, call{ws: ws, missionID: "m", jobID: "j"},
			ScopeKey{Level: "mission", Workspace: "ws-1", Mission: "m"}, ""},
		{"mission missing", contracts.ScopeMission, nil, call{ws: ws, jobID: "j"}, ScopeKey{}, "mission_id"},
		{"job", contracts.ScopeJob, nil, call{ws: ws, missionID: "m", jobID: "j"},
			ScopeKey{Level: "job", Workspace: "ws-1", Job: "j"}, ""},
		{"job missing", contracts.ScopeJob, nil, call{ws: ws, missionID: "m"}, ScopeKey{}, "job_id"},
		{"no verified context", "", nil, call{}, ScopeKey{}, "workspace_authorization"},
		{"no workspace id", "", nil, call{ws: &contracts.VerifiedWorkspaceContext{}}, ScopeKey{}, "workspace.id"},
		{"requires slug", "", []string{"workspace.slug"}, call{ws: ws}, ScopeKey{Level: "workspace", Workspace: "ws-1"}, ""},
		{"requires ref", "", []string{"agent_workspace_ref"}, call{ws: ws}, ScopeKey{}, "agent_workspace_ref"},
		{"requires metadata", "", []string{"mission.metadata"}, call{ws: ws, missionID: "m"}, ScopeKey{}, "mission.metadata"},
		{"requires case", "", []string{"case_id"}, call{ws: ws, caseID: "c"}, ScopeKey{Level: "workspace", Workspace: "ws-1"}, ""},
		{"requires step", "", []string{"step.id"}, call{ws: ws}, ScopeKey{}, "step.id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc, oe := resolveContext("r", "list", tt.level, tt.requires, tt.call)
			if tt.missing != "" {
				require.NotNil(t, oe)
				assert.Equal(t, 400, oe.Status)
				require.Len(t, oe.Errs, 1)
				assert.Equal(t, contracts.ErrorMissingContext, oe.Errs[0].Code)
				assert.Equal(t, tt.missing, oe.Errs[0].Field)
				assert.Contains(t, oe.Detail, tt.missing)
				return
			}
			require.Nil(t, oe)
			assert.Equal(t, tt.want, rc.Scope)
			assert.Equal(t, "r", rc.Resource)
			assert.Equal(t, "list", rc.Operation)
		})
	}
}

func TestCheckRequiredContext(t *testing.T) {
	assert.NoError(t, checkRequiredContext(nil))
	assert.NoError(t, checkRequiredContext([]string{"workspace.id", "mission_id", "job.id"}))
	assert.ErrorContains(t, checkRequiredContext([]string{"workspace.id", "Workspace.ID"}), `"Workspace.ID"`)
}

func TestListQueryInput(t *testing.T) {
	in := readInput(json.RawMessage(`{"limit":5,"offset":10,"search":"ann","filters":{"n":12345678901234567890},"Limit":999}`))
	q := in.listQuery()
	require.False(t, in.failed())
	assert.Equal(t, ListQuery{Limit: 5, Offset: 10, Search: "ann", Filters: map[string]any{"n": json.Number("12345678901234567890")}}, q)

	in = readInput(nil)
	assert.Equal(t, ListQuery{Limit: defaultPageLimit}, in.listQuery())
	in = readInput(json.RawMessage(`{"limit":null}`))
	assert.Equal(t, defaultPageLimit, in.listQuery().Limit, "null is absent")

	in = readInput(json.RawMessage(`[1]`))
	in.listQuery()
	require.Len(t, in.probs, 1)
	assert.Equal(t, "/input", in.probs[0].Path)

	in = readInput(json.RawMessage(`{"limit":"5","offset":1e3,"search":false}`))
	in.listQuery()
	var paths []string
	for _, p := range in.probs {
		paths = append(paths, p.Path)
	}
	assert.Equal(t, []string{"/input/limit", "/input/offset", "/input/search"}, paths)
}

func FuzzResourceInput(f *testing.F) {
	for _, s := range []string{`{}`, `{"limit":5,"offset":1}`, `{"limit":1e309}`, `{"id":"x","item":{"a":1}}`,
		`{"content":"YQ==","encoding":"base64","fields":{"a":[1]}}`, `[`, `null`, `{"filters":{"a":{"b":null}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		in := readInput(raw)
		q := in.listQuery()
		in.str("id", true)
		in.object("item", true)
		in.importInput()
		if len(in.probs) == 0 || q.Limit != defaultPageLimit {
			require.GreaterOrEqual(t, q.Limit, 1)
			require.LessOrEqual(t, q.Limit, maxPageLimit)
			require.GreaterOrEqual(t, q.Offset, 0)
		}
		require.Equal(t, len(in.probs) > 0, in.failed())
		for _, p := range in.probs {
			require.True(t, strings.HasPrefix(p.Path, "/input"), p.Path)
			require.NotEmpty(t, p.Type)
		}
	})
}

func TestDecodeJSONObject(t *testing.T) {
	for raw, ok := range map[string]bool{
		`{"a":1}`: true, ` {"a":{"b":[1]}} `: true, `{}`: true,
		`null`: false, `[]`: false, `{"a":1}]`: false, `{"a":1} {}`: false, `{"a":1} x`: false, `{`: false, ``: false, `"x"`: false,
	} {
		m, err := decodeJSONObject([]byte(raw))
		if ok {
			assert.NoError(t, err, raw)
			assert.NotNil(t, m, raw)
		} else {
			assert.Error(t, err, raw)
		}
	}
	m, err := decodeJSONObject([]byte(`{"n":12345678901234567890}`))
	require.NoError(t, err)
	assert.Equal(t, json.Number("12345678901234567890"), m["n"])
}

func TestImportInput(t *testing.T) {
	tests := []struct {
		name, input string
		wantData    string
		wantProblem string // path of the first problem
	}{
		{"text", `{"content":"email\na"}`, "email\na", ""},
		{"base64", `{"content":"ZW1haWwKYQ==","encoding":"base64"}`, "email\na", ""},
		{"base64 unpadded", `{"content":"ZW1haWwKYQ","encoding":"base64"}`, "email\na", ""},
		{"no content", `{"format":"csv"}`, "", "/input/content"},
		{"bad base64", `{"content":"***","encoding":"base64"}`, "", "/input/content"},
		{"bad encoding", `{"content":"a","encoding":"utf-16"}`, "", "/input/encoding"},
		{"fields not an object", `{"content":"a","fields":[1]}`, "", "/input/fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := readInput(json.RawMessage(tt.input))
			f := in.importInput()
			if tt.wantProblem == "" {
				require.Empty(t, in.probs)
				assert.Equal(t, tt.wantData, string(f.data))
				return
			}
			require.NotEmpty(t, in.probs)
			assert.Equal(t, tt.wantProblem, in.probs[0].Path)
			assert.True(t, in.failed())
		})
	}
}
