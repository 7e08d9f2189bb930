package a2a_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/internal/tools/cardcheck"
)

// cardValidators returns every validator of cardcheck: the A2A 0.2.6 and
// 0.3.0 structure, and the published A2A JSON Schemas in a build with the
// conformance tag (make conformance).
func cardValidators(tb testing.TB) []cardcheck.Validator {
	tb.Helper()
	validators, err := cardcheck.Validators(os.Getenv(cardcheck.EnvSchemas))
	require.NoError(tb, err)
	return validators
}

// researchInput is the card input of the research-agent example: a small
// registration and three actions (labelled and described; labelled only;
// a help action with neither).
func researchInput(tb testing.TB) a2a.CardInput {
	tb.Helper()
	reg, err := os.ReadFile(filepath.Join("testdata", "registration.json"))
	require.NoError(tb, err)
	return a2a.CardInput{
		Name:         "Research Agent",
		Description:  "Turns a question into a sourced brief.",
		Version:      "1.0.0",
		Slug:         "research-agent",
		BaseURL:      "https://research.example.com/",
		Registration: reg,
		Actions: []a2a.ActionInfo{
			{ID: "job.start", Label: "Start research", Description: "Starts a research job from a question.", Scope: "job", Mutating: true},
			{ID: "resource.contacts.list", Label: "List contacts", Scope: "workspace"},
			{ID: "setup.goal.suggest", Scope: "mission", Kind: a2a.KindHelp},
		},
		CustomMethods: []string{"summarize"},
	}
}

// mustCard builds a card or fails the test.
func mustCard(tb testing.TB, in a2a.CardInput) (*a2a.AgentCard, []byte) {
	tb.Helper()
	card, err := a2a.NewAgentCard(in)
	require.NoError(tb, err)
	b, err := json.Marshal(card)
	require.NoError(tb, err)
	return card, b
}
