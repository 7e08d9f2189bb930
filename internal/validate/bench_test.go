package validate

import (
	"reflect"
	"testing"

	"github.com/supervaize/supervaizer-go/contracts"
)

// The hot path of the dispatcher, fast path against the reference path
// (package contracts' validator), on the documents of a
// typical job.start call and of its result.

// hotRequest is the action request of a typical job.start call.
var hotRequest = []byte(`{"request_id":"req-7f9a2d4c-1b3e-4c5d-8e6f-0a1b2c3d4e5f","actor":{"user_id":"user-7"},` +
	`"workspace":{"id":"ws-1","slug":"acme"},"mission_id":"mis-3","agent_slug":"research-agent",` +
	`"surface":"job.start","action":"job.start","job_id":"job-77","input":{"topic_id":"t-1","depth":3},` +
	`"mission":{"id":"mis-3","name":"January","metadata":{"filter":{"contact":"c-1"}}}}`)

// hotResults are results of increasing size: the trivial job.started answer,
// and one with a case, a job state and replay safety.
var hotResults = []struct {
	name string
	res  *contracts.ActionResult
}{
	{"trivial", &contracts.ActionResult{Status: contracts.StatusOK, Effects: []contracts.Effect{
		{Type: "job.started", JobID: "job-77", Data: map[string]any{"topic_id": "t-1"}}}}},
	{"typical", &contracts.ActionResult{Status: contracts.StatusOK,
		Effects: []contracts.Effect{
			{Type: "job.started", JobID: "job-77", Status: "active", Message: "Research started", Data: map[string]any{"topic_id": "t-1"}},
			{Type: "case.created", Case: map[string]any{"id": "case-1", "job_id": "job-77", "lane": "work", "title": "EU battery market", "status": "active"}},
		},
		JobState: &contracts.JobState{Job: contracts.Job{ID: "job-77", AgentSlug: "research-agent", MissionID: "mis-3", Status: "active", Source: contracts.JobSource{Type: "fresh_start"}},
			Cases: []contracts.Case{{ID: "case-1", Lane: "work", Title: "EU battery market", Status: "active",
				Steps: []contracts.Step{{ID: "step-collect", Activity: "operation", Status: "active", Title: "Collect sources"}}}}},
		ReplaySafety: &contracts.ReplaySafety{DedupeKeys: []string{"job-77"}, StableExternalIDsRequired: true, StrictlyIdempotentResponse: true, Convergent: true},
	}},
}

// modelValidator is what Validator and contracts.Validator both do.
type modelValidator interface {
	Decode(m contracts.Model, raw []byte, dst any) error
	ValidateValue(m contracts.Model, value any) ([]byte, error)
}

func validators(b *testing.B) []struct {
	name string
	v    modelValidator
} {
	return []struct {
		name string
		v    modelValidator
	}{{"fast", Default()}, {"reference", referenceValidator(b)}}
}

// BenchmarkDecodeActionRequest measures request-model validation: schema,
// decoding into the Go type and the Go rules.
func BenchmarkDecodeActionRequest(b *testing.B) {
	for _, vc := range validators(b) {
		b.Run(vc.name, func(b *testing.B) {
			var req contracts.ActionRequest
			if err := vc.v.Decode(contracts.ModelActionRequest, hotRequest, &req); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(hotRequest)))
			b.ReportAllocs()
			for b.Loop() {
				if err := vc.v.Decode(contracts.ModelActionRequest, hotRequest, &req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateResult measures result validation: encoding the handler's
// typed result, the schema and the Go rules.
func BenchmarkValidateResult(b *testing.B) {
	for _, rc := range hotResults {
		for _, vc := range validators(b) {
			b.Run(rc.name+"/"+vc.name, func(b *testing.B) {
				if _, err := vc.v.ValidateValue(contracts.ModelActionResult, rc.res); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := vc.v.ValidateValue(contracts.ModelActionResult, rc.res); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkValidateInput measures the typed-input check of HandleActionFor.
func BenchmarkValidateInput(b *testing.B) {
	type startInput struct {
		TopicID string `json:"topic_id" sv:"nonblank"`
		Depth   int    `json:"depth,omitempty" sv:"minimum=1,maximum=5"`
	}
	iv, err := NewInput(reflect.TypeFor[startInput](), "rule_snapshot")
	if err != nil {
		b.Fatal(err)
	}
	raw := []byte(`{"topic_id":"t-1","depth":3}`)
	for _, vc := range []struct {
		name string
		iv   interface {
			Validate([]byte) []contracts.Problem
		}
	}{{"fast", iv}, {"reference", iv.Reference()}} {
		b.Run(vc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ps := vc.iv.Validate(raw); len(ps) > 0 {
					b.Fatal(ps)
				}
			}
		})
	}
}

// BenchmarkDecodeInvalidActionRequest measures the path of a request the
// schema refuses (mission_id missing): the compiled validator says no once,
// then the reference validator lists the problems.
func BenchmarkDecodeInvalidActionRequest(b *testing.B) {
	invalid := []byte(`{"request_id":"req-1","actor":{"user_id":"user-7"},"workspace":{"id":"ws-1"},` +
		`"agent_slug":"research-agent","surface":"job.start","action":"job.start","input":{"topic_id":"t-1"}}`)
	v := Default()
	b.SetBytes(int64(len(invalid)))
	b.ReportAllocs()
	for b.Loop() {
		var req contracts.ActionRequest
		if err := v.Decode(contracts.ModelActionRequest, invalid, &req); err == nil {
			b.Fatal("an invalid request was accepted")
		}
	}
}
