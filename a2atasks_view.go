package supervaizer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"sync"

	"github.com/supervaize/supervaizer-go/internal/encode"
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

func taskKey(workspaceID, slug, jobID string) string {
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
	dst = appendKeyEscaped(dst, taskNamespace)
	dst = append(dst, store.Separator)
	dst = appendIdemKeyPart(dst, workspaceID)
	dst = append(dst, store.Separator)
	dst = appendKeyEscaped(dst, slug)
	dst = append(dst, store.Separator)
	return appendIdemKeyPart(dst, jobID)
}

// appendIdemKeyPart appends idemKeyPart(v), escaped as store.Key escapes a
// part.
func appendIdemKeyPart[S string | []byte](dst []byte, v S) []byte {
	if len(v) > maxLiteralKeyPart {
		d := sha256.Sum256([]byte(v))
		dst = appendKeyEscaped(dst, "#")
		return hex.AppendEncode(dst, d[:]) // lower-case hex: nothing to escape
	}
	dst = appendKeyEscaped(dst, "=")
	return appendKeyEscaped(dst, v)
}

// appendKeyEscaped appends s escaped as store.Key escapes each part: ASCII
// letters, digits and "-._~" as is, every other byte as %XX (upper case).
func appendKeyEscaped[S string | []byte](dst []byte, s S) []byte {
	const upperHex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', upperHex[c>>4], upperHex[c&0xF])
	}
	return dst
}

type taskView struct {
	store  store.Store
	logger *slog.Logger
	// events carries each changed record to the A2A streams
	// (a2atasks_stream.go); it keeps nothing for replay.
	events *sse.Broker
	// counts are the health figures, kept as records change (health.go).
	counts *jobCounts

	mu      sync.Mutex
	watches map[string]map[chan struct{}]struct{}
}

func newTaskView(st store.Store, logger *slog.Logger, streams sse.Options) *taskView {
	streams.ReplaySize, streams.ReplayBytes = 1, 1 // nothing kept: a stream starts from the view
	return &taskView{store: st, logger: logger, events: sse.NewBroker(streams), counts: newJobCounts(st, logger),
		watches: map[string]map[chan struct{}]struct{}{}}
}

var (
	keyJobState = []byte(`"job_state"`)
	keyJobID    = []byte(`"job_id"`)
)

// observe updates the view from the validated result raw of req. t is the
// tape of raw the validation worked on, or nil: observe then parses raw
// itself, unless raw mentions no job. For an A2A call it hands the
// job_state's view to call, so that the answer is built without reading raw
// again (its state is a view of raw).
func (tv *taskView) observe(ctx context.Context, req *ActionRequest, raw []byte, t *wire.Tape, call *a2aInvocation) {
	if t == nil {
		if !bytes.Contains(raw, keyJobState) && !bytes.Contains(raw, keyJobID) {
			return // nothing about a job: no parse
		}
		t = wire.Get()
		defer wire.Put(t)
		if !t.Parse(raw) {
			return
		}
	}
	if !isObject(t, 0) {
		return
	}
	ws := recordWorkspace(req)
	if js, ok := member(t, 0, "job_state"); ok && isObject(t, js) {
		if call != nil {
			call.view, call.read = readJobState(t, js), true
		}
		// The record's fields as views of raw: most job results (job.sync
		// polls) repeat the stored record, and comparing needs no copy.
		id, status, text := recordFields(t, js)
		if len(id) == 0 {
			return
		}
		state := t.Raw(js)
		var kb [128]byte
		tv.put(ctx, req.AgentSlug, string(appendTaskKey(kb[:0], ws, req.AgentSlug, id)), func(old []byte, found bool) ([]byte, bool) {
			if found && sameRecord(old, status, text, state) {
				return nil, false // unchanged: neither built nor written
			}
			return encodeRecord(string(status), string(text), state), true
		})
		return
	}
	effects, ok := member(t, 0, "effects")
	if !ok || t.Nodes[effects].Kind != wire.Array {
		return
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
		tv.put(ctx, req.AgentSlug, taskKey(ws, req.AgentSlug, job), func(old []byte, found bool) ([]byte, bool) {
			if !found {
				return nil, false // only jobs already in the view
			}
			v, ok := decodeRecord(old)
			if !ok {
				return nil, false
			}
			return encodeRecord(status, text, v.state), true
		})
	}
}

// put writes the value next computes from the current one (found false:
// none) under key, a job of agent slug, with compare-and-swap; next returns
// false to write nothing. A value equal to the stored one is not written
// again; a write updates the health figures.
// Failures are logged: the view is a projection, never the call's outcome.
//
// Every update reads the stored record first; the view keeps no cache of
// what this process last wrote or read. Instances sharing the store
// (PostgreSQL, or several Servers on one store) write the same keys, and a
// cache saying "this record is stored already" is wrong as soon as another
// instance wrote in between: the newest validated state would be lost
// (TestA2ATaskViewAcrossInstances). Caching a digest of the stored value
// does not help, as checking it still takes the read, and comparing the
// bytes read (sameRecord) costs less than hashing them. Only a version
// check cheaper than a read could skip it, and no Store offers one. A
// store.Exclusive store (memory, bbolt) is not enough either: it excludes
// other processes, not other writers in this one (two Servers on one
// store, or each behind its own wrapper of it).
func (tv *taskView) put(ctx context.Context, slug, key string, next func(old []byte, found bool) ([]byte, bool)) {
	tv.counts.seeded(ctx) // before the first write: the records already there are counted once
	for range maxViewRetries {
		old, found, err := tv.store.Get(ctx, key)
		if err != nil {
			tv.logger.LogAttrs(ctx, slog.LevelWarn, "a2a task view: read failed", slog.String("error", err.Error()))
			return
		}
		val, ok := next(old, found)
		if !ok {
			return
		}
		if found && bytes.Equal(old, val) {
			return // job.sync polls that return the same state cost no write
		}
		var stored bool
		if !found {
			_, stored, err = tv.store.PutIfAbsent(ctx, key, val)
		} else {
			stored, err = tv.store.CompareAndSwap(ctx, key, old, val)
		}
		if err != nil {
			tv.logger.LogAttrs(ctx, slog.LevelWarn, "a2a task view: write failed", slog.String("error", err.Error()))
			return
		}
		if stored {
			tv.counts.changed(slug, old, found, val)
			tv.events.Publish(key, taskEvent(key, val))
			tv.mu.Lock()
			for ch := range tv.watches[key] {
				close(ch)
			}
			delete(tv.watches, key)
			tv.mu.Unlock()
			return
		}
	}
	tv.logger.LogAttrs(ctx, slog.LevelWarn, "a2a task view: too many concurrent updates", slog.String("key", key))
}

// watch returns a channel closed at the next write of key by this process.
func (tv *taskView) watch(key string) chan struct{} {
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

// unwatch forgets ch (a no-op once it was closed).
func (tv *taskView) unwatch(key string, ch chan struct{}) {
	tv.mu.Lock()
	defer tv.mu.Unlock()
	if w := tv.watches[key]; w != nil {
		delete(w, ch)
		if len(w) == 0 {
			delete(tv.watches, key)
		}
	}
}

// loadKey reads the view of one job.
func (tv *taskView) loadKey(ctx context.Context, key string) (jobView, bool, error) {
	raw, found, err := tv.store.Get(ctx, key)
	if err != nil || !found {
		return jobView{}, false, err
	}
	v, ok := decodeRecord(raw)
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

// decodeRecord reads a stored view: the job_state's, with the stored status
// and text (an effect may have changed them since).
func decodeRecord(raw []byte) (jobView, bool) {
	t := wire.Get()
	defer wire.Put(t)
	if !t.Parse(raw) || !isObject(t, 0) {
		return jobView{}, false
	}
	js, ok := member(t, 0, "job_state")
	if !ok || !isObject(t, js) {
		return jobView{}, false
	}
	v := readJobState(t, js)
	v.state = bytes.Clone(v.state)
	v.status, _ = optString(t, 0, "status")
	v.text, _ = optString(t, 0, "text")
	return v, v.id != ""
}
