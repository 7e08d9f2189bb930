package taskview

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/supervaize/supervaizer-go/store"
)

// idemKeyPart is the idempotency records' key part (package supervaizer),
// which the view's keys follow: the value, or its hash when long.
func idemKeyPart(v string) string {
	if len(v) > MaxLiteralKeyPart {
		d := sha256.Sum256([]byte(v))
		return "#" + hex.EncodeToString(d[:])
	}
	return "=" + v
}

// TestTaskKeyIsStoreKey: the key the view builds in one buffer is the key
// store.Key builds from the idempotency-style parts, for every kind of part
// (escaped bytes, the separator, long values hashed, at the limit or just
// over it), with the job id given as a string or as bytes.
func TestTaskKeyIsStoreKey(t *testing.T) {
	long := strings.Repeat("w", MaxLiteralKeyPart)
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
			assert.Equal(t, want, Key(tt.ws, tt.slug, tt.job))
			assert.Equal(t, want, string(appendTaskKey([]byte("prefix"), tt.ws, tt.slug, []byte(tt.job))[len("prefix"):]))
		})
	}
}

func FuzzTaskKey(f *testing.F) {
	f.Add("ws-1", "task-agent", "job-1")
	f.Add("ws/1 %=#", "a", strings.Repeat("j", MaxLiteralKeyPart+1))
	f.Fuzz(func(t *testing.T, ws, slug, job string) {
		want := store.Key(taskNamespace, idemKeyPart(ws), slug, idemKeyPart(job))
		if got := Key(ws, slug, job); got != want {
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
