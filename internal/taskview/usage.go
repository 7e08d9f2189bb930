package taskview

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/supervaize/supervaizer-go/conversation"
	"github.com/supervaize/supervaizer-go/internal/encode"
	"github.com/supervaize/supervaizer-go/internal/keyesc"
	"github.com/supervaize/supervaizer-go/store"
)

// Token usage per job (spec item 82): the sum of what the handlers of a
// job's calls reported, in the store (so across restarts and instances),
// under (usageNamespace, workspace, agent, job id), the workspace and job id
// written as the view's keys write theirs. Value: the Usage's JSON.
const usageNamespace = "a2a.usage.ws"

// usageKey is the store key of the usage sum of a job.
func usageKey(workspaceID, slug, jobID string) string {
	var buf [128]byte
	dst := keyesc.Append(buf[:0], usageNamespace)
	dst = append(dst, store.Separator)
	dst = appendIdemKeyPart(dst, workspaceID)
	dst = append(dst, store.Separator)
	dst = keyesc.Append(dst, slug)
	dst = append(dst, store.Separator)
	return string(appendIdemKeyPart(dst, jobID))
}

// AddUsage adds u to the usage sum of job jobID of agent slug in a
// workspace: a compare-and-swap loop, so concurrent calls on any instance
// lose no count.
func (tv *View) AddUsage(ctx context.Context, workspaceID, slug, jobID string, u conversation.Usage) error {
	if u.IsZero() || jobID == "" {
		return nil
	}
	key := usageKey(workspaceID, slug, jobID)
	for range maxViewRetries * 4 {
		old, found, err := tv.store.Get(ctx, key)
		if err != nil {
			return err
		}
		var sum conversation.Usage
		if found && json.Unmarshal(old, &sum) != nil {
			sum = conversation.Usage{} // an unreadable sum starts again
		}
		val, err := json.Marshal(sum.Add(u))
		if err != nil {
			return err
		}
		var stored bool
		if !found {
			_, stored, err = tv.store.PutIfAbsent(ctx, key, val)
		} else {
			stored, err = tv.store.CompareAndSwap(ctx, key, old, val)
		}
		if err != nil {
			return err
		}
		if stored {
			return nil
		}
	}
	return fmt.Errorf("taskview: usage of job %q: too many concurrent updates", jobID)
}

// Usage reads the usage sum of a job; found is false when none was
// reported.
func (tv *View) Usage(ctx context.Context, workspaceID, slug, jobID string) (u conversation.Usage, found bool, err error) {
	raw, found, err := tv.store.Get(ctx, usageKey(workspaceID, slug, jobID))
	if err != nil || !found {
		return u, false, err
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		return u, false, fmt.Errorf("taskview: usage of job %q: %w", jobID, err)
	}
	return u, true, nil
}

// Record writes the view of a job the SDK itself runs (a streamed
// conversation, package a2abind): status and text, and a job_state naming
// the job and its mission, so that tasks/get and the streams read it as any
// other.
func (tv *View) Record(ctx context.Context, workspaceID, slug string, v Job) {
	state := []byte(`{"job":{"id":`)
	state = encode.AppendString(state, v.ID, false)
	state = append(state, `,"mission_id":`...)
	state = encode.AppendString(state, v.Mission, false)
	state = append(state, `,"status":`...)
	state = encode.AppendString(state, v.Status, false)
	state = append(state, `}}`...)
	val := encodeRecord(v.Status, v.Text, state)
	tv.put(ctx, slug, Key(workspaceID, slug, v.ID), func([]byte, bool) ([]byte, bool) { return val, true })
}
