package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go"
	a2aclient "github.com/supervaize/supervaizer-go/a2a/client"
	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/errcode"
	"github.com/supervaize/supervaizer-go/store"
)

// Delegation: when RESEARCH_AGENT_DELEGATE_URL names another A2A agent, the
// gathering of sources of a new job is handed to it through package
// a2a/client (docs/delegating.md): one sub-task per job, whose remote state
// and artifacts (as references, never fetched) the job records.

// delegateBound is how long the gathering step waits for the remote's task
// to settle (completed, failed, canceled or input-required). The
// job records the last state read when the bound passes.
const delegateBound = 20 * time.Second

// delegatePoll is the pause between two readbacks of the remote's task.
const delegatePoll = 100 * time.Millisecond

// Delegation states the job records besides the remote's task states.
const (
	delegationNotSent  = "not_sent" // nothing was sent (no card, refused address, definite refusal)
	delegationUnknown  = "unknown"  // sent, the outcome could not be read back: never resent
	delegationAnswered = "answered" // the remote answered with a message, not a task
)

// delegationRecord is what the job keeps of its sub-task.
type delegationRecord struct {
	// RequestID is the message's messageId and TaskID the remote task's id,
	// both derived from the job (delegationID): a retried step reads the
	// task back instead of sending a second one.
	RequestID string `json:"request_id"`
	TaskID    string `json:"task_id"`
	// State is the remote task's state (a2atask.TaskState) or one of the
	// delegation states above.
	State string `json:"state"`
	// Artifacts are the remote's artifacts, as references.
	Artifacts []delegatedArtifact `json:"artifacts,omitempty"`
	// Error is the client's error, a fixed text that never holds the
	// remote's own words.
	Error string `json:"error,omitempty"`
}

// delegatedArtifact references an artifact of the remote's task: its id,
// name, and the URLs of its file parts, which are never fetched.
type delegatedArtifact struct {
	ID    string   `json:"id"`
	Name  string   `json:"name,omitempty"`
	Files []string `json:"files,omitempty"`
}

// delegator hands a job's gathering of sources to the remote agent.
type delegator struct {
	url  string
	opts []a2aclient.Option
	// st keeps a marker per sub-task, written before it is sent: a step
	// run again after an unknown outcome reads back and never resends.
	st store.Store

	mu     sync.Mutex
	client *a2aclient.Client // discovered on first use, kept once it succeeds
}

// newDelegator is the delegator of cfg, nil when no remote is configured.
func newDelegator(cfg config, st store.Store) *delegator {
	if cfg.DelegateURL == "" {
		return nil
	}
	opts := []a2aclient.Option{a2aclient.WithCallTimeout(delegateBound)}
	if cfg.DelegateLoopback {
		opts = append(opts, a2aclient.AllowLoopback())
	}
	if cfg.DelegateAPIKey != "" {
		opts = append(opts, a2aclient.WithHeader(supervaizer.HeaderAPIKey, cfg.DelegateAPIKey))
	}
	return &delegator{url: cfg.DelegateURL, opts: opts, st: st}
}

// clientFor discovers the remote once; a failed discovery is tried again by
// the next job.
func (d *delegator) clientFor(ctx context.Context) (*a2aclient.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client != nil {
		return d.client, nil
	}
	c, err := a2aclient.New(ctx, d.url, d.opts...)
	if err != nil {
		return nil, err
	}
	d.client = c
	return c, nil
}

// delegationID is the request id and remote task id of the sub-task of job
// jobID in scope: stable, so every retry of the step names the same task.
func delegationID(scope, jobID string) string {
	sum := sha256.Sum256([]byte(scope + "\n" + jobID))
	return "research-agent-sources-" + hex.EncodeToString(sum[:16])
}

// gatherSources sends the sub-task of the job, or reads it back when an
// earlier run of the step sent it, and waits for it to settle within
// delegateBound. It never sends twice: an ambiguous send is resolved by
// reading back, and an outcome it cannot read is recorded as unknown.
func (d *delegator) gatherSources(ctx context.Context, scope, jobID, topic string) *delegationRecord {
	id := delegationID(scope, jobID)
	rec := &delegationRecord{RequestID: id, TaskID: id, State: delegationNotSent}
	ctx, cancel := context.WithTimeout(ctx, delegateBound)
	defer cancel()
	c, err := d.clientFor(ctx)
	if err != nil {
		rec.Error = err.Error()
		return rec
	}
	task, err := c.GetTask(ctx, id) // a retried step finds the task its first run sent
	switch {
	case err == nil:
	case remoteNotFound(err) || errors.Is(err, a2aclient.ErrUnavailable):
		task, err = d.send(ctx, c, store.Key(keyRoot, "delegation", scope, jobID), id, topic, rec)
		if task == nil {
			if err != nil {
				rec.Error = err.Error()
			}
			return rec
		}
	default:
		rec.State, rec.Error = delegationUnknown, err.Error()
		return rec
	}
	for !task.Status.State.Final() && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(delegatePoll):
		}
		t, err := c.GetTask(ctx, id)
		if err != nil {
			break // the bound passed or the readback failed: keep the last state read
		}
		task = t
	}
	rec.State = string(task.Status.State)
	for _, a := range task.Artifacts {
		ref := delegatedArtifact{ID: a.ArtifactID, Name: a.Name}
		for _, p := range a.Parts {
			if p.File != nil && p.File.URI != "" {
				ref.Files = append(ref.Files, p.File.URI)
			}
		}
		rec.Artifacts = append(rec.Artifacts, ref)
	}
	return rec
}

// send sends the sub-task once (non-blocking, messageId and task id = id),
// after writing its marker under key: when the marker exists, an earlier run
// sent it and its outcome stays unknown (the remote has no such task), so
// nothing is sent. It returns the remote's task, or nil with rec's state set.
func (d *delegator) send(ctx context.Context, c *a2aclient.Client, key, id, topic string, rec *delegationRecord) (*a2atask.Task, error) {
	data, err := json.Marshal(map[string]any{"action": actionStart, "input": map[string]any{"topic_id": topic}})
	if err != nil {
		return nil, err
	}
	if _, fresh, err := d.st.PutIfAbsent(ctx, key, []byte(strconv.Quote(id))); err != nil {
		return nil, err
	} else if !fresh {
		rec.State = delegationUnknown
		return nil, errSentBefore
	}
	ans, err := c.Send(ctx, a2aclient.SendRequest{RequestID: id, TaskID: id, Parts: []a2atask.Part{{Kind: "data", Data: data}}})
	var amb *a2aclient.AmbiguousError
	switch {
	case errors.As(err, &amb):
		// It may have been applied: read back, never resend.
		task, rerr := c.GetTask(ctx, id)
		if rerr != nil {
			rec.State = delegationUnknown
			return nil, err
		}
		return task, nil
	case err != nil:
		// A definite refusal: nothing was applied, a later job.start of the
		// same job may try again.
		return nil, errors.Join(err, d.st.Delete(context.WithoutCancel(ctx), key))
	case ans.Task == nil:
		rec.State = delegationAnswered
		return nil, nil
	}
	return ans.Task, nil
}

// errSentBefore: an earlier run of the step sent the sub-task, and the
// remote does not know it: its outcome is unknown, and it is not resent.
var errSentBefore = errors.New("the sub-task was sent before and the remote does not know it: not resent")

// remoteNotFound reports whether err is the remote's "task not found".
func remoteNotFound(err error) bool {
	var re *a2aclient.Error
	return errors.As(err, &re) && re.Code == errcode.TaskNotFound
}
