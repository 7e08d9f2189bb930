package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/supervaize/supervaizer-go/contracts"
)

// startedJob is the job.start call check made, for the event it publishes.
type startedJob struct {
	slug, requestID string
}

// startInput builds a job.start input from the job.start form: a value for
// every required field, by its type; {} without a form.
func startInput(form json.RawMessage) map[string]any {
	in := map[string]any{}
	var doc struct {
		Fields []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Required bool   `json:"required"`
			Options  []struct {
				Value any `json:"value"`
			} `json:"options"`
		} `json:"fields"`
	}
	if json.Unmarshal(form, &doc) != nil {
		return in
	}
	for _, f := range doc.Fields {
		if !f.Required || f.ID == "" {
			continue
		}
		switch {
		case len(f.Options) > 0:
			in[f.ID] = f.Options[0].Value
		case f.Type == "number" || f.Type == "integer":
			in[f.ID] = 1
		case f.Type == "boolean" || f.Type == "checkbox":
			in[f.ID] = true
		default:
			in[f.ID] = "supervaizer-check"
		}
	}
	return in
}

// conflicting returns in with one value changed, or with one key added when
// it has no string value.
func conflicting(in map[string]any) map[string]any {
	out := maps.Clone(in)
	for _, k := range slices.Sorted(maps.Keys(out)) {
		if s, ok := out[k].(string); ok {
			out[k] = s + "-conflict"
			return out
		}
	}
	out["supervaizer_check"] = "conflict"
	return out
}

// checkJobStart: with -write, job.start on every agent that declares it, the
// call replayed with the same key (the same answer) and with another input
// (idempotency_conflict), model.md §9.
func (c *checker) checkJobStart() []startedJob {
	var started []startedJob
	for _, a := range c.agents {
		if !slices.Contains(a.actions, "job.start") {
			continue
		}
		names := []string{"job.start:" + a.slug, "job.start.replay:" + a.slug, "job.start.conflict:" + a.slug}
		skipRest := func(from int, format string, args ...any) {
			for _, n := range names[from:] {
				c.skip(n, format, args...)
			}
		}
		if !c.write {
			skipRest(0, "job.start creates a job: pass -write to run it")
			continue
		}
		if c.apiKey == "" {
			skipRest(0, "%v", errNoAPIKey)
			continue
		}
		key := fmt.Sprintf("supervaizer-check-%d", time.Now().UnixNano())
		in := startInput(a.startForm)
		request := func(input map[string]any) (string, map[string]any) {
			id := c.requestID()
			return id, map[string]any{"action_request": map[string]any{
				"request_id": id, "actor": map[string]any{"user_id": "supervaizer-check"},
				"workspace": map[string]any{"id": c.tf.workspace}, "mission_id": "supervaizer-check",
				"agent_slug": a.slug, "surface": "job.start", "action": "job.start",
				"job_id": key, "idempotency_key": key, "input": input,
			}}
		}
		invoke := func(input map[string]any) (string, *rpcAnswer, *contracts.ActionResult, error) {
			tok, err := c.token(a, []string{methodActionInvoke, "job.start"}, nil)
			if err != nil {
				return "", nil, nil, err
			}
			id, params := request(input)
			ans, err := c.call(methodActionInvoke, params, tok)
			if err != nil {
				return id, nil, nil, err
			}
			if ans.err != nil {
				return id, ans, nil, fmt.Errorf("error %s, want an action result", ans.err)
			}
			var res contracts.ActionResult
			if err := contracts.DefaultValidator().Decode(contracts.ModelActionResult, ans.result, &res); err != nil {
				return id, ans, nil, fmt.Errorf("the result breaks the ActionResult contract: %v", err)
			}
			return id, ans, &res, nil
		}
		id, first, res, err := invoke(in)
		if err == nil && res.Status != contracts.StatusOK {
			err = fmt.Errorf("status %q %+v, want ok (input %v, built from the job.start form)", res.Status, res.Errors, in)
		}
		if err != nil {
			c.fail(names[0], "%v", err)
			skipRest(1, "job.start failed")
			continue
		}
		c.pass(names[0], "status ok, idempotency_key %s", key)
		started = append(started, startedJob{slug: a.slug, requestID: id})

		_, again, res2, err := invoke(in)
		switch {
		case err != nil:
			c.fail(names[1], "%v", err)
		case !jsonEqual(first.result, again.result):
			c.fail(names[1], "the replay's result differs from the first one's")
		case res2.ReplaySafety == nil || !res2.ReplaySafety.StrictlyIdempotentResponse:
			c.fail(names[1], "replay_safety.strictly_idempotent_response is not true (model.md §9 rule 3)")
		default:
			c.pass(names[1], "the same result")
		}
		_, _, res3, err := invoke(conflicting(in))
		switch {
		case err != nil:
			c.fail(names[2], "%v", err)
		case res3.Status != contracts.StatusError || len(res3.Errors) == 0 || res3.Errors[0].Code != "idempotency_conflict":
			c.fail(names[2], "status %q %+v, want error idempotency_conflict", res3.Status, res3.Errors)
		default:
			c.pass(names[2], "idempotency_conflict")
		}
	}
	return started
}

// checkEvents: the stream opened first begins with supervaizer.connected,
// carries the effect of each job.start check made, and sends a heartbeat
// after a silence (controller.md §11).
func (c *checker) checkEvents(s *eventStream, started []startedJob) {
	names := []string{"events.connected", "events.effect", "events.heartbeat"}
	if s.err != nil {
		for _, n := range names {
			if s.err == errNoAPIKey {
				c.skip(n, "%v", s.err)
			} else {
				c.fail(n, "GET /a2a/events: %v", s.err)
			}
		}
		return
	}
	next := func(timeout time.Duration) (sseEvent, bool) {
		select {
		case e, ok := <-s.events:
			return e, ok
		case <-time.After(timeout):
			return sseEvent{}, false
		}
	}
	e, ok := next(5 * time.Second)
	if !ok || e.name != "supervaizer.connected" || !jsonEqual(e.data, []byte(`{"status":"connected"}`)) {
		c.fail(names[0], "the first event is %q %s, want supervaizer.connected {\"status\":\"connected\"}", e.name, e.data)
	} else {
		c.pass(names[0], "supervaizer.connected")
	}
	heartbeat := false
	for _, j := range started {
		name := names[1] + ":" + j.slug
		deadline := time.Now().Add(5 * time.Second)
		found := false
		for !found && time.Now().Before(deadline) {
			e, ok := next(time.Until(deadline))
			if !ok {
				break
			}
			heartbeat = heartbeat || e.name == "supervaizer.heartbeat" && jsonEqual(e.data, []byte(`{"status":"ok"}`))
			var d struct {
				AgentSlug string `json:"agent_slug"`
				Action    string `json:"action"`
				RequestID string `json:"request_id"`
				Effects   []any  `json:"effects"`
			}
			if e.name == "supervaizer.effect" && json.Unmarshal(e.data, &d) == nil && d.RequestID == j.requestID {
				found = true
				if e.id == "" || d.AgentSlug != j.slug || d.Action != "job.start" || d.Effects == nil {
					c.fail(name, "the effect event (id %q) is %s: want an id line, agent_slug %q, action job.start and effects", e.id, e.data, j.slug)
				} else {
					c.pass(name, "supervaizer.effect id %s", e.id)
				}
			}
		}
		if !found {
			c.fail(name, "no supervaizer.effect for request %s within 5s", j.requestID)
		}
	}
	if len(started) == 0 {
		c.skip(names[1], "no job.start was run (it needs -write)")
	}
	if heartbeat {
		c.pass(names[2], "supervaizer.heartbeat")
		return
	}
	for {
		e, ok := next(c.heartbeatWait)
		if !ok {
			c.fail(names[2], "no supervaizer.heartbeat after %s of silence (the spec sends one after 15s)", c.heartbeatWait)
			return
		}
		if e.name == "supervaizer.heartbeat" {
			if !jsonEqual(e.data, []byte(`{"status":"ok"}`)) {
				c.fail(names[2], "supervaizer.heartbeat data %s, want {\"status\":\"ok\"}", e.data)
			} else {
				c.pass(names[2], "supervaizer.heartbeat")
			}
			return
		}
	}
}
