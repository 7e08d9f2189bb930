// Package taskview is the A2A task view: the last validated job_state of
// every job per workspace, kept in the controller's store so that a task is
// read after a restart and on any instance sharing the store. The pipeline
// updates it from every result a handler produced; the A2A bindings (package
// a2abind), and later features, read it. It lives beside the pipeline, in no
// binding.
package taskview

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/internal/encode"
	"github.com/supervaize/supervaizer-go/internal/keyesc"
	"github.com/supervaize/supervaizer-go/internal/sse"
	"github.com/supervaize/supervaizer-go/internal/wire"
	"github.com/supervaize/supervaizer-go/store"
)

// The task view: the last validated job_state of every job per workspace,
// kept in the configured store so that tasks/get answers after a restart and
// on any instance sharing the store. It is updated by invoke (dispatch.go)
// from every result the handler produced (a replayed answer never brings an
// older state back): a result's job_state replaces the job's record; without
// one, an effect naming a job_id and a status updates the status of a job
// already in the view.
//
// Record key layout: (taskNamespace, workspace, agent, job id), the
// workspace and the job id written as idempotency records write theirs
// (idemKeyPart: literal, or hashed when long), so one workspace never reads
// another's task. Value: {"status":…,"text":…,"job_state":…}.
const taskNamespace = "a2a.task.ws"

// maxViewRetries bounds the compare-and-swap retries of one update.
const maxViewRetries = 8

// Key is the store key of the view of job jobID of agent slug in a workspace.
func Key(workspaceID, slug, jobID string) string {
	var buf [128]byte
	return string(appendTaskKey(buf[:0], workspaceID, slug, jobID))
}

// appendTaskKey appends the key of a job's record to dst: byte for byte
// store.Key(taskNamespace, idemKeyPart(workspaceID), slug, idemKeyPart(jobID))
// (TestTaskKeyIsStoreKey pins it), built in one buffer because the view
// makes a key for every job result and those calls allocate four strings.
// The escaping is store.Key's documented one (ParseKey reverses it and keys
// already stored depend on it, so it cannot change).
func appendTaskKey[S string | []byte](dst []byte, workspaceID, slug string, jobID S) []byte {
	dst = keyesc.Append(dst, taskNamespace)
	dst = append(dst, store.Separator)
	dst = appendIdemKeyPart(dst, workspaceID)
	dst = append(dst, store.Separator)
	dst = keyesc.Append(dst, slug)
	dst = append(dst, store.Separator)
	return appendIdemKeyPart(dst, jobID)
}

// appendIdemKeyPart appends idemKeyPart(v), escaped as store.Key escapes a
// part.
func appendIdemKeyPart[S string | []byte](dst []byte, v S) []byte {
	if len(v) > MaxLiteralKeyPart {
		d := sha256.Sum256([]byte(v))
		dst = keyesc.Append(dst, "#")
		return hex.AppendEncode(dst, d[:]) // lower-case hex: nothing to escape
	}
	dst = keyesc.Append(dst, "=")
	return keyesc.Append(dst, v)
}

// View is the task view.
type View struct {
	store  store.Store
	logger *slog.Logger
	// Events carries each changed record to the A2A streams (package
	// a2abind); it keeps nothing for replay.
	Events *sse.Broker
	// counts are the health figures, kept as records change (counts.go).
	counts *jobCounts
	// last remembers the record each job's last result made (last.go).
	last lastRecords

	mu         sync.Mutex
	watches    map[string]map[chan struct{}]struct{}
	refreshers map[string]*refresher // follow.go
}

// New returns the task view kept in st; streams are the limits of its
// broker, which carries each changed record to the A2A streams.
func New(st store.Store, logger *slog.Logger, streams sse.Options) *View {
	streams.ReplaySize, streams.ReplayBytes = 1, 1 // nothing kept: a stream starts from the view
	return &View{store: st, logger: logger, Events: sse.NewBroker(streams), counts: newJobCounts(st, logger),
		watches: map[string]map[chan struct{}]struct{}{}, refreshers: map[string]*refresher{}}
}

var (
	keyJobState = []byte(`"job_state"`)
	keyJobID    = []byte(`"job_id"`)
)

// Observe updates the view from the validated result raw of a call of
// agent slug whose record belongs to workspace ws. t is the tape of raw the
// validation worked on, or nil: Observe then parses raw itself, unless raw
// mentions no job. When job is not nil it receives the job_state's view
// (read true) so that an A2A answer is built without reading raw again (its
// State is a view of raw); a call that needs no answer from it passes nil
// and costs no copy of the job's strings.
func (tv *View) Observe(ctx context.Context, ws, slug string, raw []byte, t *wire.Tape, job *Job) (read bool) {
	if t == nil {
		if !bytes.Contains(raw, keyJobState) && !bytes.Contains(raw, keyJobID) {
			return false // nothing about a job: no parse
		}
		t = wire.Get()
		defer wire.Put(t)
		if !t.Parse(raw) {
			return false
		}
	}
	if !isObject(t, 0) {
		return false
	}
	if js, ok := member(t, 0, "job_state"); ok && isObject(t, js) {
		if job != nil {
			*job, read = ReadJobState(t, js), true
		}
		// The record's fields as views of raw: most job results (job.sync
		// polls) repeat the stored record, and comparing needs no copy.
		id, status, text := recordFields(t, js)
		if len(id) == 0 {
			return read
		}
		state := t.Raw(js)
		var kb [128]byte
		key := appendTaskKey(kb[:0], ws, slug, id)
		d := digestRecord(status, text, state)
		if tv.last.same(key, d) {
			return read // this process's last result for the job: no round trip
		}
		k := string(key)
		if !tv.last.known(key) {
			// The first result for the job in this process (a start, or the
			// first poll after a restart): most often no record exists yet,
			// so try to create it first, which reads the existing one
			// otherwise (one round trip instead of a read and a write).
			if done, ok := tv.create(ctx, slug, k, status, text, state); ok {
				if done {
					tv.last.remember(k, d)
				}
				return read
			}
		}
		if tv.put(ctx, slug, k, func(old []byte, found bool) ([]byte, bool) {
			if found && sameRecord(old, status, text, state) {
				return nil, false // unchanged: neither built nor written
			}
			return encodeRecord(string(status), string(text), state), true
		}) {
			tv.last.remember(k, d)
		}
		return read
	}
	effects, ok := member(t, 0, "effects")
	if !ok || t.Nodes[effects].Kind != wire.Array {
		return false
	}
	for e := effects + 1; e < t.Nodes[effects].Next; e = t.Nodes[e].Next {
		if !isObject(t, e) {
			continue
		}
		job, _ := optString(t, e, "job_id")
		status, _ := optString(t, e, "status")
		if job == "" || status == "" {
			continue
		}
		text, _ := optString(t, e, "message")
		key := Key(ws, slug, job)
		tv.last.forget(key) // the record no longer is what a job_state made
		tv.put(ctx, slug, key, func(old []byte, found bool) ([]byte, bool) {
			if !found {
				return nil, false // only jobs already in the view
			}
			v, ok := DecodeRecord(old)
			if !ok {
				return nil, false
			}
			return encodeRecord(status, text, v.State), true
		})
	}
	return false
}

// put writes the value next computes from the current one (found false:
// none) under key, a job of agent slug, with compare-and-swap; next returns
// false to write nothing. A value equal to the stored one is not written
// again; a write updates the health figures. It reports whether the store
// answered every call (the value written, or nothing to write).
// Failures are logged: the view is a projection, never the call's outcome.
//
// Every update reads the stored record first: what another writer stored
// in between is compared with, never overwritten blindly. Observe skips the
// update altogether for a result that repeats this process's last one for
// the job (last.go).
func (tv *View) put(ctx context.Context, slug, key string, next func(old []byte, found bool) ([]byte, bool)) bool {
	tv.counts.seeded(ctx) // before the first write: the records already there are counted once
	for range maxViewRetries {
		old, found, err := tv.store.Get(ctx, key)
		if err != nil {
			tv.logger.LogAttrs(ctx, slog.LevelWarn, "a2a task view: read failed", slog.String("error", err.Error()))
			return false
		}
		val, ok := next(old, found)
		if !ok {
			return true
		}
		if found && bytes.Equal(old, val) {
			return true // job.sync polls that return the same state cost no write
		}
		var stored bool
		if !found {
			_, stored, err = tv.store.PutIfAbsent(ctx, key, val)
		} else {
			stored, err = tv.store.CompareAndSwap(ctx, key, old, val)
		}
		if err != nil {
			tv.logger.LogAttrs(ctx, slog.LevelWarn, "a2a task view: write failed", slog.String("error", err.Error()))
			return false
		}
		if stored {
			tv.counts.changed(slug, old, found, val)
			tv.notify(key, val)
			return true
		}
	}
	tv.logger.LogAttrs(ctx, slog.LevelWarn, "a2a task view: too many concurrent updates", slog.String("key", key))
	return false
}

// create stores the record of a job_state under key, a job of agent slug,
// unless one exists. ok reports that nothing is left to do: the record was
// created (done true), equals the stored one (done true), or the store
// failed, which is logged (done false). ok is false when another record is
// stored: the caller then updates it (put).
func (tv *View) create(ctx context.Context, slug, key string, status, text, state []byte) (done, ok bool) {
	tv.counts.seeded(ctx) // before the first write: the records already there are counted once
	val := encodeRecord(string(status), string(text), state)
	existing, stored, err := tv.store.PutIfAbsent(ctx, key, val)
	switch {
	case err != nil:
		tv.logger.LogAttrs(ctx, slog.LevelWarn, "a2a task view: write failed", slog.String("error", err.Error()))
		return false, true
	case stored:
		tv.counts.changed(slug, nil, false, val)
		tv.notify(key, val)
		return true, true
	case sameRecord(existing, status, text, state):
		return true, true
	}
	return false, false
}

// Watch returns a channel closed at the next write of key by this process.
func (tv *View) Watch(key string) chan struct{} {
	ch := make(chan struct{})
	tv.mu.Lock()
	defer tv.mu.Unlock()
	w := tv.watches[key]
	if w == nil {
		w = map[chan struct{}]struct{}{}
		tv.watches[key] = w
	}
	w[ch] = struct{}{}
	return ch
}

// Unwatch forgets ch (a no-op once it was closed).
func (tv *View) Unwatch(key string, ch chan struct{}) {
	tv.mu.Lock()
	defer tv.mu.Unlock()
	if w := tv.watches[key]; w != nil {
		delete(w, ch)
		if len(w) == 0 {
			delete(tv.watches, key)
		}
	}
}

// Load reads the view of one job.
func (tv *View) Load(ctx context.Context, key string) (Job, bool, error) {
	raw, found, err := tv.store.Get(ctx, key)
	if err != nil || !found {
		return Job{}, false, err
	}
	v, ok := DecodeRecord(raw)
	return v, ok, nil
}

// recordFields reads, at the job_state node js of t, what its record keeps
// besides the job_state itself (readJobState's id, status and text), as
// views of t's source when they have no escape sequence.
func recordFields(t *wire.Tape, js int32) (id, status, text []byte) {
	job, ok := member(t, js, "job")
	if !ok || !isObject(t, job) {
		return nil, nil, nil
	}
	id, status = optBytes(t, job, "id"), optBytes(t, job, "status")
	if d, ok := member(t, job, "display"); ok && isObject(t, d) {
		text = optBytes(t, d, "state_label")
	}
	return id, status, text
}

// optBytes is optString's value as bytes (nil when absent or not a string).
func optBytes(t *wire.Tape, obj int32, key string) []byte {
	if n, ok := member(t, obj, key); ok && t.Nodes[n].Kind == wire.String {
		return t.Str(n)
	}
	return nil
}

// Record layout pieces (encodeRecord).
var (
	recStatus = []byte(`{"status":`)
	recText   = []byte(`,"text":`)
	recState  = []byte(`,"job_state":`)
)

// sameRecord reports whether old is byte for byte
// encodeRecord(status, text, state), without building it: a job.sync poll
// answering the state already stored then costs the read and this compare.
func sameRecord(old, status, text, state []byte) bool {
	rest, ok := bytes.CutPrefix(old, recStatus)
	if ok {
		rest, ok = cutJSONString(rest, status)
	}
	if ok {
		rest, ok = bytes.CutPrefix(rest, recText)
	}
	if ok {
		rest, ok = cutJSONString(rest, text)
	}
	if ok {
		rest, ok = bytes.CutPrefix(rest, recState)
	}
	return ok && len(rest) == len(state)+1 && rest[len(state)] == '}' && bytes.Equal(rest[:len(state)], state)
}

// cutJSONString cuts from b the JSON string encodeRecord writes for s
// (encode.AppendString without HTML escaping).
func cutJSONString(b, s []byte) ([]byte, bool) {
	plain := true // printable ASCII other than '"' and '\\': written as is
	for _, c := range s {
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if !plain {
		return bytes.CutPrefix(b, encode.AppendString(nil, string(s), false))
	}
	if len(b) < len(s)+2 || b[0] != '"' || b[len(s)+1] != '"' || !bytes.Equal(b[1:len(s)+1], s) {
		return nil, false
	}
	return b[len(s)+2:], true
}

// encodeRecord is the stored value of a job's view.
func encodeRecord(status, text string, state []byte) []byte {
	out := make([]byte, 0, len(state)+len(status)+len(text)+48)
	out = append(out, `{"status":`...)
	out = encode.AppendString(out, status, false)
	out = append(out, `,"text":`...)
	out = encode.AppendString(out, text, false)
	out = append(out, `,"job_state":`...)
	out = append(out, state...)
	return append(out, '}')
}

// DecodeRecord reads a stored view: the job_state's, with the stored status
// and text (an effect may have changed them since).
func DecodeRecord(raw []byte) (Job, bool) {
	t := wire.Get()
	defer wire.Put(t)
	if !t.Parse(raw) || !isObject(t, 0) {
		return Job{}, false
	}
	js, ok := member(t, 0, "job_state")
	if !ok || !isObject(t, js) {
		return Job{}, false
	}
	v := ReadJobState(t, js)
	v.State = bytes.Clone(v.State)
	v.Status, _ = optString(t, 0, "status")
	v.Text, _ = optString(t, 0, "text")
	return v, v.ID != ""
}

// Job is what a task is made of: a job's id, mission, status and status
// text, whether a step awaits a person, and its last validated job_state
// (nil for a task without one: a failed start).
type Job struct {
	ID, Mission, Status, Text string
	Awaiting                  bool
	State                     []byte
}

// TaskState maps the job status to the task state (a2atask.TaskState
// documents the table): a submitted or working job with a step awaiting a
// person is input-required.
func (v *Job) TaskState() a2atask.TaskState {
	st := stateOf(v.Status)
	if v.Awaiting && (st == a2atask.StateSubmitted || st == a2atask.StateWorking) {
		return a2atask.StateInputRequired
	}
	return st
}

// taskStates maps the conventional job statuses (lower case).
var taskStates = map[string]a2atask.TaskState{
	"pending": a2atask.StateSubmitted, "queued": a2atask.StateSubmitted, "submitted": a2atask.StateSubmitted,
	"running": a2atask.StateWorking, "active": a2atask.StateWorking, "working": a2atask.StateWorking, "in_progress": a2atask.StateWorking,
	"awaiting": a2atask.StateInputRequired, "awaiting_input": a2atask.StateInputRequired, "input_required": a2atask.StateInputRequired,
	"completed": a2atask.StateCompleted, "complete": a2atask.StateCompleted, "done": a2atask.StateCompleted, "succeeded": a2atask.StateCompleted,
	"failed": a2atask.StateFailed, "error": a2atask.StateFailed,
	"stopped": a2atask.StateCanceled, "cancelled": a2atask.StateCanceled, "canceled": a2atask.StateCanceled,
}

// stateOf maps a job status to a task state.
func stateOf(status string) a2atask.TaskState {
	if st, ok := taskStates[status]; ok {
		return st
	}
	if st, ok := taskStates[strings.ToLower(strings.TrimSpace(status))]; ok {
		return st
	}
	return a2atask.StateUnknown
}

// ReadJobState reads the view of the job_state at node js of t.
func ReadJobState(t *wire.Tape, js int32) Job {
	v := Job{State: t.Raw(js)}
	job, ok := member(t, js, "job")
	if !ok || !isObject(t, job) {
		return v
	}
	v.ID, _ = optString(t, job, "id")
	v.Mission, _ = optString(t, job, "mission_id")
	v.Status, _ = optString(t, job, "status")
	if d, ok := member(t, job, "display"); ok && isObject(t, d) {
		v.Text, _ = optString(t, d, "state_label")
	}
	cases, ok := member(t, js, "cases")
	if !ok || t.Nodes[cases].Kind != wire.Array {
		return v
	}
	for c := cases + 1; c < t.Nodes[cases].Next && !v.Awaiting; c = t.Nodes[c].Next {
		steps, ok := member(t, c, "steps")
		if !ok || t.Nodes[steps].Kind != wire.Array {
			continue
		}
		for st := steps + 1; st < t.Nodes[steps].Next; st = t.Nodes[st].Next {
			if status, _ := optString(t, st, "status"); status == "awaiting" {
				if _, ok := member(t, st, "awaiting"); ok {
					v.Awaiting = true
					break
				}
			}
		}
	}
	return v
}

// taskEvent is the data the view publishes for a changed record:
// {"key":…,"record":…}.
func taskEvent(key string, record []byte) []byte {
	out := make([]byte, 0, len(key)+len(record)+24)
	out = append(out, `{"key":`...)
	out = encode.AppendString(out, key, false)
	out = append(out, `,"record":`...)
	out = append(out, record...)
	return append(out, '}')
}

// SplitEvent reads a taskEvent.
func SplitEvent(data []byte) (string, []byte, bool) {
	t := wire.Get()
	defer wire.Put(t)
	if !t.Parse(data) || !isObject(t, 0) {
		return "", nil, false
	}
	key, _ := optString(t, 0, "key")
	rec, ok := member(t, 0, "record")
	if !ok {
		return "", nil, false
	}
	return key, bytes.Clone(t.Raw(rec)), true
}

// MaxLiteralKeyPart is the longest workspace id or job id stored literally
// in a record key; longer ones are hashed (as the idempotency records' keys).
const MaxLiteralKeyPart = 128

// member returns the node of key in the object at obj.
func member(t *wire.Tape, obj int32, key string) (int32, bool) {
	return t.Member(obj, []byte(key))
}

// optString reads the optional string key of the object at obj: "" when
// absent, ok false when present but not a string.
func optString(t *wire.Tape, obj int32, key string) (string, bool) {
	n, found := member(t, obj, key)
	if !found {
		return "", true
	}
	if t.Nodes[n].Kind != wire.String {
		return "", false
	}
	return string(t.Str(n)), true
}

// isObject reports whether the node n is an object.
func isObject(t *wire.Tape, n int32) bool { return t.Nodes[n].Kind == wire.Object }
