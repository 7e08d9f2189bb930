package supervaizer

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/sse"
	"github.com/supervaize/supervaizer-go/internal/validate"
	"github.com/supervaize/supervaizer-go/internal/wire"
	"github.com/supervaize/supervaizer-go/store"
)

// TestTaskKeyIsStoreKey: the key the view builds in one buffer is the key
// store.Key builds from the idempotency-style parts, for every kind of part
// (escaped bytes, the separator, long values hashed, at the limit or just
// over it), with the job id given as a string or as bytes.
func TestTaskKeyIsStoreKey(t *testing.T) {
	long := strings.Repeat("w", maxLiteralKeyPart)
	tests := []struct {
		name, ws, slug, job string
	}{
		{"plain", "ws-1", "task-agent", "job-1"},
		{"empty parts", "", "a", ""},
		{"escaped bytes", "ws/1 %=#", "agent.x~_-", "jöb/\x00\xff"},
		{"workspace at the limit", long, "a", "job"},
		{"workspace over the limit", long + "x", "a", "job"},
		{"job over the limit", "ws", "a", long + "é"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := store.Key(taskNamespace, idemKeyPart(tt.ws), tt.slug, idemKeyPart(tt.job))
			assert.Equal(t, want, taskKey(tt.ws, tt.slug, tt.job))
			assert.Equal(t, want, string(appendTaskKey([]byte("prefix"), tt.ws, tt.slug, []byte(tt.job))[len("prefix"):]))
		})
	}
}

func FuzzTaskKey(f *testing.F) {
	f.Add("ws-1", "task-agent", "job-1")
	f.Add("ws/1 %=#", "a", strings.Repeat("j", maxLiteralKeyPart+1))
	f.Fuzz(func(t *testing.T, ws, slug, job string) {
		want := store.Key(taskNamespace, idemKeyPart(ws), slug, idemKeyPart(job))
		if got := taskKey(ws, slug, job); got != want {
			t.Fatalf("taskKey = %q, store.Key = %q", got, want)
		}
		if got := appendTaskKey(nil, ws, slug, []byte(job)); string(got) != want {
			t.Fatalf("appendTaskKey = %q, store.Key = %q", got, want)
		}
	})
}

// TestSameRecord: sameRecord is true exactly when the stored bytes are the
// record encodeRecord builds, strings written with escapes included.
func TestSameRecord(t *testing.T) {
	state := []byte(`{"job":{"id":"j"}}`)
	fields := []struct{ name, status, text string }{
		{"plain", "running", "Drafting"},
		{"empty", "", ""},
		{"quote and backslash", `a"b\c`, "x"},
		{"control bytes", "a\nb\tc\x01", "\x7f"},
		{"HTML bytes written as is", "<b>&", "a>b"},
		{"non-ASCII", "en cours", "étape 2 – relecture"},
		{"line separator escaped", "a\u2028b", "\u2029"},
		{"invalid UTF-8 replaced", "a\xffb", "\xc3"},
	}
	for _, f := range fields {
		t.Run(f.name, func(t *testing.T) {
			rec := encodeRecord(f.status, f.text, state)
			assert.True(t, sameRecord(rec, []byte(f.status), []byte(f.text), state))
			for _, other := range []struct {
				name               string
				status, text, stat []byte
				old                []byte
			}{
				{"another status", []byte(f.status + "x"), []byte(f.text), state, rec},
				{"another text", []byte(f.status), []byte("x" + f.text), state, rec},
				{"another state", []byte(f.status), []byte(f.text), []byte(`{"job":{"id":"k"}}`), rec},
				{"a shorter state", []byte(f.status), []byte(f.text), state[:len(state)-1], rec},
				{"a trailing byte", []byte(f.status), []byte(f.text), state, append(bytes.Clone(rec), ' ')},
				{"truncated", []byte(f.status), []byte(f.text), state, rec[:len(rec)-1]},
				{"empty", []byte(f.status), []byte(f.text), state, nil},
			} {
				assert.False(t, sameRecord(other.old, other.status, other.text, other.stat), other.name)
			}
		})
	}
	// The same text written with another escape is another record: the
	// compare is byte for byte, as the store's compare-and-swap.
	assert.False(t, sameRecord([]byte(`{"status":"\u003cb","text":"","job_state":{}}`), []byte("<b"), nil, []byte(`{}`)))
}

func FuzzSameRecord(f *testing.F) {
	f.Add([]byte(`{"status":"running","text":"","job_state":{}}`), []byte("running"), []byte(""), []byte("{}"))
	f.Add([]byte(`{"status":"a\"b","text":"\u2028","job_state":{"a":1}}`), []byte(`a"b`), []byte("\u2028"), []byte(`{"a":1}`))
	f.Fuzz(func(t *testing.T, old, status, text, state []byte) {
		want := bytes.Equal(old, encodeRecord(string(status), string(text), state))
		if got := sameRecord(old, status, text, state); got != want {
			t.Fatalf("sameRecord = %v, bytes.Equal(old, encodeRecord) = %v", got, want)
		}
		rec := encodeRecord(string(status), string(text), state)
		if !sameRecord(rec, status, text, state) {
			t.Fatalf("sameRecord(encodeRecord) = false for %q %q %q", status, text, state)
		}
	})
}

// TestObserveWithTheValidationTape: the view reads a result from the tape
// its validation built exactly as from a parse of the result: the same
// records end up in the store, for results with a job_state (escaped
// strings included), effects only, nothing about a job, or an error.
func TestObserveWithTheValidationTape(t *testing.T) {
	jobState := func(id, status, label string) *contracts.JobState {
		st := &contracts.JobState{Job: contracts.Job{ID: id, AgentSlug: "a", MissionID: "m-" + id, Status: status,
			Source: contracts.JobSource{Type: "fresh_start"}}}
		if label != "" {
			st.Job.Display = &contracts.JobDisplay{StateLabel: label}
		}
		return st
	}
	withState := func(res *contracts.ActionResult, st *contracts.JobState) *contracts.ActionResult {
		res.JobState = st
		return res
	}
	results := []*contracts.ActionResult{
		withState(OK(Effect{Type: "job.synced", JobID: "j1", Status: "running"}), jobState("j1", "running", "Drafting")),
		withState(OK(Effect{Type: "job.synced", JobID: "j2", Status: "running"}), jobState("j2", `run "<1>"`, "é\u2028\\")),
		OK(Effect{Type: "job.progressed", JobID: "j1", Status: "completed", Message: "now <completed>"}),
		OK(Effect{Type: "note.echoed"}),
		Fail("job_not_found", "no job %s", "j3"),
	}
	v := validate.Default()
	viaParse, viaTape := store.NewMemory(), store.NewMemory()
	views := map[bool]*taskView{
		false: newTaskView(viaParse, slog.New(slog.DiscardHandler), sse.Options{}),
		true:  newTaskView(viaTape, slog.New(slog.DiscardHandler), sse.Options{}),
	}
	req := &ActionRequest{AgentSlug: "a", Workspace: contracts.WorkspaceRef{ID: "ws"}}
	for i, res := range results {
		tape := wire.Get()
		raw, _, parsed, err := v.AppendResultTape([]byte("prefix"), res, tape)
		require.NoError(t, err, "result %d", i)
		require.True(t, parsed, "result %d: the validation hands over its tape", i)
		raw = raw[len("prefix"):]
		require.Equal(t, raw, tape.Src, "the tape reads the appended bytes")
		var parsedTape wire.Tape
		require.True(t, parsedTape.Parse(raw))
		require.Equal(t, parsedTape.Nodes, tape.Nodes, "result %d: the tape Parse builds", i)
		views[true].observe(t.Context(), req, raw, tape, nil)
		views[false].observe(t.Context(), req, raw, nil, nil)
		wire.Put(tape)
	}
	dump := func(st store.Store) map[string]string {
		out := map[string]string{}
		require.NoError(t, st.Scan(context.Background(), "", func(k string, v []byte) error { out[k] = string(v); return nil }))
		return out
	}
	want := dump(viaParse)
	require.Len(t, want, 2, "j1 and j2 are in the view")
	assert.Equal(t, want, dump(viaTape))
	rec, _, err := viaParse.Get(t.Context(), taskKey("ws", "a", "j1"))
	require.NoError(t, err)
	jv, ok := decodeRecord(rec)
	require.True(t, ok)
	assert.Equal(t, "completed", jv.status, "the effect's status")
	assert.Equal(t, "now <completed>", jv.text)
}
