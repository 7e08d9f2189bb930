package main

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/answer"
)

// mustDraft is the brief the stand-in model drafts.
func mustDraft(tb testing.TB, topic, goal, depth string) string {
	tb.Helper()
	d, err := draftBrief(context.Background(), standInModel, topic, goal, depth)
	require.NoError(tb, err)
	return d
}

// scriptedModel answers each prompt with the next of its answers and keeps
// the prompts: a deterministic stand-in for a model in a live session.
type scriptedModel struct {
	answers []string
	prompts []string
}

func (m *scriptedModel) ask(_ context.Context, prompt string) (string, error) {
	m.prompts = append(m.prompts, prompt)
	if len(m.prompts) > len(m.answers) {
		return "", errors.New("the script has no more answers")
	}
	return m.answers[len(m.prompts)-1], nil
}

const deepBrief = "# Brief: EU batteries\n\n**Goal:** Summarize what is publicly known about EU batteries, with sources, in one page.\n\n" +
	"## Summary\n\nWhat is publicly known about EU batteries, in one page.\n\n" +
	"## Key findings\n\n- Market size and growth\n- Main players\n- Regulation and open questions\n\n" +
	"## Sources reviewed\n\n- Analyst reports\n- Public filings\n- Trade press\n"

// TestDraftWithTheStandInModel: the stand-in answers a valid envelope at
// once, deeper when the prompt asks for depth.
func TestDraftWithTheStandInModel(t *testing.T) {
	assert.Equal(t, deepBrief, mustDraft(t, "EU batteries", "", depthDeep))
	assert.Equal(t, "# Brief: t\n\n**Goal:** g\n\n## Summary\n\nWhat is publicly known about t, in one page.\n\n"+
		"## Key findings\n\n- Market size and growth\n- Main players\n\n## Sources reviewed\n\n- Trade press\n",
		mustDraft(t, "t", "g", depthQuick))
}

// TestDraftCorrectionRound: the model's first answer, fenced in prose, forgets
// the sources and declares a status the contract does not know; the drafting
// step sends the correction naming both, in the same session, and drafts
// from the second answer.
func TestDraftCorrectionRound(t *testing.T) {
	m := &scriptedModel{answers: []string{
		"Here is my research:\n```json\n{\"status\": \"done\", \"findings\": [\"Market size and growth\"]}\n```",
		`{"status": "success", "findings": ["Market size and growth", "Main players", "Regulation and open questions"], ` +
			`"sources": ["Analyst reports", "Public filings", "Trade press"]}`,
	}}
	got, err := draftBrief(context.Background(), m.ask, "EU batteries", "", depthDeep)
	require.NoError(t, err)
	assert.Equal(t, deepBrief, got)
	require.Len(t, m.prompts, 2)
	assert.Contains(t, m.prompts[0], "Research the topic \"EU batteries\"")
	assert.Contains(t, m.prompts[0], answer.Contract[briefAnswer]())
	assert.Equal(t, answer.Correction[briefAnswer](errors.New(
		"sources: missing property (required); status: must be one of success, fail (enum)")), m.prompts[1])
}

// TestDraftFails: a model that declares status "fail", or breaks the contract
// on every try, drafts nothing; the error names why.
func TestDraftFails(t *testing.T) {
	m := &scriptedModel{answers: []string{`{"status": "fail", "summary": "No sources reachable.", "findings": ["-"], "sources": ["-"]}`}}
	_, err := draftBrief(context.Background(), m.ask, "t", "", depthQuick)
	require.ErrorIs(t, err, answer.ErrFailed)
	assert.Contains(t, err.Error(), "No sources reachable.")
	assert.Len(t, m.prompts, 1)

	m = &scriptedModel{answers: []string{`{"status": "success"}`, `{"status": "success"}`, `{"status": "success"}`, `{"status": "success"}`}}
	_, err = draftBrief(context.Background(), m.ask, "t", "", depthQuick)
	assert.EqualError(t, err, "draft the brief: answer: no valid answer in 3 tries; the last: "+
		"findings: missing property (required); sources: missing property (required)")
	assert.Len(t, m.prompts, draftTries)
}
