package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/supervaize/supervaizer-go/answer"
)

// briefAnswer is what the drafting step asks its model for: the base
// envelope (status, summary, artifacts, notes for the next agent) and the
// parts of the brief. The one type gives the prompt's ask and the check of
// the answer (package answer, docs/envelopes.md).
type briefAnswer struct {
	answer.Envelope
	Findings []string `json:"findings" sv:"minItems=1,maxItems=10" ask:"the key findings, one short line each"`
	Sources  []string `json:"sources" sv:"minItems=1,maxItems=10" ask:"the kinds of sources you reviewed"`
}

// draftTries bounds the drafting step's repair loop: the first answer and up
// to two corrections.
const draftTries = 3

// draftBrief writes the first draft of a brief: it asks model for the
// findings and sources of the research through a typed envelope (a
// correction names what an answer broke, at most draftTries times) and
// renders the brief from the parsed answer. An answer that declares status
// "fail" fails the draft.
func draftBrief(ctx context.Context, model answer.Model, topic, goal, depth string) (string, error) {
	if goal == "" {
		goal = defaultGoal(topic)
	}
	prompt := fmt.Sprintf("Research the topic %q for a one-page brief.\nGoal: %s\nDepth: %s", topic, goal, depth)
	res, err := answer.Ask[briefAnswer](ctx, model, prompt, draftTries)
	if err != nil {
		return "", fmt.Errorf("draft the brief: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Brief: %s\n\n**Goal:** %s\n\n## Summary\n\nWhat is publicly known about %s, in one page.\n\n", topic, goal, topic)
	b.WriteString("## Key findings\n\n")
	for _, f := range res.Findings {
		b.WriteString("- " + f + "\n")
	}
	b.WriteString("\n## Sources reviewed\n\n")
	for _, s := range res.Sources {
		b.WriteString("- " + s + "\n")
	}
	return b.String(), nil
}

// standInModel stands in for the agent's model (the SDK has no model
// client): deterministic, so tests and retries see the same brief, and it
// reads its prompt as a model would, going deeper when asked to.
func standInModel(_ context.Context, prompt string) (string, error) {
	if strings.Contains(prompt, "\nDepth: "+depthDeep) {
		return `{"status": "success", "summary": "Three findings from three kinds of sources.", ` +
			`"findings": ["Market size and growth", "Main players", "Regulation and open questions"], ` +
			`"sources": ["Analyst reports", "Public filings", "Trade press"]}`, nil
	}
	return `{"status": "success", "summary": "Two findings from the trade press.", ` +
		`"findings": ["Market size and growth", "Main players"], "sources": ["Trade press"]}`, nil
}
