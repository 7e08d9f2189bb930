package contracts_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

func TestMarshal(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"extra keys after the declared ones, in key order",
			contracts.Introduction{Tagline: "t", Summary: "s", ExampleGoals: []string{"g"},
				Extra: contracts.Extra{"zeta": json.RawMessage(`1`), "alpha": json.RawMessage(` { "a" : [ 1 , 2 ] } `)}},
			`{"tagline":"t","summary":"s","example_goals":["g"],"alpha":{"a":[1,2]},"zeta":1}`},
		{"an extra key that shadows a declared one is not written",
			contracts.FieldOption{Value: json.RawMessage(`"v"`), Label: "l", Extra: contracts.Extra{"label": json.RawMessage(`"shadow"`)}},
			`{"value":"v","label":"l"}`},
		{"a nil always-written list is []",
			contracts.Introduction{Tagline: "t", Summary: "s"},
			`{"tagline":"t","summary":"s","example_goals":[]}`},
		{"defaults of empty fields",
			contracts.FullDescription{Content: "c"},
			`{"format":"markdown","content":"c"}`},
		{"result models drop extra nulls",
			contracts.Step{ID: "s", Activity: "a", Status: contracts.StepDone, Extra: contracts.Extra{"gone": json.RawMessage(`null`), "kept": json.RawMessage(`0`)}},
			`{"id":"s","activity":"a","status":"done","outputs":[],"kept":0}`},
		{"other models keep extra nulls",
			contracts.FieldOption{Value: json.RawMessage(`1`), Label: "l", Extra: contracts.Extra{"kept": json.RawMessage(`null`)}},
			`{"value":1,"label":"l","kept":null}`},
		{"a resource field has its own key order and always-written keys",
			contracts.ResourceField{ID: "f", Label: "F", Type: contracts.FieldString, Extra: contracts.Extra{"x": json.RawMessage(`true`)}},
			`{"id":"f","label":"F","type":"string","required":false,"read_only":false,"multiline":false,"options_source":null,"x":true}`},
		{"nil scopes of a verified context are []",
			contracts.VerifiedWorkspaceContext{GrantID: "g", WorkspaceSlug: str("w")},
			`{"grant_id":"g","workspace_id":"","workspace_slug":"w","agent_id":"","agent_slug":"","server_id":"","scopes":[],"agent_workspace_ref":null}`},
		{"a model without Extra nor default writes a nil list as encoding/json does",
			contracts.DependsOn{Field: "f"},
			`{"field":"f","in":null}`},
		{"models inside plain values",
			map[string]any{"b": []contracts.Case{{ID: "c"}}, "a": (*contracts.Job)(nil), "<": "&"},
			`{"\u003c":"\u0026","a":null,"b":[{"id":"c","lane":"work","metadata":{},"steps":[]}]}`},
		{"a value without models is json.Marshal's",
			struct {
				A string `json:"a,omitempty"`
				B []int  `json:"b"`
			}{B: nil},
			`{"b":null}`},
		{"nil", nil, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := contracts.Marshal(tt.v)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}

func TestMarshalInvalidExtra(t *testing.T) {
	_, err := contracts.Marshal(contracts.Job{ID: "j", Extra: contracts.Extra{"bad": json.RawMessage(`{`)}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `extra key "bad" does not hold valid JSON`)
}

func TestUnmarshal(t *testing.T) {
	t.Run("undeclared keys are kept, defaults fill absent keys", func(t *testing.T) {
		var d contracts.FullDescription
		require.NoError(t, contracts.Unmarshal([]byte(`{"content":"c","x":{"y":1}}`), &d))
		assert.Equal(t, contracts.FullDescription{Format: contracts.FormatMarkdown, Content: "c",
			Extra: contracts.Extra{"x": json.RawMessage(`{"y":1}`)}}, d)
	})
	t.Run("a model replaces the whole value", func(t *testing.T) {
		d := contracts.FullDescription{Content: "old", Extra: contracts.Extra{"old": json.RawMessage(`1`)}}
		require.NoError(t, contracts.Unmarshal([]byte(`{"format":"html"}`), &d))
		assert.Equal(t, contracts.FullDescription{Format: contracts.FormatHTML}, d)
	})
	t.Run("the type defaults of the shared field schema", func(t *testing.T) {
		var f contracts.Field
		var a contracts.AwaitingField
		var r contracts.ResourceField
		for _, dst := range []any{&f, &a, &r} {
			require.NoError(t, contracts.Unmarshal([]byte(`{"id":"x","label":"X"}`), dst))
		}
		assert.Equal(t, contracts.FieldString, f.Type)
		assert.Equal(t, contracts.FieldBoolean, a.Type)
		assert.Equal(t, contracts.FieldString, r.Type)
	})
	t.Run("the short form of an action", func(t *testing.T) {
		var a contracts.ActionDefinition
		require.NoError(t, contracts.Unmarshal([]byte(`"job.start"`), &a))
		assert.Equal(t, contracts.ActionDefinition{ID: "job.start", Mutating: true, Scope: contracts.ScopeJob, Kind: contracts.KindCommand}, a)
	})
	t.Run("nested folded keys are refused", func(t *testing.T) {
		var s contracts.JobState
		err := contracts.Unmarshal([]byte(`{"job":{"id":"j","STATUS":"running"}}`), &s)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `key "STATUS" differs from "status" only in letter case`)
	})
	t.Run("null where a model is expected", func(t *testing.T) {
		var s contracts.JobState
		require.EqualError(t, contracts.Unmarshal([]byte(`{"job":null}`), &s), "contracts: expected a JSON object, got null")
		var p *contracts.Job
		require.NoError(t, contracts.Unmarshal([]byte(`null`), &p))
		assert.Nil(t, p)
	})
	t.Run("wrong JSON kinds are type errors", func(t *testing.T) {
		var s contracts.JobState
		err := contracts.Unmarshal([]byte(`{"cases":{}}`), &s)
		var te *json.UnmarshalTypeError
		require.True(t, errors.As(err, &te), "%v", err)
		assert.Equal(t, "object", te.Value)
	})
	t.Run("syntax errors are encoding/json's", func(t *testing.T) {
		var s contracts.JobState
		var se *json.SyntaxError
		require.True(t, errors.As(contracts.Unmarshal([]byte(`{"job":`), &s), &se))
	})
	t.Run("not a pointer", func(t *testing.T) {
		var ie *json.InvalidUnmarshalError
		require.True(t, errors.As(contracts.Unmarshal([]byte(`{}`), contracts.Job{}), &ie))
	})
	t.Run("plain structs holding models match keys as encoding/json does", func(t *testing.T) {
		var v struct {
			Steps []contracts.Step `json:"steps"`
		}
		require.NoError(t, contracts.Unmarshal([]byte(`{"STEPS":[{"id":"s","x":1}]}`), &v))
		require.Len(t, v.Steps, 1)
		assert.Equal(t, contracts.Extra{"x": json.RawMessage(`1`)}, v.Steps[0].Extra)
	})
}

// TestEncodingJSONSeesPlainStructs pins the documented difference: the models
// have no JSON methods, so encoding/json drops Extra and writes nil lists as
// null.
func TestEncodingJSONSeesPlainStructs(t *testing.T) {
	intro := contracts.Introduction{Tagline: "t", Summary: "s", Extra: contracts.Extra{"x": json.RawMessage(`1`)}}
	plain, err := json.Marshal(intro)
	require.NoError(t, err)
	assert.JSONEq(t, `{"tagline":"t","summary":"s","example_goals":null}`, string(plain))
	wire, err := contracts.Marshal(intro)
	require.NoError(t, err)
	assert.JSONEq(t, `{"tagline":"t","summary":"s","example_goals":[],"x":1}`, string(wire))
}

// FuzzUnmarshalMarshal: whatever decodes as a job_state encodes, and the
// encoding decodes to the same value and encodes to the same bytes.
func FuzzUnmarshalMarshal(f *testing.F) {
	for _, s := range []string{
		`{"job":{"id":"j","status":"running"},"cases":[{"id":"c","steps":[{"id":"s","x":null}]}]}`,
		`{"job":{"id":"j"},"extra":{"a":[1,"<b>"]}}`,
		`{"cases":null}`, `[]`, `null`, `{"job":{"id":"j","Status":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s contracts.JobState
		if contracts.Unmarshal(data, &s) != nil {
			return
		}
		first, err := contracts.Marshal(s)
		require.NoError(t, err)
		var again contracts.JobState
		require.NoError(t, contracts.Unmarshal(first, &again), "%s", first)
		second, err := contracts.Marshal(again)
		require.NoError(t, err)
		assert.Equal(t, string(first), string(second))
	})
}

func ExampleMarshal() {
	step := contracts.Step{ID: "review", Activity: "Review the brief", Status: contracts.StepAwaiting,
		Extra: contracts.Extra{"external_ref": json.RawMessage(`"T-42"`)}}
	b, err := contracts.Marshal(step)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))

	var back contracts.Step
	if err := contracts.Unmarshal(b, &back); err != nil {
		panic(err)
	}
	fmt.Println(string(back.Extra["external_ref"]))
	// Output:
	// {"id":"review","activity":"Review the brief","status":"awaiting","outputs":[],"external_ref":"T-42"}
	// "T-42"
}
