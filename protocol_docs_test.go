package supervaizer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	supervaizer "github.com/supervaize/supervaizer-go"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// TestProtocolDocClaimRows: docs/protocol.md's workspace-token section says
// what the verifier does with grant_id (required: a token without it is
// refused) and agent_workspace_ref (optional), and that the header takes the
// token bare or after "Bearer " in any letter case.
func TestProtocolDocClaimRows(t *testing.T) {
	doc, err := os.ReadFile("docs/protocol.md")
	require.NoError(t, err)
	row := func(claim string) string {
		for line := range strings.Lines(string(doc)) {
			if strings.HasPrefix(line, "| `"+claim+"` |") {
				return line
			}
		}
		t.Fatalf("docs/protocol.md has no claim row for %s", claim)
		return ""
	}
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Claims Agent", Version: testAgentVersion})
	require.NoError(t, err)
	agent.HandleAction("job.start", func(context.Context, *supervaizer.ActionRequest) (*supervaizer.ActionResult, error) {
		return supervaizer.OK(), nil
	})
	ts := svtest.NewTestServer(t, []*supervaizer.Agent{agent})
	req := ts.Request("job.start", map[string]any{})

	for _, tc := range []struct {
		claim, says string
		wantCode    string // "" when the call is accepted
	}{
		{"grant_id", "required", "workspace_authorization_invalid_claims"},
		{"agent_workspace_ref", "optional", ""},
	} {
		t.Run(tc.claim, func(t *testing.T) {
			assert.Contains(t, row(tc.claim), tc.says)
			c := ts.Studio.ActionClaims(req)
			c.Omit = []string{tc.claim}
			res, err := ts.InvokeWithToken(t.Context(), req, ts.Studio.Mint(c))
			if tc.wantCode != "" {
				require.Equal(t, tc.wantCode, svtest.AuthCode(err), "a token without %s", tc.claim)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "ok", res.Status)
		})
	}

	section := string(doc[bytes.Index(doc, []byte("## Workspace token")):])
	require.Contains(t, section, "either bare or after `Bearer ` (any letter case")
	token := ts.Studio.Mint(ts.Studio.ActionClaims(req))
	for _, header := range []string{token, "Bearer " + token, "bearer " + token} {
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": supervaizer.MethodActionInvoke,
			"params": map[string]any{"action_request": req}})
		require.NoError(t, err)
		r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/a2a", bytes.NewReader(body))
		r.Host, r.RemoteAddr = "127.0.0.1", "127.0.0.1:1"
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(supervaizer.HeaderAPIKey, ts.APIKey)
		r.Header.Set(supervaizer.HeaderWorkspaceAuthorization, header)
		w := httptest.NewRecorder()
		ts.Server.ServeHTTP(w, r)
		require.Equal(t, http.StatusOK, w.Code)
		assert.Contains(t, w.Body.String(), `"result":{"status":"ok"`, "header %.7s…", header)
	}
}
