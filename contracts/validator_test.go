package contracts_test

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

func TestValidateNotJSON(t *testing.T) {
	v := contracts.DefaultValidator()
	for _, doc := range []string{``, `{`, `{"status": "ok"} trailing`, `{"status": "ok"}{}`, "\xff"} {
		err := v.Validate(contracts.ModelActionResult, []byte(doc))
		var ve *contracts.ValidationError
		require.ErrorAs(t, err, &ve, "%q", doc)
		require.Len(t, ve.Problems, 1)
		assert.Equal(t, contracts.Problem{Loc: []any{}, Msg: "not valid JSON", Type: "json"}, ve.Problems[0])
		assert.Equal(t, "invalid ActionResult:\n  /: not valid JSON (json)", err.Error())
	}
}

func TestUnknownModel(t *testing.T) {
	v := contracts.DefaultValidator()
	err := v.Validate("Nope", []byte(`{}`))
	require.Error(t, err)
	var ve *contracts.ValidationError
	assert.False(t, errors.As(err, &ve), "an unknown model is a programming error, not a validation error")

	var res contracts.ActionResult
	assert.Error(t, v.Decode("Nope", []byte(`{}`), &res))
	_, err = v.ValidateValue("Nope", res)
	assert.Error(t, err)
}

func TestDecode(t *testing.T) {
	v := contracts.DefaultValidator()
	raw := []byte(`{"status": "ok", "effects": [{"type": "job.started", "count": 3}], "x_extra": true}`)

	var res contracts.ActionResult
	require.NoError(t, v.Decode(contracts.ModelActionResult, raw, &res))
	assert.Equal(t, contracts.StatusOK, res.Status)
	require.Len(t, res.Effects, 1)
	assert.Equal(t, 3, *res.Effects[0].Count)
	assert.JSONEq(t, `true`, string(res.Extra["x_extra"]))

	var wrong contracts.SurfaceResult
	assert.ErrorContains(t, v.Decode(contracts.ModelActionResult, raw, &wrong), "needs a *ActionResult")
	assert.Error(t, v.Decode(contracts.ModelActionResult, raw, res), "a value, not a pointer")

	// An invalid document leaves the destination untouched.
	before := res
	require.Error(t, v.Decode(contracts.ModelActionResult, []byte(`{"status": "maybe"}`), &res))
	assert.Equal(t, before, res)
}

func TestValidateValue(t *testing.T) {
	v := contracts.DefaultValidator()
	ok := contracts.ActionResult{Status: contracts.StatusOK}

	for _, value := range []any{ok, &ok, map[string]any{"status": "ok", "effects": []any{}}} {
		raw, err := v.ValidateValue(contracts.ModelActionResult, value)
		require.NoError(t, err, "%T", value)
		assert.JSONEq(t, `{"status": "ok", "effects": []}`, string(raw), "it returns the JSON it validated")
	}

	_, err := v.ValidateValue(contracts.ModelActionResult, map[string]any{"status": "maybe"})
	assert.ErrorContains(t, err, "/status: must be one of ok, error (enum)")
	_, err = v.ValidateValue(contracts.ModelActionResult, map[string]any{"status": "ok", "dry_run": map[string]any{
		"cost_incurred": map[string]any{"status": "estimated", "min": 3, "max": 1}}})
	assert.ErrorContains(t, err, "/dry_run/cost_incurred/max: max must be greater than or equal to min (min_le_max)",
		"the Go rules run on values that are not of the model's type too")
	_, err = v.ValidateValue(contracts.ModelActionResult, func() {})
	assert.ErrorContains(t, err, "marshal")
}

// A typed setup plan is validated by every rule of the protocol, which only the Go
// value shows: on the wire a plan is a plain object that passes through.
func TestTypedSetupPlanOnlyInValues(t *testing.T) {
	v := contracts.DefaultValidator()
	plan := contracts.SetupPlan{Steps: []contracts.SetupStep{{ID: "a", Title: "A"}, {ID: "a", Title: "Again"}}}
	res := contracts.ActionResult{Status: contracts.StatusOK, SetupPlan: contracts.TypedPlan(plan)}

	_, err := v.ValidateValue(contracts.ModelActionResult, res)
	var ve *contracts.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, []contracts.Problem{{Loc: []any{"setup_plan", "steps", 1, "id"}, Type: "unique",
		Msg: "step id is used twice: same id as steps/0", Path: "/setup_plan/steps/1/id"}}, ve.Problems)

	raw, err := contracts.Marshal(res)
	require.NoError(t, err)
	assert.NoError(t, v.Validate(contracts.ModelActionResult, raw), "a plan read from JSON is a plain map")

	_, err = contracts.RawPlan(json.RawMessage(`[1]`))
	assert.Error(t, err, "a raw plan must be an object")
}

func TestProblemJSON(t *testing.T) {
	err := contracts.DefaultValidator().Validate(contracts.ModelActionRequest,
		[]byte(`{"request_id": "r", "actor": {}, "workspace": {"id": "w"}, "mission_id": "m", "agent_slug": "a", "surface": "s", "action": "x"}`))
	var ve *contracts.ValidationError
	require.ErrorAs(t, err, &ve)
	data, mErr := json.Marshal(ve.Problems)
	require.NoError(t, mErr)
	assert.JSONEq(t, `[{"loc": ["actor", "user_id"], "msg": "missing property", "type": "required", "path": "/actor/user_id"}]`, string(data))
	assert.Equal(t, "invalid ActionRequest:\n  /actor/user_id: missing property (required)", err.Error())
}

func TestLocIndexes(t *testing.T) {
	err := contracts.DefaultValidator().Validate(contracts.ModelActionResult,
		[]byte(`{"status": "ok", "effects": [{"type": "t", "count": "x"}]}`))
	var ve *contracts.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Problems, 1)
	assert.Equal(t, "/effects/0/count", ve.Problems[0].Path)
	assert.Equal(t, []any{"effects", 0, "count"}, ve.Problems[0].Loc, "array indexes are numbers in loc")
}

func TestModels(t *testing.T) {
	ms := contracts.Models()
	assert.True(t, slices.IsSorted(ms))
	for _, m := range coreModels {
		assert.Contains(t, ms, m)
	}
	assert.Contains(t, ms, contracts.ModelVerifiedContext)
}

func TestNewValidatorIsIndependent(t *testing.T) {
	v, err := contracts.NewValidator()
	require.NoError(t, err)
	assert.NotSame(t, contracts.DefaultValidator(), v)
	assert.Same(t, contracts.DefaultValidator(), contracts.DefaultValidator())
	assert.NoError(t, v.Validate(contracts.ModelCostEstimate, []byte(`{"status": "unknown"}`)))
}

// TestConcurrentValidation runs the corpus through one Validator from several
// goroutines (meaningful under -race).
func TestConcurrentValidation(t *testing.T) {
	docs := loadCorpus(t)
	v := contracts.DefaultValidator()
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(docs))
	for range 4 {
		wg.Go(func() {
			for _, d := range docs {
				if err := v.Validate(d.model, d.raw); (err == nil) != d.valid {
					errs <- errors.New(d.name + ": verdict changed under concurrency")
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCheck: the Go rules alone, on a decoded value, as Validate runs them
// after the schema.
func TestCheck(t *testing.T) {
	v := contracts.DefaultValidator()
	badCost := &contracts.ActionResult{Status: contracts.StatusOK, DryRun: &contracts.DryRunOutcome{}}
	require.NoError(t, contracts.Unmarshal([]byte(`{"status":"ok","dry_run":{"cost_incurred":{"status":"estimated","min":3,"max":1}}}`), badCost))
	tests := []struct {
		name  string
		m     contracts.Model
		value any
		want  string // "" for no error
	}{
		{"valid result", contracts.ModelActionResult, &contracts.ActionResult{Status: contracts.StatusOK}, ""},
		{"rule broken", contracts.ModelActionResult, badCost, "/dry_run/cost_incurred/max: max must be greater than or equal to min (min_le_max)"},
		{"schema is not checked", contracts.ModelActionResult, &contracts.ActionResult{Status: "maybe"}, ""},
		{"rule of another model", contracts.ModelCostEstimate, &contracts.CostEstimate{Status: "estimated", Min: ptr(3.0), Max: ptr(1.0)}, "min_le_max"},
		{"not a pointer", contracts.ModelActionResult, contracts.ActionResult{Status: contracts.StatusOK}, "needs a *ActionResult"},
		{"another model's type", contracts.ModelJobState, &contracts.ActionResult{}, "needs a *JobState"},
		{"unknown model", contracts.Model("Nope"), &contracts.ActionResult{}, `unknown model "Nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Check(tt.m, tt.value)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// TestModelNew: every model makes the value Decode fills.
func TestModelNew(t *testing.T) {
	for _, m := range contracts.Models() {
		dst := m.New()
		require.NotNil(t, dst, m)
		// null is refused as a problem of the document, not as a wrong dst.
		var ve *contracts.ValidationError
		assert.ErrorAs(t, contracts.DefaultValidator().Decode(m, []byte("null"), dst), &ve, m)
	}
	assert.Nil(t, contracts.Model("Nope").New())
	assert.IsType(t, &contracts.ActionRequest{}, contracts.ModelActionRequest.New())
}

// TestWithSchemaCheck: the plugged check is asked first and can only accept;
// the reference decides otherwise and reports the problems.
func TestWithSchemaCheck(t *testing.T) {
	ref := contracts.DefaultValidator()
	invalid := []byte(`{"status":"maybe","effects":[]}`)
	var asked []contracts.Model
	tests := []struct {
		name    string
		sure    bool
		wantErr bool
	}{
		{"a sure check accepts", true, false},
		{"an unsure check leaves it to the reference", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked = nil
			v := ref.WithSchemaCheck(func(m contracts.Model, raw []byte) bool {
				asked = append(asked, m)
				return tt.sure
			})
			err := v.Validate(contracts.ModelActionResult, invalid)
			assert.Equal(t, tt.wantErr, err != nil, "%v", err)
			assert.Equal(t, []contracts.Model{contracts.ModelActionResult}, asked)
		})
	}
	assert.Error(t, ref.Validate(contracts.ModelActionResult, invalid), "the original Validator is unchanged")
}
