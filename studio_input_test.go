package supervaizer_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sv "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/errcode"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// TestStudioInputKeysFollowTheSetupIDs is spec item 77: name (setup preview)
// and rule_snapshot (start) are tolerated by a strict typed input on the
// registration's own setup preview and start action ids, whatever they are
// named, and reach the handler in the request, not the typed input; elsewhere
// they are unknown keys (-32602).
func TestStudioInputKeysFollowTheSetupIDs(t *testing.T) {
	t.Parallel()
	type in struct {
		Goal string `json:"goal"`
	}
	tests := []struct {
		name           string
		preview, start string // the setup ids ("" keeps the defaults)
		action, key    string
		tolerated      bool
	}{
		{"default preview, name", "", "", contracts.DefaultPreviewAction, "name", true},
		{"default start, rule_snapshot", "", "", contracts.DefaultStartAction, "rule_snapshot", true},
		{"renamed preview, name", "hello.preview", "hello.start", "hello.preview", "name", true},
		{"renamed start, rule_snapshot", "hello.preview", "hello.start", "hello.start", "rule_snapshot", true},
		{"renamed preview, rule_snapshot", "hello.preview", "hello.start", "hello.preview", "rule_snapshot", false},
		{"renamed start, name", "hello.preview", "hello.start", "hello.start", "name", false},
		{"default preview id once renamed", "hello.preview", "hello.start", contracts.DefaultPreviewAction, "name", false},
		{"another action", "hello.preview", "hello.start", "hello.other", "name", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			setup := &contracts.JobSetupPolicy{PreviewAction: tt.preview, StartAction: tt.start}
			preview, start := contracts.DefaultPreviewAction, contracts.DefaultStartAction
			if tt.preview != "" {
				preview, start = tt.preview, tt.start
			}
			ids := []string{preview, start, tt.action}
			if tt.action == preview || tt.action == start {
				ids = ids[:2]
			}
			agent, err := sv.NewAgent(sv.AgentSpec{Name: "Setup Agent", Version: "1.0.0", Registration: sv.RegistrationSpec{
				AgentSlug: "setup-agent", DisplayName: "Setup Agent", A2UICatalogVersion: "1.0.0",
				Actions: sv.Actions(ids...), JobPolicy: &contracts.JobPolicy{Setup: setup},
			}})
			require.NoError(t, err)
			seen := map[string]json.RawMessage{}
			for _, id := range ids {
				sv.HandleActionFor(agent, id, func(_ context.Context, req *sv.ActionRequest, got in) (*sv.ActionResult, error) {
					assert.Equal(t, "find", got.Goal)
					seen[req.Action] = req.Input
					return sv.OK(), nil
				})
			}
			ts := svtest.NewTestServer(t, []*sv.Agent{agent})
			req := ts.Request(tt.action, map[string]any{"goal": "find", tt.key: map[string]any{"hash": "h"}})
			req.JobID, req.IdempotencyKey = "job-1", "k-1"
			_, err = ts.Invoke(t.Context(), req)
			if !tt.tolerated {
				require.Error(t, err)
				assert.Equal(t, errcode.InvalidParams, sv.CodeOf(err))
				assert.NotContains(t, seen, tt.action, "the handler did not run")
				return
			}
			require.NoError(t, err)
			require.Contains(t, seen, tt.action)
			assert.JSONEq(t, `{"goal":"find",`+`"`+tt.key+`":{"hash":"h"}}`, string(seen[tt.action]), "the key reaches the handler in the request")
		})
	}
}
