package contracts_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/supervaize/supervaizer-go/contracts"
)

// benchResult is a typical ok result: two effects and a small job_state.
var benchResult = []byte(`{
  "status": "ok",
  "effects": [
    {"type": "job.started", "job_id": "job-77", "status": "active", "message": "Research started", "data": {"topic_id": "t-1"}},
    {"type": "case.created", "case": {"id": "case-1", "job_id": "job-77", "lane": "work", "title": "EU battery market", "status": "active"}}
  ],
  "job_state": {
    "job": {"id": "job-77", "agent_slug": "research-agent", "mission_id": "mis-3", "status": "active",
            "source": {"type": "fresh_start"}, "information": {"cost": {"total_cost": 0.12}}},
    "cases": [{"id": "case-1", "lane": "work", "title": "EU battery market", "status": "active", "metadata": {},
               "steps": [{"id": "step-collect", "activity": "operation", "status": "active", "title": "Collect sources", "outputs": []}]}]
  },
  "replay_safety": {"dedupe_keys": ["job-77"], "stable_external_ids_required": true, "strictly_idempotent_response": true, "convergent": true}
}`)

// benchRequest is a typical job.start action request.
var benchRequest = []byte(`{
  "request_id": "req-1", "actor": {"user_id": "user-7"}, "workspace": {"id": "ws-1", "slug": "acme"},
  "mission_id": "mis-3", "agent_slug": "research-agent", "surface": "job.start", "action": "job.start",
  "input": {"name": "EU battery brief", "goal": "Size the EU stationary-battery market", "mode": "custom", "budget": 20},
  "idempotency_key": "setup-7f3c", "job_id": "job-77",
  "mission": {"id": "mis-3", "name": "January", "metadata": {"filter": {"contact": "c-1"}}}
}`)

func BenchmarkValidateActionResult(b *testing.B) {
	benchmarkParts(b, contracts.ModelActionResult, benchResult, func() any { return new(contracts.ActionResult) })
}

func BenchmarkValidateActionRequest(b *testing.B) {
	benchmarkParts(b, contracts.ModelActionRequest, benchRequest, func() any { return new(contracts.ActionRequest) })
}

// benchmarkParts measures the whole validation and its two halves: the JSON
// Schema (parse with json.Number, then validate) and the Go decode (which the
// Go rules run after).
func benchmarkParts(b *testing.B, m contracts.Model, raw []byte, newVal func() any) {
	v := contracts.DefaultValidator()
	if err := v.Validate(m, raw); err != nil {
		b.Fatal(err)
	}
	b.Run("Validate", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if err := v.Validate(m, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SchemaOnly", func(b *testing.B) {
		s := compilePublished(b)[m]
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Validate(inst); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DecodeOnly", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if err := json.Unmarshal(raw, newVal()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkValidateValue measures the result path of the dispatcher: marshal a
// typed result and validate the JSON.
func BenchmarkValidateValue(b *testing.B) {
	v := contracts.DefaultValidator()
	var res contracts.ActionResult
	if err := v.Decode(contracts.ModelActionResult, benchResult, &res); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.ValidateValue(contracts.ModelActionResult, &res); err != nil {
			b.Fatal(err)
		}
	}
}
