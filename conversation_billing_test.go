package supervaizer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/conversation"
)

// TestUsageBillingSKUsChecked: NewServer refuses a WithUsageBilling mapping
// naming a SKU that an agent's billing catalog (known from its spec) does
// not list, naming the SKU and the agent; a mapping within every catalog
// starts. The code before the fix took it and failed each billing report
// later: this test failed.
func TestUsageBillingSKUsChecked(t *testing.T) {
	newAgent := func(t *testing.T, name string, catalog contracts.BillingCatalog) *supervaizer.Agent {
		t.Helper()
		a, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: name, Version: "1.0.0", Description: "Answers.",
			Registration: supervaizer.RegistrationSpec{Actions: supervaizer.Actions("ask")}, BillingCatalog: catalog})
		require.NoError(t, err)
		return a
	}
	tokens := contracts.BillingCatalog{{SKU: "input_tokens", Unit: "token"}, {SKU: "output_tokens", Unit: "token"}}
	cases := []struct {
		name    string
		skus    conversation.BillingSKUs
		second  contracts.BillingCatalog // a second agent's catalog; nil: one agent
		wantErr []string
	}{
		{"within the catalog", conversation.BillingSKUs{InputTokens: "input_tokens", OutputTokens: "output_tokens"}, nil, nil},
		{"no mapping", conversation.BillingSKUs{}, nil, nil},
		{"unknown SKU", conversation.BillingSKUs{InputTokens: "input_tokens", CacheReadInputTokens: "cache_tokens"}, nil,
			[]string{`"cache_tokens"`, "CacheReadInputTokens", `"helpdesk"`}},
		{"missing from a second agent", conversation.BillingSKUs{OutputTokens: "output_tokens"}, contracts.BillingCatalog{{SKU: "brief", Unit: "brief"}},
			[]string{`"output_tokens"`, `"second"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			agents := []*supervaizer.Agent{newAgent(t, "Helpdesk", tokens)}
			if tc.second != nil {
				agents = append(agents, newAgent(t, "Second", tc.second))
			}
			_, err := supervaizer.NewServer(agents, supervaizer.WithEnv(emptyEnv), supervaizer.WithLocalMode(true),
				supervaizer.WithUsageBilling(tc.skus))
			if tc.wantErr == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, s := range tc.wantErr {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}
