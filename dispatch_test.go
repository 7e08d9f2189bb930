package supervaizer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// tokenMode selects the X-Supervaize-Workspace-Authorization header of a golden case.
type tokenMode int

const (
	tokenNone      tokenMode = iota // no header
	tokenValid                      // valid for every test call
	tokenUntrusted                  // signed by a key the server does not trust
	tokenMalformed                  // not a JWS
	tokenNarrow                     // valid, but scopes only supervaizer/action.invoke and job.start
)

// header returns the header value of m for a call to h.
func (m tokenMode) header(tb testing.TB, h *harness) string {
	switch m {
	case tokenValid:
		return "Bearer " + h.validToken()
	case tokenUntrusted:
		return "Bearer " + mintToken(svtest.NewFakeStudio(tb), nil)
	case tokenMalformed:
		return "Bearer not-a-token"
	case tokenNarrow:
		return "Bearer " + mintToken(h.studio, func(c *svtest.Claims) {
			c.Scopes = []string{supervaizer.MethodActionInvoke, "job.start"}
		})
	}
	return ""
}

// goldenCase is the expectation of testdata/rpc/<name>.request.json, stated
// here so that a wrong update of the files cannot go unnoticed.
type goldenCase struct {
	token tokenMode
	code  errcode.Code // 0: success
	runs  bool         // a handler body runs
}

// rpcGoldenCases covers every row of the error table of the protocol and
// the successful calls (ids string, integer, integral float, null and absent;
// wrapped and flat params).
var rpcGoldenCases = map[string]goldenCase{
	"parse_error_truncated":                          {tokenValid, errcode.ParseError, false},
	"parse_error_not_json":                           {tokenValid, errcode.ParseError, false},
	"invalid_request_batch":                          {tokenValid, errcode.InvalidRequest, false},
	"invalid_request_scalar":                         {tokenValid, errcode.InvalidRequest, false},
	"invalid_request_jsonrpc_version":                {tokenValid, errcode.InvalidRequest, false},
	"invalid_request_method_missing":                 {tokenValid, errcode.InvalidRequest, false},
	"invalid_request_method_not_string":              {tokenValid, errcode.InvalidRequest, false},
	"invalid_request_id_boolean":                     {tokenValid, errcode.InvalidRequest, false},
	"invalid_request_id_fractional":                  {tokenValid, errcode.InvalidRequest, false},
	"invalid_request_id_array":                       {tokenValid, errcode.InvalidRequest, false},
	"invalid_request_params_array":                   {tokenValid, errcode.InvalidRequest, false},
	"invalid_request_params_string":                  {tokenValid, errcode.InvalidRequest, false},
	"method_not_found":                               {tokenValid, errcode.MethodNotFound, false},
	"invalid_params_action_empty":                    {tokenValid, errcode.InvalidParams, false},
	"invalid_params_action_mission_id_mismatch":      {tokenValid, errcode.InvalidParams, false},
	"invalid_params_action_mission_metadata_null":    {tokenValid, errcode.InvalidParams, false},
	"invalid_params_action_mission_metadata_string":  {tokenValid, errcode.InvalidParams, false},
	"invalid_params_action_mission_metadata_array":   {tokenValid, errcode.InvalidParams, false},
	"invalid_params_action_request_id_number":        {tokenValid, errcode.InvalidParams, false},
	"invalid_params_action_input_array":              {tokenValid, errcode.InvalidParams, false},
	"invalid_params_action_wrapped_not_object":       {tokenValid, errcode.InvalidParams, false},
	"invalid_params_action_typed_input":              {tokenValid, errcode.InvalidParams, false},
	"invalid_params_action_case_variant_key":         {tokenNone, errcode.InvalidParams, false},
	"invalid_params_surface_empty":                   {tokenValid, errcode.InvalidParams, false},
	"invalid_params_surface_mission_id_mismatch":     {tokenValid, errcode.InvalidParams, false},
	"invalid_params_surface_workspace_id_number":     {tokenValid, errcode.InvalidParams, false},
	"invalid_params_surface_mission_metadata_string": {tokenValid, errcode.InvalidParams, false},
	"action_not_registered":                          {tokenValid, errcode.ActionNotRegistered, false},
	"surface_not_registered":                         {tokenValid, errcode.SurfaceNotRegistered, false},
	"unauthorized_missing_token":                     {tokenNone, errcode.Unauthorized, false},
	"unauthorized_invalid_token":                     {tokenUntrusted, errcode.Unauthorized, false},
	"unauthorized_malformed_token":                   {tokenMalformed, errcode.Unauthorized, false},
	"unauthorized_missing_scope":                     {tokenNarrow, errcode.Unauthorized, false},
	"unauthorized_wrong_workspace":                   {tokenValid, errcode.Unauthorized, false},
	"unauthorized_unknown_agent":                     {tokenValid, errcode.Unauthorized, false},
	"unauthorized_unregistered_action":               {tokenNone, errcode.Unauthorized, false},
	"unauthorized_custom_binding_action":             {tokenNone, errcode.Unauthorized, false},
	"unauthorized_surface_missing_token":             {tokenNone, errcode.Unauthorized, false},
	"unauthorized_surface_binding_options":           {tokenNone, errcode.Unauthorized, false},
	"handler_failed_error":                           {tokenValid, errcode.InternalError, true},
	"handler_failed_error_invalid_params":            {tokenValid, errcode.InternalError, true},
	"handler_failed_error_coded":                     {tokenValid, errcode.InternalError, true},
	"handler_failed_error_parse_error":               {tokenValid, errcode.InternalError, true},
	"handler_failed_error_invalid_request":           {tokenValid, errcode.InternalError, true},
	"handler_failed_error_method_not_found":          {tokenValid, errcode.InternalError, true},
	"handler_failed_error_internal_error":            {tokenValid, errcode.InternalError, true},
	"handler_failed_error_action_not_registered":     {tokenValid, errcode.InternalError, true},
	"handler_failed_error_surface_not_registered":    {tokenValid, errcode.InternalError, true},
	"handler_failed_error_blocked":                   {tokenValid, errcode.InternalError, true},
	"handler_failed_error_recovery_required":         {tokenValid, errcode.InternalError, true},
	"handler_failed_error_checkpoint_request":        {tokenValid, errcode.InternalError, true},
	"handler_failed_error_resource_error":            {tokenValid, errcode.InternalError, true},
	"handler_failed_error_not_found":                 {tokenValid, errcode.InternalError, true},
	"handler_failed_error_context_canceled":          {tokenValid, errcode.InternalError, true},
	"handler_failed_panic":                           {tokenValid, errcode.InternalError, true},
	"handler_failed_invalid_result":                  {tokenValid, errcode.InternalError, true},
	"handler_failed_nil_result":                      {tokenValid, errcode.InternalError, true},
	"surface_failed_missing_document":                {tokenValid, errcode.InternalError, true},
	"surface_failed_invalid_document":                {tokenValid, errcode.InternalError, true},
	"surface_failed_error":                           {tokenValid, errcode.InternalError, true},
	"ok_action_id_string_wrapped":                    {tokenValid, 0, true},
	"ok_action_id_integer_flat":                      {tokenValid, 0, true},
	"ok_action_id_integral_float":                    {tokenValid, 0, true},
	"ok_action_id_null":                              {tokenValid, 0, true},
	"ok_action_id_absent":                            {tokenValid, 0, true},
	"ok_action_jsonrpc_absent":                       {tokenValid, 0, true},
	"ok_action_typed_input":                          {tokenValid, 0, true},
	"ok_action_business_error":                       {tokenValid, 0, true},
	"ok_action_empty_effects":                        {tokenValid, 0, true},
	"ok_action_client_authorization_discarded":       {tokenValid, 0, true},
	"ok_action_open_model":                           {tokenValid, 0, true},
	"ok_action_bootstrap_options_no_token":           {tokenNone, 0, true},
	"ok_action_bootstrap_create_with_token":          {tokenValid, 0, true},
	"ok_action_bootstrap_create_invalid_token":       {tokenUntrusted, 0, true},
	"ok_surface_id_string_wrapped":                   {tokenValid, 0, true},
	"ok_surface_id_integer_flat":                     {tokenValid, 0, true},
	"ok_surface_id_null":                             {tokenValid, 0, true},
	"ok_surface_id_absent":                           {tokenValid, 0, true},
	"ok_surface_bootstrap_no_token":                  {tokenNone, 0, true},
}

// sortedGoldenNames returns the golden case names in a stable order.
func sortedGoldenNames() []string {
	names := make([]string, 0, len(rpcGoldenCases))
	for name := range rpcGoldenCases {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// goldenRequest reads testdata/rpc/<name>.request.json (the raw HTTP body).
func goldenRequest(tb testing.TB, name string) []byte {
	tb.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", "rpc", name+".request.json"))
	require.NoError(tb, err)
	return body
}

// serveGolden sends the golden request of name with the write key.
func serveGolden(tb testing.TB, h *harness, name string) *httptest.ResponseRecorder {
	tb.Helper()
	return h.serve(rpcCall{body: goldenRequest(tb, name), key: testWriteKey, token: rpcGoldenCases[name].token.header(tb, h)})
}

func TestRPCGoldenFilesMatchTable(t *testing.T) {
	onDisk := goldenPairs(t, filepath.Join("testdata", "rpc"))
	for name := range rpcGoldenCases {
		assert.Equal(t, 2, onDisk[name], "%s needs a request and a response file (run SUPERVAIZER_UPDATE_GOLDEN=1 go test -run TestRPCGolden)", name)
	}
	for name := range onDisk {
		assert.Contains(t, rpcGoldenCases, name, "testdata/rpc/%s.* has no entry in rpcGoldenCases", name)
	}
}

func TestRPCGolden(t *testing.T) {
	for _, name := range sortedGoldenNames() {
		tc := rpcGoldenCases[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			w := serveGolden(t, h, name)
			require.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			got := w.Body.Bytes()
			require.True(t, json.Valid(got), "response is not JSON: %s", got)

			svtest.Golden(t, filepath.Join("testdata", "rpc", name+".response.json"), got)

			resp := decodeRPC(t, w)
			if tc.code == 0 {
				require.Nil(t, resp.Error, "body: %s", got)
				assert.NotEmpty(t, resp.Result)
			} else {
				require.NotNil(t, resp.Error, "body: %s", got)
				assert.Equal(t, int(tc.code), resp.Error.Code)
				assert.Nil(t, resp.Result)
			}
			if tc.runs {
				assert.EqualValues(t, 1, h.calls.Load(), "handler calls")
			} else {
				assert.Zero(t, h.calls.Load(), "no handler may run")
			}
			// Handler failures are logged, never sent.
			for _, secret := range []string{"hunter2", "secret-", "goroutine ", "runtime/debug"} {
				assert.NotContains(t, string(got), secret)
			}
		})
	}
}

// TestRPCErrorShapes checks, over every golden case, the data of each error
// code as the protocol states it.
func TestRPCErrorShapes(t *testing.T) {
	h := newHarness(t)
	for _, name := range sortedGoldenNames() {
		tc := rpcGoldenCases[name]
		if tc.code == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			resp := decodeRPC(t, serveGolden(t, h, name))
			require.NotNil(t, resp.Error)
			e := resp.Error
			var data map[string]any
			if len(e.Data) > 0 {
				require.NoError(t, json.Unmarshal(e.Data, &data))
			}
			switch tc.code {
			case errcode.ParseError:
				assert.Equal(t, "Parse error", e.Message)
				assert.Nil(t, data)
				assert.Nil(t, resp.ID)
			case errcode.MethodNotFound:
				assert.Equal(t, "Method not found: supervaizer/job.start", e.Message)
				assert.Nil(t, data)
			case errcode.InvalidRequest:
				assert.Equal(t, "Invalid Request", e.Message)
				assertProblems(t, data)
			case errcode.InvalidParams:
				if strings.Contains(name, "surface") {
					assert.Equal(t, "Invalid Supervaizer v2 surface request", e.Message)
				} else {
					assert.Equal(t, "Invalid Supervaizer v2 action request", e.Message)
				}
				assertProblems(t, data)
			case errcode.ActionNotRegistered:
				assert.Equal(t, "Action handler not registered: job.unhandled", e.Message)
				assert.Equal(t, map[string]any{"agent_slug": testAgentSlug, "action": "job.unhandled"}, data)
			case errcode.SurfaceNotRegistered:
				assert.Equal(t, "Surface handler not registered: surface.unhandled", e.Message)
				assert.Equal(t, map[string]any{"agent_slug": testAgentSlug, "surface": "surface.unhandled"}, data)
			case errcode.Unauthorized:
				require.Len(t, data, 1)
				assert.Regexp(t, `^workspace_authorization_[a-z_]+$`, data["code"])
				assert.NotEmpty(t, e.Message)
			case errcode.InternalError:
				require.Len(t, data, 2)
				assert.Equal(t, testAgentSlug, data["agent_slug"])
				if strings.HasPrefix(name, "surface_") {
					assert.Equal(t, "Surface handler failed", e.Message)
					assert.Contains(t, data, "surface")
				} else {
					assert.Equal(t, "Action handler failed", e.Message)
					assert.Contains(t, data, "action")
				}
			default:
				t.Fatalf("unexpected code %d", tc.code)
			}
		})
	}
}

// assertProblems checks data.errors: a non-empty list of {loc, msg, type}.
func assertProblems(tb testing.TB, data map[string]any) {
	tb.Helper()
	require.Contains(tb, data, "errors")
	list, ok := data["errors"].([]any)
	require.True(tb, ok, "data.errors must be a list: %v", data)
	require.NotEmpty(tb, list)
	for _, p := range list {
		m, ok := p.(map[string]any)
		require.True(tb, ok, "problem must be an object: %v", p)
		_, isList := m["loc"].([]any)
		assert.True(tb, isList, "loc must be a list: %v", m)
		assert.NotEmpty(tb, m["msg"])
		assert.NotEmpty(tb, m["type"])
	}
}

func TestRPCAuthorizationCodes(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name   string
		golden string
		want   string
	}{
		{"missing", "unauthorized_missing_token", "workspace_authorization_missing"},
		{"bad signature", "unauthorized_invalid_token", "workspace_authorization_bad_signature"},
		{"malformed", "unauthorized_malformed_token", "workspace_authorization_malformed"},
		{"missing scope", "unauthorized_missing_scope", "workspace_authorization_missing_scope"},
		{"wrong workspace", "unauthorized_wrong_workspace", "workspace_authorization_wrong_workspace"},
		{"unknown agent", "unauthorized_unknown_agent", "workspace_authorization_unknown_agent"},
		{"unregistered action, no token", "unauthorized_unregistered_action", "workspace_authorization_missing"},
		{"custom workspace_binding id", "unauthorized_custom_binding_action", "workspace_authorization_missing"},
		{"surface, no token", "unauthorized_surface_missing_token", "workspace_authorization_missing"},
		{"workspace_binding.options is not an exempt surface", "unauthorized_surface_binding_options", "workspace_authorization_missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := decodeRPC(t, serveGolden(t, h, tt.golden))
			require.NotNil(t, resp.Error)
			assert.JSONEq(t, `{"code":"`+tt.want+`"}`, string(resp.Error.Data))
		})
	}
	assert.Zero(t, h.calls.Load())

	t.Run("missing scope names the scope", func(t *testing.T) {
		resp := decodeRPC(t, serveGolden(t, h, "unauthorized_missing_scope"))
		assert.Contains(t, resp.Error.Message, "job.sync")
	})
	t.Run("agent not linked to Studio", func(t *testing.T) {
		u := newHarness(t, withUnlinkedAgent())
		resp := u.invoke(t, "Bearer "+u.validToken(), actionParams("job.sync", nil))
		require.NotNil(t, resp.Error)
		assert.JSONEq(t, `{"code":"workspace_authorization_agent_not_registered"}`, string(resp.Error.Data))
		assert.Zero(t, u.calls.Load())
	})
	t.Run("token for another agent id", func(t *testing.T) {
		tok := mintToken(h.studio, func(c *svtest.Claims) { c.AgentID = "studio-agent-7" })
		resp := h.invoke(t, "Bearer "+tok, actionParams("job.sync", nil))
		require.NotNil(t, resp.Error)
		assert.JSONEq(t, `{"code":"workspace_authorization_wrong_agent"}`, string(resp.Error.Data))
	})
	t.Run("expired token", func(t *testing.T) {
		tok := mintToken(h.studio, func(c *svtest.Claims) { c.ExpiresAt = time.Unix(testTokenIAT+600, 0) })
		resp := h.invoke(t, "Bearer "+tok, actionParams("job.sync", nil))
		require.NotNil(t, resp.Error)
		assert.JSONEq(t, `{"code":"workspace_authorization_expired"}`, string(resp.Error.Data))
	})
	assert.Zero(t, h.calls.Load())
}

// TestVerifiedContextReachesHandler checks that the handler sees the verified
// claims both in the request and in its context, whatever the client sent.
func TestVerifiedContextReachesHandler(t *testing.T) {
	h := newHarness(t)
	forged := map[string]any{"grant_id": "forged", "workspace_id": "ws-9", "agent_id": "x", "agent_slug": testAgentSlug,
		"server_id": "other", "scopes": []any{"*"}, "agent_workspace_ref": "other-tenant"}
	want := &contracts.VerifiedWorkspaceContext{
		GrantID: "grant-01", WorkspaceID: testWorkspaceID, WorkspaceSlug: new(testWorkspaceSlug),
		AgentID: testStudioAgentID, AgentSlug: testAgentSlug, ServerID: testServerID,
		Scopes: allTestScopes(), AgentWorkspaceRef: new("acme-prod"),
	}

	t.Run("action", func(t *testing.T) {
		resp := h.invoke(t, "Bearer "+h.validToken(), actionParams("job.sync", func(p map[string]any) { p["workspace_authorization"] = forged }))
		require.Nil(t, resp.Error)
		c := h.lastCall(t)
		assert.Equal(t, want, c.action.WorkspaceAuthorization)
		require.True(t, c.ctxHasWS)
		assert.Equal(t, want, c.ctxWS)
		assert.Equal(t, testAgentSlug, c.agentSlug)
	})
	t.Run("surface", func(t *testing.T) {
		body := rpcBody(t, 1, supervaizer.MethodSurfaceLoad, map[string]any{"surface_request": surfaceParams("job.start", func(p map[string]any) { p["workspace_authorization"] = forged })})
		resp := decodeRPC(t, h.serve(rpcCall{body: body, key: testWriteKey, token: "Bearer " + h.validToken()}))
		require.Nil(t, resp.Error)
		c := h.lastCall(t)
		assert.Equal(t, want, c.surface.WorkspaceAuthorization)
		assert.Equal(t, want, c.ctxWS)
	})
	t.Run("the token is read with any Bearer casing", func(t *testing.T) {
		resp := h.invoke(t, "bEaReR "+h.validToken(), actionParams("job.sync", nil))
		require.Nil(t, resp.Error)
	})
}

// TestBootstrapCallsRunWithoutToken checks the three exempt ids:
// no token needed, a sent token (valid or not) is not
// verified, and the handler gets no workspace context.
func TestBootstrapCallsRunWithoutToken(t *testing.T) {
	h := newHarness(t)
	forged := map[string]any{"grant_id": "forged", "workspace_id": testWorkspaceID}
	tokens := map[string]string{"no token": "", "valid token": "Bearer " + h.validToken(), "untrusted token": "Bearer " + mintToken(svtest.NewFakeStudio(t), nil)}
	for tokName, tok := range tokens {
		for _, id := range []string{contracts.BootstrapOptionsAction, contracts.BootstrapCreateAction} {
			t.Run(tokName+"/action "+id, func(t *testing.T) {
				resp := h.invoke(t, tok, actionParams(id, func(p map[string]any) { p["workspace_authorization"] = forged }))
				require.Nil(t, resp.Error, "%s", resp.Result)
				c := h.lastCall(t)
				assert.Equal(t, id, c.id)
				assert.Nil(t, c.action.WorkspaceAuthorization)
				assert.False(t, c.ctxHasWS)
			})
		}
		t.Run(tokName+"/surface "+contracts.BootstrapCreateSurface, func(t *testing.T) {
			body := rpcBody(t, 1, supervaizer.MethodSurfaceLoad, surfaceParams(contracts.BootstrapCreateSurface, func(p map[string]any) { p["workspace_authorization"] = forged }))
			resp := decodeRPC(t, h.serve(rpcCall{body: body, key: testWriteKey, token: tok}))
			require.Nil(t, resp.Error, "%s", resp.Result)
			c := h.lastCall(t)
			assert.Nil(t, c.surface.WorkspaceAuthorization)
			assert.False(t, c.ctxHasWS)
		})
	}
	t.Run("bootstrap calls still need the write key", func(t *testing.T) {
		before := h.calls.Load()
		for _, key := range []string{"", testReadKey} {
			w := h.serve(rpcCall{body: rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams(contracts.BootstrapOptionsAction, nil)), key: key})
			assert.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, w.Code)
		}
		assert.Equal(t, before, h.calls.Load())
	})
	t.Run("ids are matched exactly", func(t *testing.T) {
		before := h.calls.Load()
		for _, id := range []string{"workspace_binding.delete", "Workspace_binding.options", "workspace_binding.options ", "workspace_binding.*"} {
			resp := h.invoke(t, "", actionParams(id, nil))
			require.NotNil(t, resp.Error, id)
			assert.Equal(t, int(errcode.Unauthorized), resp.Error.Code, id)
		}
		assert.Equal(t, before, h.calls.Load())
	})
}

// TestLocalModeBypass checks the workspace-token rules.
func TestLocalModeBypass(t *testing.T) {
	local := func(t *testing.T, extra ...supervaizer.Option) *harness {
		opts := append([]supervaizer.Option{supervaizer.WithLocalMode(true)}, extra...)
		return newHarness(t, withoutWorkspaceAuth(), withServerOptions(opts...))
	}

	t.Run("action gets the local-mode context", func(t *testing.T) {
		h := local(t)
		resp := h.invoke(t, "", actionParams("job.sync", func(p map[string]any) {
			p["workspace_authorization"] = map[string]any{"grant_id": "forged"}
		}))
		require.Nil(t, resp.Error)
		c := h.lastCall(t)
		want := &contracts.VerifiedWorkspaceContext{
			GrantID: contracts.LocalModeGrantID, WorkspaceID: testWorkspaceID, WorkspaceSlug: new(testWorkspaceSlug),
			AgentID: testLegacyAgentID, AgentSlug: testAgentSlug, ServerID: testServerID,
			Scopes: []string{supervaizer.MethodActionInvoke, "job.sync"},
		}
		assert.Equal(t, want, c.action.WorkspaceAuthorization)
		assert.Equal(t, want, c.ctxWS)
	})
	t.Run("surface scopes are the surface's", func(t *testing.T) {
		h := local(t)
		body := rpcBody(t, 1, supervaizer.MethodSurfaceLoad, surfaceParams("job.start", func(p map[string]any) {
			p["workspace"] = map[string]any{"id": "ws-2"}
		}))
		resp := decodeRPC(t, h.serve(rpcCall{body: body, key: testWriteKey}))
		require.Nil(t, resp.Error, "%s", resp.Result)
		ws := h.lastCall(t).surface.WorkspaceAuthorization
		require.NotNil(t, ws)
		assert.Equal(t, []string{supervaizer.MethodSurfaceLoad, "job.start"}, ws.Scopes)
		assert.Equal(t, "ws-2", ws.WorkspaceID)
		assert.Nil(t, ws.WorkspaceSlug)
	})
	t.Run("a token is not needed and not verified", func(t *testing.T) {
		h := local(t)
		resp := h.invoke(t, "Bearer not-a-token", actionParams("job.sync", nil))
		require.Nil(t, resp.Error)
		assert.Equal(t, contracts.LocalModeGrantID, h.lastCall(t).ctxWS.GrantID)
	})
	t.Run("bootstrap calls still get no context", func(t *testing.T) {
		h := local(t)
		resp := h.invoke(t, "", actionParams(contracts.BootstrapOptionsAction, nil))
		require.Nil(t, resp.Error)
		assert.Nil(t, h.lastCall(t).action.WorkspaceAuthorization)
		assert.False(t, h.lastCall(t).ctxHasWS)
	})
	t.Run("unknown agent still fails", func(t *testing.T) {
		h := local(t)
		resp := h.invoke(t, "", actionParams("job.sync", func(p map[string]any) { p["agent_slug"] = "ghost-agent" }))
		require.NotNil(t, resp.Error)
		assert.Equal(t, int(errcode.Unauthorized), resp.Error.Code)
		assert.JSONEq(t, `{"code":"workspace_authorization_unknown_agent"}`, string(resp.Error.Data))
		assert.Zero(t, h.calls.Load())
	})
	t.Run("unregistered action after the bypass is -32010", func(t *testing.T) {
		h := local(t)
		resp := h.invoke(t, "", actionParams("job.nonexistent", nil))
		require.NotNil(t, resp.Error)
		assert.Equal(t, int(errcode.ActionNotRegistered), resp.Error.Code)
	})

	// Any configured setting disables the bypass.
	pem := svtest.NewFakeStudio(t).PublicKeyPEM()
	settings := map[string]supervaizer.WorkspaceAuthSettings{
		"issuer only":   {Issuer: testIssuer},
		"audience only": {Audience: "supervaizer-server:" + testServerID},
		"PEM only":      {PublicKeyPEM: pem},
		"JWKS URL only": {JWKSURL: "https://studio.example.com/jwks.json"},
	}
	for name, s := range settings {
		t.Run("option "+name+" fails closed", func(t *testing.T) {
			h := local(t, supervaizer.WithWorkspaceAuth(s))
			resp := h.invoke(t, "", actionParams("job.sync", nil))
			require.NotNil(t, resp.Error)
			assert.JSONEq(t, `{"code":"workspace_authorization_not_configured"}`, string(resp.Error.Data))
			assert.Zero(t, h.calls.Load())
		})
	}
	envs := map[string]string{
		"SUPERVAIZER_WORKSPACE_AUTH_ISSUER":     testIssuer,
		"SUPERVAIZER_WORKSPACE_AUTH_AUDIENCE":   "aud",
		"SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY": pem,
		"SUPERVAIZER_WORKSPACE_AUTH_JWKS_URL":   "https://studio.example.com/jwks.json",
	}
	for k, v := range envs {
		t.Run("env "+k+" fails closed", func(t *testing.T) {
			h := local(t, supervaizer.WithEnv(envOf(map[string]string{k: v})))
			resp := h.invoke(t, "", actionParams("job.sync", nil))
			require.NotNil(t, resp.Error)
			assert.JSONEq(t, `{"code":"workspace_authorization_not_configured"}`, string(resp.Error.Data))
		})
	}
	t.Run("local mode from the environment", func(t *testing.T) {
		h := newHarness(t, withoutWorkspaceAuth(), withServerOptions(supervaizer.WithEnv(envOf(map[string]string{"SUPERVAIZER_LOCAL_MODE": "true"}))))
		resp := h.invoke(t, "", actionParams("job.sync", nil))
		require.Nil(t, resp.Error)
		assert.Equal(t, contracts.LocalModeGrantID, h.lastCall(t).ctxWS.GrantID)
	})
	t.Run("enabled settings verify as usual", func(t *testing.T) {
		h := newHarness(t, withServerOptions(supervaizer.WithLocalMode(true))) // and its workspace auth
		resp := h.invoke(t, "", actionParams("job.sync", nil))
		require.NotNil(t, resp.Error)
		assert.JSONEq(t, `{"code":"workspace_authorization_missing"}`, string(resp.Error.Data))
		resp = h.invoke(t, "Bearer "+h.validToken(), actionParams("job.sync", nil))
		require.Nil(t, resp.Error)
		assert.Equal(t, "grant-01", h.lastCall(t).ctxWS.GrantID)
	})
	t.Run("not in local mode: not configured", func(t *testing.T) {
		h := newHarness(t, withoutWorkspaceAuth())
		resp := h.invoke(t, "", actionParams("job.sync", nil))
		require.NotNil(t, resp.Error)
		assert.JSONEq(t, `{"code":"workspace_authorization_not_configured"}`, string(resp.Error.Data))
	})
}

// TestNoHandlerRunsOnFailure sends every kind of rejected call and checks that
// no handler ran.
func TestNoHandlerRunsOnFailure(t *testing.T) {
	h := newHarness(t, withServerOptions(supervaizer.WithMaxBodyBytes(4096)))
	tok := "Bearer " + h.validToken()
	ok := rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.sync", nil))
	calls := []struct {
		name string
		call rpcCall
		code int
	}{
		{"no key", rpcCall{body: ok, token: tok}, http.StatusUnauthorized},
		{"read key", rpcCall{body: ok, key: testReadKey, token: tok}, http.StatusForbidden},
		{"too large", rpcCall{body: rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.sync", func(p map[string]any) {
			p["input"] = map[string]any{"pad": strings.Repeat("x", 5000)}
		})), key: testWriteKey, token: tok}, http.StatusRequestEntityTooLarge},
		{"envelope", rpcCall{body: []byte(`{"jsonrpc":"1.0","method":"supervaizer/action.invoke"}`), key: testWriteKey, token: tok}, http.StatusOK},
		{"params", rpcCall{body: rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.sync", func(p map[string]any) { delete(p, "actor") })), key: testWriteKey, token: tok}, http.StatusOK},
		{"workspace", rpcCall{body: ok, key: testWriteKey}, http.StatusOK},
		{"typed input", rpcCall{body: rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.start", func(p map[string]any) {
			p["input"] = map[string]any{"topic_id": 7}
		})), key: testWriteKey, token: tok}, http.StatusOK},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			w := h.serve(c.call)
			assert.Equal(t, c.code, w.Code, "body: %s", w.Body)
			if c.code == http.StatusOK {
				assert.NotNil(t, decodeRPC(t, w).Error)
			}
		})
	}
	assert.Zero(t, h.calls.Load())
}

// TestHandlerContextCancelledWhenClientGoesAway checks that a handler's ctx
// ends when the HTTP client disconnects.
func TestHandlerContextCancelledWhenClientGoesAway(t *testing.T) {
	h := newHarness(t, withSlowGate())
	ts, client := newHTTPServer(t, h.srv)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/a2a",
		bytes.NewReader(rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.slow", nil))))
	require.NoError(t, err)
	req.Header.Set(supervaizer.HeaderAPIKey, testWriteKey)
	req.Header.Set(supervaizer.HeaderWorkspaceAuthorization, "Bearer "+h.validToken())
	errc := make(chan error, 1)
	go func() {
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		errc <- err
	}()
	select {
	case <-h.slowStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("job.slow did not start")
	}
	cancel()
	select {
	case err := <-h.slowDone:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler context was not cancelled when the client went away")
	}
	assert.Error(t, <-errc)
}

// TestConcurrentInvocations runs 200 invocations at once (meant for -race).
func TestConcurrentInvocations(t *testing.T) {
	const n = 200
	h := newHarness(t, withServerOptions(supervaizer.WithSSEQueueSize(2*n)))
	tok := "Bearer " + h.validToken()
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			action, method := "job.sync", supervaizer.MethodActionInvoke
			var params map[string]any
			switch i % 4 {
			case 0:
				params = actionParams("job.start", nil)
				action = "job.start"
			case 1:
				params = actionParams("job.sync", nil)
			case 2:
				params = surfaceParams("job.start", nil)
				method = supervaizer.MethodSurfaceLoad
			case 3:
				params = actionParams(contracts.BootstrapOptionsAction, nil)
				action = contracts.BootstrapOptionsAction
			}
			params["request_id"] = "req-" + string(rune('A'+i%26)) + "-" + action
			body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": method, "params": params})
			if err != nil {
				errs <- err.Error()
				return
			}
			w := httptest.NewRecorder()
			h.srv.ServeHTTP(w, newRPCRequest(context.Background(), rpcCall{body: body, key: testWriteKey, token: tok}))
			var resp rpcResponse
			if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &resp) != nil || resp.Error != nil {
				errs <- w.Body.String()
				return
			}
			var id int
			if json.Unmarshal(resp.ID, &id) != nil || id != i {
				errs <- "wrong id " + string(resp.ID)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	assert.EqualValues(t, n, h.calls.Load())

	// Every action published exactly one event, with distinct increasing ids.
	ts, client := newHTTPServer(t, h.srv)
	s := openEvents(t, client, ts.URL, testReadKey, http.Header{"Last-Event-Id": {"0"}})
	require.Equal(t, "supervaizer.connected", s.next(t).Name)
	actions := n - n/4 // every fourth call is a surface load
	first, err := strconv.ParseUint(s.nextEffect(t).ID, 10, 64)
	require.NoError(t, err)
	for want := first + 1; want < first+uint64(actions); want++ {
		assert.Equal(t, strconv.FormatUint(want, 10), s.nextEffect(t).ID)
	}
}

// TestHandlerRegistrationSetupErrors checks the setup errors of the protocol.
func TestHandlerRegistrationSetupErrors(t *testing.T) {
	noop := func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(), nil
	}
	noopSurface := func(context.Context, *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
		return nil, nil
	}
	type typedIn struct {
		TopicID string `json:"topic_id"`
	}
	typed := func(context.Context, *supervaizer.ActionRequest, typedIn) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(), nil
	}
	newSingle := func(t *testing.T) (*supervaizer.Server, *supervaizer.Agent) {
		a := newTestAgent(t, testAgentName)
		srv, err := supervaizer.NewServer([]*supervaizer.Agent{a}, supervaizer.WithEnv(emptyEnv), supervaizer.WithServerID(testServerID))
		require.NoError(t, err)
		return srv, a
	}
	tests := []struct {
		name  string
		fn    func(t *testing.T)
		wants []string
	}{
		{"undeclared action", func(t *testing.T) {
			srv, _ := newSingle(t)
			srv.HandleAction("job.undeclared", noop)
		}, []string{`"job.undeclared"`, "not declared", testAgentSlug}},
		{"undeclared action, typed", func(t *testing.T) {
			srv, _ := newSingle(t)
			supervaizer.HandleActionFor(srv, "job.undeclared", typed)
		}, []string{`"job.undeclared"`, "not declared"}},
		{"undeclared surface", func(t *testing.T) {
			_, a := newSingle(t)
			a.HandleSurface("surface.undeclared", noopSurface)
		}, []string{`"surface.undeclared"`, "not declared", testAgentSlug}},
		{"action registered twice", func(t *testing.T) {
			srv, a := newSingle(t)
			srv.HandleAction("job.sync", noop)
			a.HandleAction("job.sync", noop)
		}, []string{`"job.sync"`, "already has a handler"}},
		{"typed action registered twice", func(t *testing.T) {
			srv, _ := newSingle(t)
			supervaizer.HandleActionFor(srv, "job.start", typed)
			supervaizer.HandleActionFor(srv, "job.start", typed)
		}, []string{`"job.start"`, "already has a handler"}},
		{"surface registered twice", func(t *testing.T) {
			srv, _ := newSingle(t)
			srv.HandleSurface("job.start", noopSurface)
			srv.HandleSurface("job.start", noopSurface)
		}, []string{`"job.start"`, "already has a handler"}},
		{"multi-agent server without slug: action", func(t *testing.T) {
			srv := newMultiAgentServer(t)
			srv.HandleAction("job.sync", noop)
		}, []string{"HandleAction", "agent_slug is required"}},
		{"multi-agent server without slug: surface", func(t *testing.T) {
			srv := newMultiAgentServer(t)
			srv.HandleSurface("job.start", noopSurface)
		}, []string{"HandleSurface", "agent_slug is required"}},
		{"multi-agent server without slug: typed", func(t *testing.T) {
			srv := newMultiAgentServer(t)
			supervaizer.HandleActionFor(srv, "job.start", typed)
		}, []string{"HandleActionFor", "agent_slug is required"}},
		{"nil handler", func(t *testing.T) {
			srv, _ := newSingle(t)
			srv.HandleAction("job.sync", nil)
		}, []string{`"job.sync"`, "nil handler"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := panicMessage(func() { tt.fn(t) })
			require.NotEmpty(t, msg, "expected a panic")
			for _, w := range tt.wants {
				assert.Contains(t, msg, w)
			}
		})
	}
	t.Run("multi-agent server routes by agent_slug", func(t *testing.T) {
		research, billing := newTestAgent(t, testAgentName), newTestAgent(t, "Billing Agent")
		srv, err := supervaizer.NewServer([]*supervaizer.Agent{research, billing}, supervaizer.WithEnv(emptyEnv),
			supervaizer.WithServerID(testServerID), supervaizer.WithAPIKey(testWriteKey, supervaizer.ScopeWrite), supervaizer.WithLocalMode(true))
		require.NoError(t, err)
		for _, a := range []*supervaizer.Agent{research, billing} {
			a.HandleAction("job.sync", func(ctx context.Context, req *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
				got, _ := supervaizer.AgentFrom(ctx)
				return supervaizer.OK(supervaizer.Effect{Type: "served.by." + a.Slug(), Message: got.Slug()}), nil
			})
		}
		for _, slug := range []string{testAgentSlug, "billing-agent"} {
			body := rpcBody(t, 1, supervaizer.MethodActionInvoke, actionParams("job.sync", func(p map[string]any) { p["agent_slug"] = slug }))
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, newRPCRequest(context.Background(), rpcCall{body: body, key: testWriteKey}))
			resp := decodeRPC(t, w)
			require.Nil(t, resp.Error, "%s", w.Body)
			assert.JSONEq(t, `{"status":"ok","effects":[{"type":"served.by.`+slug+`","message":"`+slug+`"}]}`, string(resp.Result))
		}
	})
}

// newMultiAgentServer serves the research and billing agents.
func newMultiAgentServer(tb testing.TB) *supervaizer.Server {
	tb.Helper()
	srv, err := supervaizer.NewServer([]*supervaizer.Agent{newTestAgent(tb, testAgentName), newTestAgent(tb, "Billing Agent")},
		supervaizer.WithEnv(emptyEnv), supervaizer.WithServerID(testServerID))
	require.NoError(tb, err)
	return srv
}

// TestSurfaceResultVersions checks that NewSurfaceResult inside a handler takes
// the agent's A2UI versions, and that both version keys are always sent.
func TestSurfaceResultVersions(t *testing.T) {
	h := newHarness(t)
	body := rpcBody(t, 1, supervaizer.MethodSurfaceLoad, surfaceParams("job.start", nil))
	resp := decodeRPC(t, h.serve(rpcCall{body: body, key: testWriteKey, token: "Bearer " + h.validToken()}))
	require.Nil(t, resp.Error)
	assert.JSONEq(t, `{"surface":"job.start","a2ui_version":"v0.8","a2ui_catalog_version":"research-catalog/1",
		"document":{"type":"Form","fields":[],"submit":{"action":"job.start","label":"Start"}}}`, string(resp.Result))

	res, err := supervaizer.NewSurfaceResult(context.Background(), "job.start", map[string]any{"type": "Form"})
	require.NoError(t, err)
	b, err := contracts.Marshal(res)
	require.NoError(t, err)
	assert.JSONEq(t, `{"surface":"job.start","a2ui_version":null,"a2ui_catalog_version":null,"document":{"type":"Form"}}`, string(b))

	_, err = supervaizer.NewSurfaceResult(context.Background(), "job.start", func() {})
	assert.Error(t, err)
}

// TestHandlerErrorKindsHaveGoldens: each kind of error a handler can return
// has its golden pair, which pins -32603 on the wire.
func TestHandlerErrorKindsHaveGoldens(t *testing.T) {
	for kind := range handlerErrorKinds {
		tc, ok := rpcGoldenCases["handler_failed_error_"+kind]
		if assert.True(t, ok, "no golden pair for the handler error kind %q", kind) {
			assert.Equal(t, errcode.InternalError, tc.code, kind)
		}
	}
}

// goldenPairs counts the files of the golden folder dir by golden name
// (<name>.request.json, <name>.response.json); any other file fails t.
func goldenPairs(t *testing.T, dir string) map[string]int {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	onDisk := map[string]int{}
	for _, p := range paths {
		base := filepath.Base(p)
		name, ok := strings.CutSuffix(base, ".request.json")
		if !ok {
			name, ok = strings.CutSuffix(base, ".response.json")
		}
		require.True(t, ok, "unexpected file %s", p)
		onDisk[name]++
	}
	return onDisk
}
