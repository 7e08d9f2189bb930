package testing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
)

// The rules AssertConfirmIdempotent checks, as named in its failure messages.
const (
	ruleEqual    = `"results equal" (an identical retry returns the original result)`
	ruleNoEffect = `"no new effect" (an identical retry adds no effect)`
	ruleKey      = `"idempotency_key present" (recommended)`
	ruleStrict   = `"strictly idempotent response" (recommended)`
	ruleConflict = `"idempotency conflict" (recommended)`
	ruleProbe    = `"the retry creates nothing" (effect probe)`
	ruleReplay   = `"replay answers the recorded bytes"`
)

// IdempotencyOption turns on an opt-in check of [AssertConfirmIdempotent]
// (the recommended checks of the protocol; a project decision).
type IdempotencyOption func(*idempotencyChecks)

type idempotencyChecks struct {
	key, strict bool
	conflict    bool
	changed     any          // the input of the conflict call
	probe       func() int64 // counts the agent's side effects, or nil
}

// WithEffectProbe plugs a probe of the agent's own side effects, for example a
// counter of created records: the check fails unless the identical calls 2
// (the handler run again on a twin server) and 3 (the retry through the
// pipeline) leave the probe unchanged (a retry must create nothing). This
// catches a handler that creates records again but answers the same result.
func WithEffectProbe(probe func() int64) IdempotencyOption {
	return func(c *idempotencyChecks) { c.probe = probe }
}

// RequireIdempotencyKey checks that the request carries a non-empty
// idempotency_key.
func RequireIdempotencyKey() IdempotencyOption {
	return func(c *idempotencyChecks) { c.key = true }
}

// RequireStrictlyIdempotent checks that the first result has status "ok" and
// replay_safety.strictly_idempotent_response true.
func RequireStrictlyIdempotent() IdempotencyOption {
	return func(c *idempotencyChecks) { c.strict = true }
}

// ExpectConflict makes a fourth call, through the pipeline, with the same request but the input
// changedInput (encoded with encoding/json; a json.RawMessage is used as is),
// and checks that it returns status "error" with errors[0].code
// "idempotency_conflict": a result, not a JSON-RPC error.
// changedInput must not be JSON-equal to the request's input.
func ExpectConflict(changedInput any) IdempotencyOption {
	return func(c *idempotencyChecks) { c.conflict, c.changed = true, changedInput }
}

// RecommendedChecks turns on every recommended check: [RequireIdempotencyKey],
// [RequireStrictlyIdempotent] and [ExpectConflict] with changedInput.
func RecommendedChecks(changedInput any) IdempotencyOption {
	return func(c *idempotencyChecks) {
		c.key, c.strict, c.conflict, c.changed = true, true, true, changedInput
	}
}

// AssertConfirmIdempotent is the conformance helper of the protocol that every
// agent runs on its job.start handler (spec item 76: it reaches the handler
// twice). It makes three identical calls of req, each with a freshly minted
// token:
//
//  1. through ts's real pipeline, as Studio's first attempt;
//  2. on a twin of ts: a server serving the same agents with the same options
//     on an empty store, as after a lost idempotency record, so the SDK's
//     idempotency layer has nothing to answer from and the handler itself
//     runs again;
//  3. through ts's pipeline again, as Studio's retry.
//
// It asserts the required rules: "results equal" (result 2 is result 1, their
// JSON compared as values: no field is exempt, a timestamp included, since a
// retry answers what the first attempt answered), "no new effect" (every
// effect of result 2 is in result 1, counted, so a repeated effect is new)
// and "replay answers the recorded bytes" (result 3 is byte for byte result 1).
// [WithEffectProbe] adds "the retry creates nothing" (the probe does not move
// during calls 2 and 3); opts add the recommended checks. A [TestServer] of
// [Connect] has no twin: its call 2 goes through the pipeline, and the helper
// logs that the handler was not reached again. Each failed rule is reported
// with t.Errorf, naming the rule and showing the results, never t.Fatal; it
// returns whether every check passed.
//
// The twin shares the agents, so the handler's own store and counters, with
// ts: a handler that recognizes the retry in its own records (the job it
// created under the request's job_id or idempotency key) passes. The twin
// serves nothing over the network, sends no event to ts's stream and is shut
// down before the helper returns; ts's server keeps serving the agents.
func AssertConfirmIdempotent(t testing.TB, ts *TestServer, req contracts.ActionRequest, opts ...IdempotencyOption) bool {
	t.Helper()
	var checks idempotencyChecks
	for _, o := range opts {
		o(&checks)
	}
	ok := true
	fail := func(rule, format string, args ...any) {
		t.Helper()
		t.Errorf("svtest.AssertConfirmIdempotent: rule %s failed: "+format, append([]any{rule}, args...)...)
		ok = false
	}
	if checks.key && strings.TrimSpace(req.IdempotencyKey) == "" {
		fail(ruleKey, "the request has no idempotency_key (action %q)", req.Action)
	}
	ctx := t.Context()
	r1, err := ts.InvokeRaw(ctx, req)
	if err != nil {
		t.Errorf("svtest.AssertConfirmIdempotent: call 1 of action %q failed: %v%s", req.Action, err, errorData(err))
		return false
	}
	var before int64
	if checks.probe != nil {
		before = checks.probe()
	}
	const call2 = "call 2 (on a twin server with an empty store: the handler runs again)"
	r2, err := handlerAgain(t, ts, req)
	if err != nil {
		t.Errorf("svtest.AssertConfirmIdempotent: %s of action %q failed: %v%s\n\tresult 1: %s",
			call2, req.Action, err, errorData(err), r1)
		return false
	}
	if !jsonEqual(r1, r2) {
		fail(ruleEqual, "the handler, run again on the identical request in %s, returned a different result\n\tresult 1: %s\n\tresult 2: %s",
			call2, r1, r2)
	}
	if added, err := newEffects(r1, r2); err != nil {
		fail(ruleNoEffect, "%v\n\tresult 1: %s\n\tresult 2: %s", err, r1, r2)
	} else if len(added) > 0 {
		fail(ruleNoEffect, "the handler, run again in %s, added %d effect(s) absent from result 1: %s\n\tresult 1: %s\n\tresult 2: %s",
			call2, len(added), strings.Join(added, ", "), r1, r2)
	}
	const call3 = "call 3 (the retry through the pipeline)"
	r3, err := ts.InvokeRaw(ctx, req)
	if err != nil {
		t.Errorf("svtest.AssertConfirmIdempotent: %s of action %q failed: %v%s\n\tresult 1: %s",
			call3, req.Action, err, errorData(err), r1)
		return false
	}
	if checks.probe != nil {
		if after := checks.probe(); after != before {
			fail(ruleProbe, "the effect probe went from %d (after call 1) to %d during the identical calls 2 and 3", before, after)
		}
	}
	if !bytes.Equal(r1, r3) {
		fail(ruleReplay, "%s did not answer result 1 byte for byte\n\tresult 1: %s\n\tresult 3: %s", call3, r1, r3)
	}
	if checks.strict {
		if msg := strictProblem(r1); msg != "" {
			fail(ruleStrict, "%s\n\tresult 1: %s", msg, r1)
		}
	}
	if checks.conflict {
		if msg := conflictProblem(t, ts, req, checks.changed); msg != "" {
			fail(ruleConflict, "%s", msg)
		}
	}
	return ok
}

// handlerAgain makes the identical call on a twin of ts (twin.go), which runs
// the handler again; for a TestServer of Connect, which has none, through the
// pipeline, logged.
func handlerAgain(t testing.TB, ts *TestServer, req contracts.ActionRequest) (json.RawMessage, error) {
	t.Helper()
	tw, err := ts.newTwin()
	if errors.Is(err, errNoTwin) {
		t.Logf("svtest.AssertConfirmIdempotent: %v; call 2 goes through its pipeline, whose idempotency layer may answer without running the handler", err)
		return ts.InvokeRaw(t.Context(), req)
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := tw.close(); err != nil {
			t.Errorf("svtest.AssertConfirmIdempotent: shut the twin server down: %v", err)
		}
	}()
	return tw.InvokeRaw(t.Context(), req)
}

// errorData renders the data of a JSON-RPC error, which names the failed
// check (for example the workspace_authorization_* code).
func errorData(err error) string {
	var e *supervaizer.Error
	if !errors.As(err, &e) || e.Data() == nil {
		return ""
	}
	b, mErr := json.Marshal(e.Data())
	if mErr != nil {
		return ""
	}
	return " (data: " + string(b) + ")"
}

// strictProblem checks result 1 for status ok and a strictly idempotent
// response; it returns "" when they hold.
func strictProblem(r1 json.RawMessage) string {
	var res contracts.ActionResult
	if err := contracts.Unmarshal(r1, &res); err != nil {
		return fmt.Sprintf("result 1 cannot be decoded: %v", err)
	}
	var problems []string
	if res.Status != contracts.StatusOK {
		problems = append(problems, fmt.Sprintf("result 1 has status %q, want %q", res.Status, contracts.StatusOK))
	}
	switch {
	case res.ReplaySafety == nil:
		problems = append(problems, "result 1 has no replay_safety (want strictly_idempotent_response: true)")
	case !res.ReplaySafety.StrictlyIdempotentResponse:
		problems = append(problems, "result 1 has replay_safety.strictly_idempotent_response false, want true")
	}
	return strings.Join(problems, "; ")
}

// conflictProblem makes the third call with the changed input and returns ""
// when it is an idempotency conflict.
func conflictProblem(t testing.TB, ts *TestServer, req contracts.ActionRequest, changed any) string {
	t.Helper()
	in, err := encodeJSON(changed)
	if err != nil {
		return fmt.Sprintf("the changed input cannot be encoded: %v", err)
	}
	orig := req.Input
	if len(orig) == 0 {
		orig = json.RawMessage("{}")
	}
	if jsonEqual(in, orig) {
		return fmt.Sprintf("the changed input %s is JSON-equal to the request's input: pass a different input to ExpectConflict", in)
	}
	req3 := req
	req3.Input = in
	r4, err := ts.InvokeRaw(t.Context(), req3)
	if err != nil {
		return fmt.Sprintf("call 4 (same idempotency_key %q, changed input %s) must return a result with status %q, got a JSON-RPC error: %v%s",
			req.IdempotencyKey, in, contracts.StatusError, err, errorData(err))
	}
	var res contracts.ActionResult
	if err := contracts.Unmarshal(r4, &res); err != nil {
		return fmt.Sprintf("result 4 cannot be decoded: %v\n\tresult 4: %s", err, r4)
	}
	if res.Status != contracts.StatusError || len(res.Errors) == 0 || res.Errors[0].Code != contracts.ErrorIdempotencyConflict {
		return fmt.Sprintf("call 4 (same idempotency_key %q, changed input %s) must return status %q with errors[0].code %q\n\tresult 4: %s",
			req.IdempotencyKey, in, contracts.StatusError, contracts.ErrorIdempotencyConflict, r4)
	}
	return ""
}

func encodeJSON(v any) (json.RawMessage, error) {
	if raw, ok := v.(json.RawMessage); ok {
		if !json.Valid(raw) {
			return nil, fmt.Errorf("invalid JSON %q", raw)
		}
		return raw, nil
	}
	return contracts.Marshal(v)
}

// decodeValue decodes JSON into a generic value, numbers kept as written.
func decodeValue(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// jsonEqual reports whether a and b are the same JSON value (key order and
// white space do not matter; numbers compare as written). Invalid JSON is
// never equal.
func jsonEqual(a, b []byte) bool {
	va, errA := decodeValue(a)
	vb, errB := decodeValue(b)
	return errA == nil && errB == nil && reflect.DeepEqual(va, vb)
}

// newEffects returns, in canonical JSON, the effects of r2 that r1 lacks,
// counting repeats.
func newEffects(r1, r2 []byte) ([]string, error) {
	e1, err := canonicalEffects(r1)
	if err != nil {
		return nil, fmt.Errorf("result 1: %w", err)
	}
	e2, err := canonicalEffects(r2)
	if err != nil {
		return nil, fmt.Errorf("result 2: %w", err)
	}
	count := make(map[string]int, len(e1))
	for _, e := range e1 {
		count[e]++
	}
	var added []string
	for _, e := range e2 {
		if count[e] > 0 {
			count[e]--
			continue
		}
		added = append(added, e)
	}
	return added, nil
}

// canonicalEffects returns the effects of a result as canonical JSON (sorted
// keys, no white space).
func canonicalEffects(result []byte) ([]string, error) {
	var r struct {
		Effects []json.RawMessage `json:"effects"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return nil, fmt.Errorf("cannot read the effects: %w", err)
	}
	out := make([]string, len(r.Effects))
	for i, e := range r.Effects {
		v, err := decodeValue(e)
		if err != nil {
			return nil, fmt.Errorf("effect %d: %w", i, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("effect %d: %w", i, err)
		}
		out[i] = string(b)
	}
	return out, nil
}
