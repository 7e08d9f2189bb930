//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/checkpoint"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/proctest"
	"github.com/supervaize/supervaizer-go/store"
)

// buildCrashpoint builds the agent with the crashpoint tag (crashpoint.go):
// it kills itself with SIGKILL before the write RESEARCH_AGENT_CRASH_AT_WRITE
// names.
func buildCrashpoint(t *testing.T) string {
	t.Helper()
	return proctest.Build(t, "research-agent-crashpoint", "-tags", "crashpoint")
}

// tryInvoke calls an action on the agent at base and reports whether it was
// answered without error; a dead or dying process is no failure here.
func tryInvoke(t *testing.T, c *client, base string, req contracts.ActionRequest) bool {
	t.Helper()
	resp, raw, err := postRPC(t.Context(), http.DefaultClient, base, 1, supervaizer.MethodActionInvoke,
		map[string]any{"action_request": req}, c.studio.TokenForAction(req))
	var out rpcResponse
	return err == nil && resp.StatusCode == http.StatusOK && json.Unmarshal(raw, &out) == nil && out.Error == nil
}

// realKillCell names one write of a mode's delivery: the nth written key of
// kind (see crashKeyLabel).
type realKillCell struct {
	mode      string
	kind      string
	nth       int
	why       string
	interrupt bool // the kill falls between "effect started" and the brief
}

// TestGovernedDeliveryRealKill runs a few cells of the kill matrix with a real
// kill -9: the agent's binary, built with the crashpoint tag, sends itself
// SIGKILL just before the chosen write; the agent restarted on the same data
// dir settles the job as the matrix requires.
func TestGovernedDeliveryRealKill(t *testing.T) {
	cells := []realKillCell{
		{mode: "allow", kind: "outbox", nth: 1, why: "the brief is about to go out", interrupt: true},
		{mode: "allow", kind: "jobs", nth: 1, why: "advancement started, delivery not recorded (ambiguous)"},
		{mode: "pause before then allow", kind: "checkpoint-before", nth: 3, why: "Studio's decision is being persisted"},
		{mode: "pause after then stop", kind: "jobs", nth: 1, why: "the stop is being recorded on the job"},
	}
	bin := buildCrashpoint(t)
	modes := map[string]crashMode{}
	for _, m := range crashModes {
		modes[m.name] = m
	}
	for _, cell := range cells {
		t.Run(cell.mode+", before "+cell.kind+" #"+strconv.Itoa(cell.nth), func(t *testing.T) {
			mode, ok := modes[cell.mode]
			require.True(t, ok)
			// The probe, in-process, gives the position of the write.
			probe := newCrashCell(t, mode)
			h, ds, _ := probe.start(0)
			approveGoverned(t, h.client, probe.api.RuleSnapshot(snapshotHash))
			probe.drive(h, "the probe settles", func() bool { return probe.settled(h) })
			writes := ds.counted()
			h.stop()
			k, seen := 0, 0
			for i, key := range writes {
				if crashKeyLabel(key) == cell.kind {
					if seen++; seen == cell.nth {
						k = i + 1
						break
					}
				}
			}
			require.Positive(t, k, "no write %s #%d in %q", cell.kind, cell.nth, writes)
			sentBefore := false // the killed agent sent the brief
			for _, key := range writes[:k-1] {
				sentBefore = sentBefore || crashKeyLabel(key) == "outbox"
			}

			c := newCrashCell(t, mode)
			var env []string
			for key, v := range c.env {
				env = append(env, key+"="+v)
			}
			env = append(env, "SUPERVAIZER_ADDR=127.0.0.1:0", "RESEARCH_AGENT_CRASH_AT_WRITE="+strconv.Itoa(k))
			proc := proctest.Start(t, bin, env)
			base := proc.AwaitURL(t)
			alive := func() bool {
				resp, err := http.Get(base + a2a.AgentsListPath)
				if err != nil {
					return false
				}
				_ = resp.Body.Close()
				return true
			}
			proc.AwaitServing(t, "the agent", alive)
			cl := &client{t: t, base: base, studio: c.studio}
			approveGoverned(t, cl, c.api.RuleSnapshot(snapshotHash))
			deadline := time.Now().Add(60 * time.Second)
			for alive() {
				require.True(t, time.Now().Before(deadline), "the agent did not kill itself\n%s", proc.Output())
				if strings.Contains(proc.Stderr.String(), "rule checkpoint waiting for a decision") {
					for _, cp := range c.api.Checkpoints() {
						status, ok := mode.decide[cp.Phase]
						if ok && cp.Status == checkpoint.Pause && !c.delivered[cp.Phase] {
							req := jobRequest(t, wsA, supervaizer.RuleCheckpointResumeAction, "job-g", cp.ResumeInput(status, "dec-"+cp.Phase))
							req.CaseID = cp.CaseID
							c.delivered[cp.Phase] = tryInvoke(t, cl, base, req)
						}
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			require.Contains(t, proc.Stderr.String(), fmt.Sprintf("crashpoint: SIGKILL before write %d ", k), proc.Output())

			h2, _, logs := c.start(0)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("output of the killed agent:\n%s\nlogs after the restart:\n%s", proc.Output(), logs.read())
				}
			})
			c.drive(h2, "the restarted agent settles the job", func() bool { return c.settled(h2) })
			rec := c.job(h2)
			want, failure := mode.want, mode.failure
			if cell.interrupt {
				want, failure = jobFailed, interruptedFailure
			}
			assert.Equal(t, want, rec.Status, cell.why)
			assert.Equal(t, failure, rec.Failure)
			sent := mode.effect && !cell.interrupt
			assert.Equal(t, sent, outboxHas(t, h2, "job-g"), "the brief went out")
			assert.Equal(t, sent, rec.Delivery != nil, "the delivery is recorded")
			assert.Len(t, slices.Compact(billedKeys(c.api)), map[bool]int{true: 1}[sent], "a sent brief is billed once")
			assert.Equal(t, map[bool]int64{true: 1}[sent && !sentBefore], c.tally.effects.Load(),
				"the restarted agent sends the brief only if the killed one had not")
			for _, phase := range []string{contracts.PhaseBefore, contracts.PhaseAfter} {
				if _, paused := mode.decide[phase]; paused {
					raw, found, err := h2.app.store.Get(t.Context(), store.Key("rule-checkpoints", "occurrence", agentSlug, "send-brief-job-g", phase))
					require.NoError(t, err)
					require.True(t, found)
					assert.Contains(t, string(raw), `"decision_id":"dec-`+phase+`"`, "the decision is applied")
				}
			}
			_, err := h2.app.gate(t.Context(), rec)
			assert.True(t, errors.Is(err, checkpoint.ErrGateNotFound), "the gate is forgotten")
		})
	}
}
