package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/resource"
	"github.com/supervaize/supervaizer-go/store"
)

// Job statuses: the agent's vocabulary, echoed in job_policy.sync.
const (
	jobAwaiting  = "awaiting"  // the draft brief waits for an operator's review
	jobActive    = "active"    // approved: the brief is being sent
	jobCompleted = "completed" // the brief was sent
	jobStopped   = "stopped"   // stopped by job.stop
	jobFailed    = "failed"    // sending failed or a rule checkpoint refused it
)

// Depths of the research.
const (
	depthQuick = "quick"
	depthDeep  = "deep"
)

// keyRoot is the first part of every key the agent writes in the store, apart
// from the SDK's own records.
const keyRoot = "research-agent"

// deliveryKey reports whether key is one of a governed delivery's own
// records: the agent's (jobs, outbox...) or a rule checkpoint's. The crash
// tests count these writes and no others (crashpoint.go and
// governance_crash_test.go): the SDK's bookkeeping (the A2A task view, the
// idempotency records, the instance claim's heartbeat) lands between them at
// moments that depend on timing.
func deliveryKey(key string) bool {
	parts, err := store.ParseKey(key)
	return err == nil && len(parts) > 0 && (parts[0] == keyRoot || parts[0] == "rule-checkpoints")
}

// errJobNotFound is returned for a job id unknown in the caller's workspace
// scope. A job of another workspace is "not found" too: never tell them apart.
var errJobNotFound = errors.New("job not found")

// jobRecord is the agent's own state of a job, persisted in the store.
type jobRecord struct {
	ID        string `json:"id"`
	MissionID string `json:"mission_id"`
	Scope     string `json:"scope"` // the verified workspace partition, see workspaceScope
	TopicID   string `json:"topic_id"`
	Goal      string `json:"goal"`
	Depth     string `json:"depth"`
	Status    string `json:"status"`
	Draft     string `json:"draft"`    // the brief, as last edited by the operator
	Reviews   int    `json:"reviews"`  // review submissions so far
	Approved  bool   `json:"approved"` // the operator approved the brief for sending
	Governed  bool   `json:"governed"` // Studio sent a rule snapshot: the delivery is guarded
	// NoPublication: started under a campaign whose policy forbids
	// publication (campaign.PolicyFrom): the brief is never sent.
	NoPublication bool `json:"no_publication,omitempty"`
	// ApprovedAt is when the brief was approved: it is sent the send delay
	// later (zero in records written before it existed: sent at once).
	ApprovedAt time.Time `json:"approved_at,omitzero"`

	// Delegation is the sub-task the gathering of sources was delegated to
	// (RESEARCH_AGENT_DELEGATE_URL); nil when the agent gathered them itself.
	Delegation *delegationRecord `json:"delegation,omitempty"`

	// Recipients are the contacts the brief goes to, frozen at approval.
	Recipients []string `json:"recipients,omitempty"`

	// Delivery is set once the brief was sent; Failure once it could not be.
	Delivery *delivery `json:"delivery,omitempty"`
	Failure  string    `json:"failure,omitempty"`

	Revision  int       `json:"revision"` // incremented by every change; the sync cursor
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// delivery records the external effect: the brief sent to the workspace's
// contacts.
type delivery struct {
	Receipt    string    `json:"receipt"`
	Recipients int       `json:"recipients"`
	SentAt     time.Time `json:"sent_at"`
	Billed     bool      `json:"billed"` // reported to Studio's billing
}

// Stable snapshot ids, derived from the job id so that every job_state of a
// job updates the same cases, steps and artifacts in Studio.
func (j *jobRecord) setupCaseID() string     { return j.ID + "-setup" }
func (j *jobRecord) reviewStepID() string    { return j.ID + "-review" }
func (j *jobRecord) sendCaseID() string      { return j.ID + "-delivery" }
func (j *jobRecord) sendStepID() string      { return j.ID + "-send" }
func (j *jobRecord) briefCaseID() string     { return j.ID + "-brief" }
func (j *jobRecord) briefStepID() string     { return j.ID + "-synthesis" }
func (j *jobRecord) briefArtifactID() string { return j.ID + "-brief.md" }

// reviewFields are the fields of the awaiting review step. The submit action
// receives their values as its input.
func reviewFields() []a2ui.Field {
	return []a2ui.Field{
		a2ui.TextField("review_text", "Brief text", a2ui.Required(), a2ui.Multiline(12), a2ui.MaxLength(20000)),
		a2ui.BooleanField("approve_review", "Approve and send the brief", a2ui.Required()),
	}
}

// reviewAwaitingFields are reviewFields as the awaiting fields of a step,
// built once: they never change, and a job_state only reads them.
var reviewAwaitingFields = sync.OnceValue(func() []supervaizer.AwaitingField {
	return a2ui.AwaitingFields(reviewFields()...)
})

// state is the job_state snapshot of the job: the job, a setup case with the
// review step, and, once approved, a work case sending the brief and a
// deliverable case holding it. The projection depends only on the record, so
// repeated job.sync calls converge.
func (j *jobRecord) state() *supervaizer.JobState {
	job := supervaizer.Job{
		ID: j.ID, AgentSlug: agentSlug, MissionID: j.MissionID, Status: j.Status,
		Source:  supervaizer.JobSource{Type: "fresh_start", ExternalRef: "topic:" + j.TopicID, TargetType: "topic"},
		Display: &contracts.JobDisplay{EntityLabel: "Brief", StateLabel: stateLabel(j.Status), PrimaryActionLabel: primaryAction(j.Status)},
	}
	review := supervaizer.Step{ID: j.reviewStepID(), Activity: "operation", Title: "Review the draft brief", Status: "completed"}
	setup := supervaizer.Case{ID: j.setupCaseID(), Lane: laneSetup, Title: "Brief: " + j.TopicID, Status: "completed",
		Metadata: map[string]any{"topic_id": j.TopicID, "depth": j.Depth}}
	if d := j.Delegation; d != nil {
		setup.Metadata["delegated_task_id"], setup.Metadata["delegated_state"] = d.TaskID, d.State
	}
	switch {
	case j.Status == jobAwaiting:
		review.Status, setup.Status = jobAwaiting, jobAwaiting
		review.Awaiting = &supervaizer.Awaiting{Reason: "human_input", Surface: surfaceStepAwaiting, Action: actionSubmit, Fields: reviewAwaitingFields()}
	case !j.Approved: // stopped before approval
		review.Status, setup.Status = "cancelled", "cancelled"
	}
	setup.Steps = []supervaizer.Step{review}
	cases := []supervaizer.Case{setup}
	if !j.Approved {
		return &supervaizer.JobState{Job: job, Cases: cases}
	}

	send := supervaizer.Step{ID: j.sendStepID(), Activity: "operation", Title: "Send the brief to the workspace's contacts"}
	sendCase := supervaizer.Case{ID: j.sendCaseID(), Lane: laneWork, Title: "Delivery"}
	switch {
	case j.Status == jobFailed:
		send.Status = "failed"
		sendCase.Metadata = map[string]any{"failure": j.Failure}
		if j.Delivery != nil {
			sendCase.Metadata["sent_at"] = j.Delivery.SentAt.UTC().Format(time.RFC3339)
		}
	case j.Delivery != nil:
		send.Status = "completed"
		sendCase.Metadata = map[string]any{"recipients": j.Delivery.Recipients, "sent_at": j.Delivery.SentAt.UTC().Format(time.RFC3339)}
	case j.Status == jobStopped:
		send.Status = "cancelled"
	default:
		send.Status = "active"
	}
	sendCase.Status = send.Status
	sendCase.Steps = []supervaizer.Step{send}
	brief := supervaizer.Case{ID: j.briefCaseID(), Lane: laneDeliverable, Title: "Brief", Status: "completed",
		Steps: []supervaizer.Step{{ID: j.briefStepID(), Activity: "operation", Status: "completed", Title: "Synthesis",
			Outputs: []supervaizer.ArtifactRef{{ID: j.briefArtifactID(), Type: artifactSynthesis, Title: "Brief: " + j.TopicID, MediaType: "text/markdown"}}}}}
	return &supervaizer.JobState{Job: job, Cases: append(cases, sendCase, brief)}
}

func stateLabel(status string) string {
	switch status {
	case jobAwaiting:
		return "Waiting for review"
	case jobActive:
		return "Sending"
	case jobCompleted:
		return "Sent"
	case jobStopped:
		return "Stopped"
	default:
		return "Failed"
	}
}

func primaryAction(status string) string {
	if status == jobAwaiting {
		return "Review the brief"
	}
	return "Open the brief"
}

func defaultGoal(topic string) string {
	return fmt.Sprintf("Summarize what is publicly known about %s, with sources, in one page.", topic)
}

// workspaceScope is the partition every job, contact and metric lives in: the
// agent-side record Studio bound the workspace to (agent_workspace_ref), else
// the verified workspace id, written as the SDK writes a workspace-level
// resource.ScopeKey (so jobs and the contacts resource share it). It comes
// from the verified token only, never from a slug or an id of the request
// body; the two namespaces never mix.
func workspaceScope(ws *supervaizer.Workspace) (string, bool) {
	if ws == nil || ws.WorkspaceID == "" {
		return "", false
	}
	k := resource.ScopeKey{Level: "workspace", Workspace: ws.WorkspaceID}
	if ws.AgentWorkspaceRef != nil && *ws.AgentWorkspaceRef != "" {
		k.Workspace, k.ByRef = *ws.AgentWorkspaceRef, true
	}
	return k.String(), true
}

// workspaceOf is the workspace-level partition of a resource or dataset scope.
func workspaceOf(k resource.ScopeKey) string {
	return resource.ScopeKey{Level: "workspace", Workspace: k.Workspace, ByRef: k.ByRef}.String()
}

// jobStore keeps job records in the store, one key per (scope, job id). The
// store is the truth: it survives restarts. What is decoded is remembered
// with the bytes it came from, so reading a job that did not change (a
// job.sync poll) costs no JSON decode.
//
// A store shared by several instances (PostgreSQL) is asked for the current
// bytes on every read: another instance may have changed them. A store that
// is this process's alone (the bbolt file, which bbolt locks while it is
// open, or memory) holds exactly what this process last wrote through
// jobStore, so a remembered job is read without a store call: a job.sync
// poll then takes no store transaction, whose locks every concurrent poll
// would otherwise queue on.
type jobStore struct {
	st  store.Store
	now func() time.Time
	// exclusive: nothing but this jobStore writes the jobs of st.
	exclusive bool

	mu      sync.RWMutex
	decoded map[string]decodedJob // by store key; at most maxDecodedJobs
}

// decodedJob is a job record and the stored bytes it was decoded from.
type decodedJob struct {
	raw []byte
	rec jobRecord
}

// maxDecodedJobs bounds the decoded records kept in memory.
const maxDecodedJobs = 4096

// decode returns the record stored as raw under key, decoding raw only when
// it differs from the bytes last seen there. The record is the caller's own
// copy.
func (s *jobStore) decode(key string, raw []byte) (*jobRecord, error) {
	s.mu.RLock()
	d, ok := s.decoded[key]
	s.mu.RUnlock()
	if ok && bytes.Equal(d.raw, raw) {
		return d.rec.clone(), nil
	}
	var rec jobRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, err
	}
	s.remember(key, raw, &rec)
	return &rec, nil
}

// remembered returns a copy of the record remembered under key.
func (s *jobStore) remembered(key string) (*jobRecord, bool) {
	s.mu.RLock()
	d, ok := s.decoded[key]
	s.mu.RUnlock()
	if !ok {
		return nil, false
	}
	return d.rec.clone(), true
}

// remember records that raw, stored under key, decodes to rec. A record
// older than the one remembered (a slower writer of an earlier revision
// finishing last) is not remembered.
func (s *jobStore) remember(key string, raw []byte, rec *jobRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.decoded == nil {
		s.decoded = make(map[string]decodedJob)
	}
	prev, ok := s.decoded[key]
	if ok && prev.rec.Revision > rec.Revision {
		return
	}
	if !ok && len(s.decoded) >= maxDecodedJobs {
		for k := range s.decoded { // forget one entry; the store still has it
			delete(s.decoded, k)
			break
		}
	}
	s.decoded[key] = decodedJob{raw: raw, rec: *rec.clone()}
}

// forget drops what is remembered under key: after a failed write, the
// store may or may not hold it, and the next read asks the store.
func (s *jobStore) forget(key string) {
	s.mu.Lock()
	delete(s.decoded, key)
	s.mu.Unlock()
}

// clone returns a deep copy of j: a caller may change its copy freely.
func (j *jobRecord) clone() *jobRecord {
	c := *j
	c.Recipients = slices.Clone(j.Recipients)
	if j.Delivery != nil {
		d := *j.Delivery
		c.Delivery = &d
	}
	return &c
}

func jobKey(scope, id string) string { return store.Key(keyRoot, "jobs", scope, id) }

// create stores rec unless a job with its id exists in its scope; then it
// returns the existing record and false.
func (s *jobStore) create(ctx context.Context, rec *jobRecord) (*jobRecord, bool, error) {
	now := s.now().UTC()
	rec.CreatedAt, rec.UpdatedAt, rec.Revision = now, now, 1
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, false, err
	}
	key := jobKey(rec.Scope, rec.ID)
	existing, stored, err := s.st.PutIfAbsent(ctx, key, b)
	if err != nil {
		s.forget(key)
		return nil, false, err
	}
	if stored {
		s.remember(key, b, rec)
		return rec, true, nil
	}
	old, err := s.decode(key, existing)
	if err != nil {
		return nil, false, fmt.Errorf("decode job %s: %w", rec.ID, err)
	}
	return old, false, nil
}

// get returns the job id of scope, or errJobNotFound.
func (s *jobStore) get(ctx context.Context, scope, id string) (*jobRecord, error) {
	if id == "" {
		return nil, errJobNotFound
	}
	key := jobKey(scope, id)
	if s.exclusive {
		if rec, ok := s.remembered(key); ok {
			return rec, nil
		}
	}
	b, found, err := s.st.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, errJobNotFound
	}
	rec, err := s.decode(key, b)
	if err != nil {
		return nil, fmt.Errorf("decode job %s: %w", id, err)
	}
	return rec, nil
}

// errUnchanged, returned by an update function, ends update without writing.
var errUnchanged = errors.New("unchanged")

// update applies fn to the job and writes the result with compare-and-swap,
// retrying on a concurrent change, so no update is ever lost. When fn returns
// errUnchanged nothing is written and the current record is returned.
func (s *jobStore) update(ctx context.Context, scope, id string, fn func(*jobRecord) error) (*jobRecord, error) {
	key := jobKey(scope, id)
	for {
		old, found, err := s.st.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, errJobNotFound
		}
		rec, err := s.decode(key, old)
		if err != nil {
			return nil, fmt.Errorf("decode job %s: %w", id, err)
		}
		if err := fn(rec); errors.Is(err, errUnchanged) {
			return rec, nil
		} else if err != nil {
			return nil, err
		}
		rec.Revision++
		rec.UpdatedAt = s.now().UTC()
		b, err := json.Marshal(rec)
		if err != nil {
			return nil, err
		}
		swapped, err := s.st.CompareAndSwap(ctx, key, old, b)
		if err != nil {
			s.forget(key)
			return nil, err
		}
		if swapped {
			s.remember(key, b, rec)
			return rec, nil
		}
	}
}

// each calls fn for every job of scope; an empty scope visits every job.
func (s *jobStore) each(ctx context.Context, scope string, fn func(*jobRecord) error) error {
	prefix := store.Prefix(keyRoot, "jobs")
	if scope != "" {
		prefix = store.Prefix(keyRoot, "jobs", scope)
	}
	return s.st.Scan(ctx, prefix, func(_ string, v []byte) error {
		var rec jobRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		return fn(&rec)
	})
}
