package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/conversation"
)

// The conversation action (spec item 81): questions about the workspace's
// jobs, answered from the agent's own state by a deterministic stand-in
// for a model, which reports its token usage (item 82). A plain text A2A
// message reaches it (docs/conversations.md); Studio calls it as any action.

// actionAsk is the conversation action.
const actionAsk = "jobs.ask"

// conversationExamples are the examples of its card skill.
var conversationExamples = []string{"How many jobs are awaiting review?", "What is the status of job-1?"}

// ask answers a question about the jobs of the caller's workspace.
func (a *app) ask(ctx context.Context, _ *supervaizer.ActionRequest, in conversation.Input) (*supervaizer.ActionResult, error) {
	scope, fail := scopeOf(ctx)
	if fail != nil {
		return fail, nil
	}
	var jobs []*jobRecord
	if err := a.jobs.each(ctx, scope, func(rec *jobRecord) error {
		jobs = append(jobs, rec)
		return nil
	}); err != nil {
		return nil, err
	}
	answer := answerAbout(in.Content, jobs)
	conversation.ReportUsage(ctx, standInUsage(in, answer))
	if in.Stream { // the answer in chunks of a few words, as a model streams
		words := strings.SplitAfter(answer, " ")
		for i := 0; i < len(words); i += 4 {
			conversation.Emit(ctx, strings.Join(words[i:min(i+4, len(words))], ""))
		}
	}
	return conversation.Reply(&conversation.Output{Response: answer,
		Meta: &conversation.Meta{Agents: []string{agentSlug}, Extra: map[string]any{"jobs_read": len(jobs)}}}), nil
}

// answerAbout is the stand-in model's answer: the job a question names by
// id, else the count of the jobs by status.
func answerAbout(question string, jobs []*jobRecord) string {
	slices.SortFunc(jobs, func(x, y *jobRecord) int { return strings.Compare(x.ID, y.ID) })
	for _, j := range jobs {
		if strings.Contains(question, j.ID) {
			return fmt.Sprintf("Job %s (topic %s) is %s.", j.ID, j.TopicID, stateLabel(j.Status))
		}
	}
	if len(jobs) == 0 {
		return "There are no research jobs in this workspace yet."
	}
	counts := map[string]int{}
	for _, j := range jobs {
		counts[j.Status]++
	}
	statuses := slices.Sorted(func(yield func(string) bool) {
		for s := range counts {
			if !yield(s) {
				return
			}
		}
	})
	parts := make([]string, len(statuses))
	for i, s := range statuses {
		parts[i] = fmt.Sprintf("%d %s", counts[s], s)
	}
	return fmt.Sprintf("This workspace has %d research jobs: %s.", len(jobs), strings.Join(parts, ", "))
}

// standInUsage is what the stand-in model reports: a token per four bytes
// of what it reads (the question and the history) and of what it writes.
func standInUsage(in conversation.Input, answer string) conversation.Usage {
	read := len(in.Content)
	for _, t := range in.History {
		read += len(t.Content)
	}
	return conversation.Usage{InputTokens: int64(read+3) / 4, OutputTokens: int64(len(answer)+3) / 4}
}
