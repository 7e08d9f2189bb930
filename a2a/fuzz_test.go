package a2a_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a"
)

// FuzzNewAgentCard checks that NewAgentCard never panics and that every card
// it accepts marshals to a valid A2A 0.2.6 and 0.3.0 AgentCard that keeps the
// inputs.
func FuzzNewAgentCard(f *testing.F) {
	f.Add("Research Agent", "Turns a question into a sourced brief.", "1.0.0", "research-agent", "",
		"https://research.example.com/", "", []byte(`{"a":null}`), "job.start", "Start", "", "job", "", "summarize")
	f.Add("Équipe <&>", "", "2.0.0-rc.1+b~7", "equipe", "Acme", "http://[::1]:8080/x//", "0.3.0",
		[]byte(` null `), " id ", " ", "\t", "", "help", "")
	f.Add("\xff", "d", "1", "a", "", "http://a", "", []byte(`[1]`), "", "", "", "", "", "")
	f.Add("A", "d", "1/2", "a--b", "", "https://u:p@h?q#f", " ", []byte(`{"a":`), "x", "", "", "", "", "job_start")
	validators := cardValidators(f)
	f.Fuzz(func(t *testing.T, name, desc, version, slug, developer, base, a2aVersion string, reg []byte,
		actionID, label, actionDesc, scope, kind, method string) {
		in := a2a.CardInput{
			Name: name, Description: desc, Version: version, Slug: slug, Developer: developer,
			BaseURL: base, A2AVersion: a2aVersion, Registration: reg,
			Actions: []a2a.ActionInfo{
				{ID: actionID, Label: label, Description: actionDesc, Scope: scope, Kind: kind, Mutating: len(label)%2 == 0},
				{ID: actionID + ".second", Kind: kind},
			},
		}
		if method != "" {
			in.CustomMethods = []string{method}
		}
		card, err := a2a.NewAgentCard(in)
		if err != nil {
			assert.Nil(t, card)
			return
		}
		b, err := json.Marshal(card)
		require.NoError(t, err)
		for _, v := range validators {
			require.NoError(t, v.Validate(b), v.Name)
		}
		assert.Equal(t, name, card.Name)
		assert.Equal(t, version, card.Version)
		require.Len(t, card.Skills, 2)
		assert.Equal(t, actionID, card.Skills[0].ID)
		assert.Regexp(t, `^https?://[^/?#\s]+(/[^?#\s]*)?/a2a$`, card.URL)
		require.NotEmpty(t, card.SupportedInterfaces)
		assert.Equal(t, "1.0", card.SupportedInterfaces[0].ProtocolVersion, "the 1.0 binding first")
		last := card.SupportedInterfaces[len(card.SupportedInterfaces)-1]
		assert.Equal(t, card.ProtocolVersion, last.ProtocolVersion, "then the card's own version, unless it is 1.0")
		for _, i := range card.SupportedInterfaces {
			assert.Equal(t, card.URL, i.URL)
		}
		assert.Equal(t, card.Supervaizer != nil, len(card.Capabilities.Extensions) == 1)
	})
}
