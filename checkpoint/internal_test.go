package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/redact"
	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/studio"
)

const internalToken = "cpt-SECRET-internal"

func TestCheckpointTokenRedacts(t *testing.T) {
	tok := checkpointToken(internalToken)
	snap, err := parseRuleSnapshot(json.RawMessage(`{"rule_snapshot":{"hash":"rs_1","checkpoint_url":"https://x.invalid/","version":1,"checkpoint_token":"` + internalToken + `"}}`))
	require.NoError(t, err)
	require.Equal(t, internalToken, snap.token().reveal())
	type holder struct {
		Tok  checkpointToken
		snap *ruleSnapshot
		val  ruleSnapshot
	}
	h := holder{Tok: tok, snap: snap, val: *snap}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3s"} {
		for _, v := range []any{tok, &tok, snap, *snap, h, &h} {
			out := fmt.Sprintf(verb, v)
			assert.NotContains(t, out, internalToken, "%s of %T", verb, v)
		}
	}
	assert.Equal(t, redact.Text, tok.String())
	assert.Equal(t, `"`+redact.Text+`"`, tok.GoString())

	var buf bytes.Buffer
	for _, l := range []*slog.Logger{slog.New(slog.NewJSONHandler(&buf, nil)), slog.New(slog.NewTextHandler(&buf, nil))} {
		l.Info("token", slog.Any("token", tok), slog.Any("holder", h), "raw", tok)
	}
	raw, err := json.Marshal(h)
	require.NoError(t, err)
	buf.Write(raw)
	text, err := tok.MarshalText()
	require.NoError(t, err)
	buf.Write(text)
	appended, err := tok.AppendText(nil)
	require.NoError(t, err)
	buf.Write(appended)
	assert.NotContains(t, buf.String(), internalToken)
	assert.Contains(t, buf.String(), redact.Text)
}

func TestAppearsIn(t *testing.T) {
	tests := []struct {
		data, secret string
		want         bool
	}{
		{`{"a":"x-tok-y"}`, "tok", true},
		{`{"a":"x\u003ctok"}`, "<tok", true}, // JSON-escaped form
		{`{"a":"none"}`, "tok", false},
		{`{"a":"anything"}`, "", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, appearsIn([]byte(tt.data), tt.secret), tt.data)
	}
}

func TestRetainedDecisionsBounded(t *testing.T) {
	assert.Equal(t, 1024, newCheckpointRuntime("a", store.NewMemory(), slog.New(slog.DiscardHandler)).retain,
		"the bound of the Python reference")
	ctx := context.Background()
	st := store.NewMemory()
	rt := newCheckpointRuntime("research-agent", st, slog.New(slog.DiscardHandler))
	rt.retain = 8
	clock := time.Date(2026, 10, 11, 0, 0, 0, 0, time.UTC)
	rt.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	// Lexical order of the occurrence ids differs from arrival order.
	ids := []string{"occ-9", "occ-1", "occ-5", "occ-3", "occ-7", "occ-2", "occ-8", "occ-4", "occ-6", "occ-0", "occ-a"}
	for _, id := range ids {
		d := &resumeDecision{AgentSlug: "research-agent", JobID: "job-1", CaseID: "case-" + id, CheckpointID: "cp", OccurrenceID: id,
			Phase: contracts.PhaseBefore, Status: Allow, SnapshotHash: "rs"}
		retained, err := rt.resume(ctx, d)
		require.NoError(t, err)
		require.True(t, retained)
	}
	var kept []string
	require.NoError(t, st.Scan(ctx, retainedPrefix("research-agent"), func(_ string, v []byte) error {
		var d resumeDecision
		require.NoError(t, json.Unmarshal(v, &d))
		kept = append(kept, d.OccurrenceID)
		return nil
	}))
	assert.ElementsMatch(t, ids[len(ids)-8:], kept, "the oldest are evicted first")
}

func TestCheckpointKeysBounded(t *testing.T) {
	long := strings.Repeat("é/", 600)
	for _, k := range []string{caseKey(long, long), occurrenceKey("research-agent", long, contracts.PhaseAfter), retainedKey("research-agent", long, contracts.PhaseBefore)} {
		assert.LessOrEqual(t, len(k), store.MaxKeyLen)
	}
	assert.NotEqual(t, occurrenceKey("a", long, "before"), occurrenceKey("a", long+"x", "before"))
}

func FuzzParseRuleSnapshot(f *testing.F) {
	f.Add([]byte(`{"rule_snapshot":{"hash":"rs_9a41c0","checkpoint_url":"https://x/","version":1,"checkpoint_token":"tok-SECRET"}}`))
	f.Add([]byte(`{"rule_snapshot":{"hash":"rs","checkpoint_url":"u","version":1.0,"checkpoint_token":"tok-SECRET"}}`))
	f.Add([]byte(`{"rule_snapshot":{"Hash":"rs","hash":"","version":"1","checkpoint_token":"tok-SECRET\n"}}`))
	f.Add([]byte(`{"rule_snapshot":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := parseRuleSnapshot(data)
		if err != nil {
			assert.NotContains(t, err.Error(), "SECRET", "an error never quotes the input")
			return
		}
		assert.NotEmpty(t, strings.TrimSpace(snap.hash))
		tok := snap.token().reveal()
		assert.NotEmpty(t, strings.TrimSpace(tok))
		assert.True(t, redact.HeaderSafe(tok))
	})
}

func FuzzDecodeCheckpointResponse(f *testing.F) {
	f.Add([]byte(`{"checkpoint_id":"cp_51e2","status":"allow","snapshot_hash":"rs_9a41c0","input_hash":"ih_77d0"}`))
	f.Add([]byte(`{"checkpoint_id":"cp","status":"pause","snapshot_hash":"rs_9a41c0"}`))
	f.Add([]byte(`{"checkpoint_id":" ","status":"stop","snapshot_hash":"rs_other","input_hash":null}`))
	f.Add([]byte(`{"checkpoint_id":1,"status":"ALLOW"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		resp, err := decodeCheckpointResponse(data, "rs_9a41c0")
		if err != nil {
			return
		}
		assert.Contains(t, []string{Allow, Pause, Stop}, resp.Status)
		assert.NotEmpty(t, strings.TrimSpace(resp.CheckpointID))
		assert.Equal(t, "rs_9a41c0", resp.SnapshotHash)
	})
}

func FuzzParseResumeDecision(f *testing.F) {
	f.Add([]byte(`{"checkpoint_id":"cp_51e2","occurrence_id":"send-brief","phase":"before","status":"allow","snapshot_hash":"rs","input_hash":"ih","decision_id":"dec_03"}`))
	f.Add([]byte(`{"checkpoint_id":"cp","occurrence_id":"o","phase":"after","status":"pause","snapshot_hash":"rs"}`))
	f.Add([]byte(`{"checkpoint_id":"cp","occurrence_id":"o","phase":"during","status":"stop","snapshot_hash":"rs","input_hash":7}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseResumeDecision(&contracts.ActionRequest{AgentSlug: "a", JobID: "job-1", CaseID: "case-1", Input: data})
		if err != nil {
			assert.ErrorIs(t, err, errResumeRejected)
			return
		}
		assert.Contains(t, []string{Allow, Stop}, d.Status)
		assert.Contains(t, []string{contracts.PhaseBefore, contracts.PhaseAfter}, d.Phase)
		for _, s := range []string{d.CheckpointID, d.OccurrenceID, d.SnapshotHash} {
			assert.NotEmpty(t, strings.TrimSpace(s))
		}
	})
}

// FuzzRestoreSavedGate reads arbitrary saved-gate records: Restore never
// panics, never quotes the record in an error, and only returns a usable gate.
func FuzzRestoreSavedGate(f *testing.F) {
	f.Add([]byte(`{"version":1,"agent_slug":"research-agent","job_id":"job-1","snapshot_hash":"rs","checkpoint_token":"tok-SECRET","secret_refs":["context.x"]}`))
	f.Add([]byte(`{"version":1,"agent_slug":"research-agent","job_id":"job-1","snapshot_hash":"rs","checkpoint_token":"tok-SECRET\n"}`))
	f.Add([]byte(`{"version":2,"agent_slug":"research-agent","job_id":"job-1","workspace_id":"ws","checkpoint_token":"tok-SECRET"}`))
	f.Add([]byte(`{"checkpoint_token":"tok-SECRET"`))
	f.Add([]byte(`null`))
	agent := NewRuntime("research-agent", &contracts.RuleCheckpoints{Phases: []string{contracts.PhaseBefore}})
	account, err := studio.NewClient(studio.Config{APIURL: "http://127.0.0.1:1", WorkspaceID: "ws", APIKey: "key"})
	require.NoError(f, err)
	st := store.NewMemory()
	agent.Attach(Config{Store: st, Logger: slog.New(slog.DiscardHandler)})
	key := gateKey(agent.Slug(), "job-1")
	f.Fuzz(func(t *testing.T, data []byte) {
		require.NoError(t, st.Delete(context.Background(), key))
		_, _, err := st.PutIfAbsent(context.Background(), key, data)
		require.NoError(t, err)
		g, err := RestoreGate(context.Background(), agent, account, "job-1")
		if err != nil {
			var rec struct {
				Token string `json:"checkpoint_token"`
			}
			if json.Unmarshal(data, &rec) == nil && strings.Contains(rec.Token, "SECRET") {
				assert.NotContains(t, err.Error(), rec.Token, "an error never quotes the token")
			}
			assert.True(t, errors.Is(err, ErrInvalidState) || errors.Is(err, ErrGateNotFound), err.Error())
			return
		}
		assert.Equal(t, "job-1", g.JobID())
		assert.NotEmpty(t, strings.TrimSpace(g.SnapshotHash()))
		tok := g.snapshot.token().reveal()
		assert.NotEmpty(t, strings.TrimSpace(tok))
		assert.True(t, redact.HeaderSafe(tok))
	})
}

// TestAttachGoesBackOnceTheServerStops: a server attached after another one
// (a test's twin, the controller of a registration handshake) takes the agent
// only while it runs; once it stops, the agent is back on the latest server
// still running, and the stopped runtimes are forgotten.
func TestAttachGoesBackOnceTheServerStops(t *testing.T) {
	agent := NewRuntime("research-agent", &contracts.RuleCheckpoints{Phases: []string{contracts.PhaseBefore}})
	_, err := agent.checkpointRuntime()
	require.Error(t, err, "not served yet")
	discard := slog.New(slog.DiscardHandler)
	type server struct {
		st   *store.Memory
		stop chan struct{}
	}
	attach := func() server {
		s := server{st: store.NewMemory(), stop: make(chan struct{})}
		agent.Attach(Config{Store: s.st, Logger: discard, Stopped: s.stop})
		return s
	}
	storeOf := func() store.Store {
		rt, err := agent.checkpointRuntime()
		require.NoError(t, err)
		return rt.store
	}
	chain := func() int {
		n := 0
		for rt := agent.checkpoints; rt != nil; rt = rt.prev {
			n++
		}
		return n
	}
	a := attach()
	assert.Same(t, a.st, storeOf())
	b := attach()
	assert.Same(t, b.st, storeOf(), "the last server attached serves the agent while it runs")
	close(b.stop)
	assert.Same(t, a.st, storeOf(), "back on the server still running")
	c := attach()
	d := attach()
	close(c.stop)
	assert.Same(t, d.st, storeOf())
	assert.Equal(t, 2, chain(), "the stopped runtimes are forgotten: d, then a")
	close(d.stop)
	assert.Same(t, a.st, storeOf())
	close(a.stop)
	assert.Same(t, d.st, storeOf(), "every server stopped: the last one attached")
}
