package answer_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/answer"
	"github.com/supervaize/supervaizer-go/testing/golden"
)

// source is a nested object of research.
type source struct {
	URL   string `json:"url" sv:"nonblank" ask:"the page's address"`
	Title string `json:"title,omitempty" ask:"its title"`
}

// research is an answer type as an author writes one: the base envelope and
// fields of its own, with rules.
type research struct {
	answer.Envelope
	Findings []string `json:"findings" sv:"minItems=1,maxItems=5" ask:"the key findings, one line each"`
	Sources  []source `json:"sources,omitempty" ask:"the pages you read"`
	Depth    string   `json:"depth,omitempty" sv:"enum=quick|deep" ask:"how deep you went"`
	Score    *float64 `json:"score,omitempty" sv:"minimum=0,maximum=1" ask:"your confidence, from 0 to 1"`
}

const valid = `{"status": "success", "summary": "Three findings.", "findings": ["a", "b", "c"], "sources": [{"url": "https://example.com/x"}]}`

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		text string
		// want: the violations ("field rule"), or "failed" for ErrFailed; none: valid.
		want     []string
		findings []string
	}{
		{"the object alone", valid, nil, []string{"a", "b", "c"}},
		{"prose around", "Here is what I found.\n" + valid + "\nTell me if you need more.", nil, []string{"a", "b", "c"}},
		{"a json code fence", "Done:\n```json\n" + valid + "\n```\n", nil, []string{"a", "b", "c"}},
		{"a bare code fence", "```\n" + valid + "\n```", nil, []string{"a", "b", "c"}},
		{"two objects: the last wins", `First draft: {"status": "success", "findings": ["old"]} Final: {"status": "success", "findings": ["new"]}`, nil, []string{"new"}},
		{"a nested object is not an answer of its own", `{"status": "success", "findings": ["x"], "sources": [{"url": "u"}]} done`, nil, []string{"x"}},
		{"braces in prose and strings", `Use {braces} freely. {"status": "success", "findings": ["a {b} \"c\" }"]} {see above}`, nil, []string{`a {b} "c" }`}},
		{"an object cut off at the end is not complete", `{"status": "success", "findings": ["kept"]} then {"status": "success", "findings": ["cut`, nil, []string{"kept"}},
		{"a syntax error, then a valid object", `{"status": "success",} {"status": "success", "findings": ["second"]}`, nil, []string{"second"}},
		{"optional fields null", `{"status": "success", "summary": null, "artifacts": null, "notes_for_next_agent": null, "findings": ["a"], "sources": null, "depth": null, "score": null}`, nil, []string{"a"}},
		{"missing required field", `{"status": "success", "summary": "no findings"}`, []string{"findings required"}, nil},
		{"missing status", `{"findings": ["a"]}`, []string{"status required"}, nil},
		{"wrong enum", `{"status": "maybe", "findings": ["a"]}`, []string{"status enum"}, nil},
		{"wrong enum of a field of its own", `{"status": "success", "findings": ["a"], "depth": "medium"}`, []string{"depth enum"}, nil},
		{"status fail", `{"status": "fail", "summary": "the sources were unreachable", "findings": ["none"]}`, []string{"failed"}, []string{"none"}},
		{"wrong type", `{"status": "success", "findings": "a"}`, []string{"findings type"}, nil},
		{"a rule of a nested field", `{"status": "success", "findings": ["a"], "sources": [{"url": "u"}, {"url": " "}]}`, []string{"sources[1].url nonblank"}, nil},
		{"too many items", `{"status": "success", "findings": ["1", "2", "3", "4", "5", "6"]}`, []string{"findings maxItems"}, nil},
		{"out of range", `{"status": "success", "findings": ["a"], "score": 2}`, []string{"score maximum"}, nil},
		{"a required field null", `{"status": null, "findings": ["a"]}`, []string{"status type"}, nil},
		{"an unknown field", `{"status": "success", "findings": ["a"], "confidence": 1}`, []string{" additionalProperties"}, nil},
		{"a key twice", `{"status": "success", "findings": ["a"], "status": "fail"}`, []string{"status duplicate_key"}, nil},
		{"several violations", `{"status": "maybe", "findings": []}`, []string{"findings minItems", "status enum"}, nil},
		{"no object", "I could not find anything.", []string{" json"}, nil},
		{"only a cut-off object", `{"status": "success", "findings": [`, []string{" json"}, nil},
		{"an array is no object", `["status", "success"]`, []string{" json"}, nil},
		{"empty", "", []string{" json"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := answer.Parse[research](tt.text)
			switch {
			case tt.want == nil:
				require.NoError(t, err)
				assert.Equal(t, answer.Success, got.Status)
				assert.Equal(t, tt.findings, got.Findings)
			case tt.want[0] == "failed":
				require.ErrorIs(t, err, answer.ErrFailed)
				assert.Contains(t, err.Error(), "the sources were unreachable")
				assert.Equal(t, answer.Fail, got.Status, "the failed answer is returned")
				assert.Equal(t, tt.findings, got.Findings)
			default:
				var ce *answer.ContractError
				require.ErrorAs(t, err, &ce)
				var lines []string
				for _, v := range ce.Violations {
					lines = append(lines, v.Field+" "+v.Rule)
					assert.NotEmpty(t, v.Msg)
					assert.Contains(t, err.Error(), v.Msg)
				}
				assert.Equal(t, tt.want, lines)
				assert.Zero(t, got, "no value with a violation")
			}
		})
	}
}

// TestParseErrorNamesFieldAndRule: the error's text, quoted by the
// correction, names each field and rule.
func TestParseErrorNamesFieldAndRule(t *testing.T) {
	_, err := answer.Parse[research](`{"status": "maybe", "findings": ["a"], "sources": [{"title": "t"}]}`)
	require.Error(t, err)
	assert.Equal(t, "answer: sources[0].url: missing property (required); status: must be one of success, fail (enum)", err.Error())
}

// TestParseBaseEnvelope: the base envelope alone is an answer type; a terse
// agent's answer is valid, a silent one is not.
func TestParseBaseEnvelope(t *testing.T) {
	got, err := answer.Parse[answer.Envelope](`{"status": "success"}`)
	require.NoError(t, err)
	assert.Equal(t, answer.Envelope{Status: answer.Success}, got)
	_, err = answer.Parse[answer.Envelope](`{}`)
	assert.EqualError(t, err, "answer: status: missing property (required)")
}

// TestParseRoundTrip: a valid answer, encoded again, parses to the same value
// (what Parse accepts it can decode).
func TestParseRoundTrip(t *testing.T) {
	got, err := answer.Parse[research](valid)
	require.NoError(t, err)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	again, err := answer.Parse[research](string(b))
	require.NoError(t, err)
	assert.Equal(t, got, again)
}

// TestLastObjectScansPathologicalTextQuickly: the extraction remembers what
// it read, so deeply nested or unbalanced text is read a bounded number of
// times (a quadratic scan of these would take minutes).
func TestLastObjectScansPathologicalTextQuickly(t *testing.T) {
	const n = 1 << 18
	for name, text := range map[string]string{
		"nested unclosed objects": strings.Repeat(`{"a":`, n/5),
		"nested closed objects":   strings.Repeat(`{"a":`, 2000) + "1" + strings.Repeat("}", 2000) + strings.Repeat(`{"a":[`, n/6),
		"braces":                  strings.Repeat("{", n),
		"strings of braces":       strings.Repeat(`{"{":"{",`, n/9),
		"arrays in objects":       strings.Repeat(`{"a":[1,[2,{"b":`, n/16),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := answer.Parse[answer.Envelope](text)
			var ce *answer.ContractError
			require.ErrorAs(t, err, &ce)
		})
	}
}

func TestContractGolden(t *testing.T) {
	got := answer.Contract[answer.Envelope]() + "\n\n" + answer.Contract[research]() + "\n"
	golden.Bytes(t, "testdata/contract.golden", []byte(got))
}

func TestSchemaGolden(t *testing.T) {
	got, err := answer.Schema[research]()
	require.NoError(t, err)
	golden.Bytes(t, "testdata/schema.golden.json", append(got, '\n'))
}

// TestSchemaIsStrict: every object of the schema is closed and lists all its
// fields in required; each optional field of the type accepts null, and an
// answer that sends null for every optional field, as constrained decoding
// does, parses.
func TestSchemaIsStrict(t *testing.T) {
	raw, err := answer.Schema[research]()
	require.NoError(t, err)
	var s map[string]any
	require.NoError(t, json.Unmarshal(raw, &s))
	objects := 0
	var walk func(n any)
	walk = func(n any) {
		switch n := n.(type) {
		case map[string]any:
			if props, ok := n["properties"].(map[string]any); ok {
				objects++
				assert.Equal(t, false, n["additionalProperties"])
				var keys []any
				for k := range props {
					keys = append(keys, k)
				}
				assert.ElementsMatch(t, keys, n["required"])
			}
			assert.NotContains(t, n, "$ref")
			for _, v := range n {
				walk(v)
			}
		case []any:
			for _, v := range n {
				walk(v)
			}
		}
	}
	walk(s)
	assert.Equal(t, 2, objects, "research and source")
	props := s["properties"].(map[string]any)
	for _, optional := range []string{"summary", "artifacts", "notes_for_next_agent", "sources", "depth", "score"} {
		assert.True(t, acceptsNull(props[optional]), optional)
	}
	for _, required := range []string{"status", "findings"} {
		assert.False(t, acceptsNull(props[required]), required)
	}
	_, err = answer.Parse[research](`{"status": "success", "summary": null, "artifacts": null, "notes_for_next_agent": null,
		"findings": ["a"], "sources": [{"url": "u", "title": null}], "depth": null, "score": null}`)
	assert.NoError(t, err)
}

func acceptsNull(n any) bool {
	m := n.(map[string]any)
	if types, ok := m["type"].([]any); ok {
		return len(types) == 2 && types[1] == "null"
	}
	if alts, ok := m["anyOf"].([]any); ok {
		return reflect.DeepEqual(alts[1], map[string]any{"type": "null"})
	}
	return false
}

type withMap struct {
	answer.Envelope
	Scores map[string]int `json:"scores"`
}

type withAny struct {
	answer.Envelope
	Extra any `json:"extra,omitempty"`
}

type tree struct {
	Label    string `json:"label"`
	Children []tree `json:"children,omitempty"`
}

type withTree struct {
	answer.Envelope
	Root tree `json:"root"`
}

// TestSchemaWithoutStrictForm: what strict decoding cannot express is an
// error naming the field; Parse still checks such a type.
func TestSchemaWithoutStrictForm(t *testing.T) {
	_, err := answer.Schema[withMap]()
	assert.EqualError(t, err, "answer: withMap.scores: a map or a free-form object has no strict schema")
	_, err = answer.Schema[withAny]()
	assert.EqualError(t, err, "answer: withAny.extra: a free-form value has no strict schema")
	_, err = answer.Schema[withTree]()
	assert.EqualError(t, err, "answer: withTree.root.children[]: the type answer_test.tree is recursive: it has no strict schema")

	got, err := answer.Parse[withTree](`{"status": "success", "root": {"label": "a", "children": [{"label": "b"}]}}`)
	require.NoError(t, err)
	assert.Equal(t, "b", got.Root.Children[0].Label)
	_, err = answer.Parse[withMap](`{"status": "success", "scores": {"a": "high"}}`)
	assert.EqualError(t, err, "answer: scores.a: wrong type: got string, want integer (type)")
}

type withChan struct {
	answer.Envelope
	C chan int `json:"c"`
}

// TestTypeWithoutSchemaMapping: a type the schema cannot map panics on first
// use, naming it, as HandleActionFor does for an input type.
func TestTypeWithoutSchemaMapping(t *testing.T) {
	assert.PanicsWithValue(t, "answer: contracts: input type answer_test.withChan: contracts: no JSON Schema mapping for Go type chan int",
		func() { answer.Contract[withChan]() })
	assert.Panics(t, func() { _, _ = answer.Parse[withChan](`{}`) })
}

// TestContractFollowsTheType: the ask lists the fields in the type's order,
// the embedded envelope's where it is embedded, a field of the type hiding
// the envelope's field of the same name.
func TestContractFollowsTheType(t *testing.T) {
	type overriding struct {
		Topic string `json:"topic" ask:"the topic"`
		answer.Envelope
		Summary []string `json:"summary" ask:"a summary in lines"`
	}
	c := answer.Contract[overriding]()
	lines := strings.Split(c, "\n")
	require.Len(t, lines, 7)
	assert.True(t, strings.HasPrefix(lines[1], `- "topic" (required, string): the topic`), lines[1])
	assert.True(t, strings.HasPrefix(lines[2], `- "status" (required`), lines[2])
	assert.Equal(t, `- "summary" (required, array of strings): a summary in lines`, lines[5])
	got, err := answer.Parse[overriding](`{"topic": "t", "status": "success", "summary": ["a", "b"]}`)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, got.Summary)
}

// script is a deterministic stand-in model: it answers each prompt with the
// next of its answers and records the prompts.
type script struct {
	answers []string
	prompts []string
}

func (s *script) model(_ context.Context, prompt string) (string, error) {
	s.prompts = append(s.prompts, prompt)
	if len(s.prompts) > len(s.answers) {
		return "", errors.New("the script has no more answers")
	}
	return s.answers[len(s.prompts)-1], nil
}

func TestAsk(t *testing.T) {
	fenced := "Here you go:\n```json\n" + `{"status": "success", "summary": "Found it."}` + "\n```"
	ctx := context.Background()

	t.Run("valid at once", func(t *testing.T) {
		s := &script{answers: []string{valid}}
		got, err := answer.Ask[research](ctx, s.model, "Research EU batteries.", 3)
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b", "c"}, got.Findings)
		assert.Equal(t, []string{"Research EU batteries.\n\n" + answer.Contract[research]()}, s.prompts)
	})
	t.Run("a correction round", func(t *testing.T) {
		s := &script{answers: []string{fenced, valid}}
		got, err := answer.Ask[research](ctx, s.model, "Research EU batteries.", 3)
		require.NoError(t, err)
		assert.Equal(t, "Three findings.", got.Summary)
		require.Len(t, s.prompts, 2)
		assert.Equal(t, "Your last answer did not pass validation: findings: missing property (required).\n"+
			"Answer again with only the JSON object asked for.\n\n"+answer.Contract[research](), s.prompts[1])
	})
	t.Run("at most N tries, then the last violation", func(t *testing.T) {
		s := &script{answers: []string{fenced, `{"status": "maybe", "findings": ["a"]}`, `{"status": "success", "findings": []}`, valid}}
		_, err := answer.Ask[research](ctx, s.model, "Research.", 3)
		assert.EqualError(t, err, "answer: no valid answer in 3 tries; the last: findings: fewer than 1 items (minItems)")
		var ce *answer.ContractError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, []answer.Violation{{Field: "findings", Rule: "minItems", Msg: "fewer than 1 items"}}, ce.Violations)
		assert.Len(t, s.prompts, 3, "the fourth answer is never asked for")
		assert.Contains(t, s.prompts[2], "status: must be one of success, fail (enum)")
	})
	t.Run("status fail is not asked again", func(t *testing.T) {
		s := &script{answers: []string{`{"status": "fail", "summary": "No access.", "findings": ["none"]}`, valid}}
		got, err := answer.Ask[research](ctx, s.model, "Research.", 3)
		require.ErrorIs(t, err, answer.ErrFailed)
		assert.Equal(t, "No access.", got.Summary)
		assert.Len(t, s.prompts, 1)
	})
	t.Run("the model's error", func(t *testing.T) {
		s := &script{}
		_, err := answer.Ask[research](ctx, s.model, "Research.", 3)
		assert.EqualError(t, err, "answer: the model: the script has no more answers")
		assert.Len(t, s.prompts, 1)
	})
	t.Run("a cancelled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		s := &script{answers: []string{fenced, valid}}
		_, err := answer.Ask[research](cctx, func(ctx context.Context, p string) (string, error) {
			cancel()
			return s.model(ctx, p)
		}, "Research.", 3)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Len(t, s.prompts, 1)
	})
	t.Run("tries below 1 count as 1", func(t *testing.T) {
		s := &script{answers: []string{fenced, valid}}
		_, err := answer.Ask[research](ctx, s.model, "", 0)
		var ce *answer.ContractError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, []string{answer.Contract[research]()}, s.prompts, "no prompt: the contract alone")
	})
}

func TestCorrection(t *testing.T) {
	_, err := answer.Parse[research](`{"status": "done"}`)
	got := answer.Correction[research](err)
	assert.Equal(t, "Your last answer did not pass validation: findings: missing property (required); status: must be one of success, fail (enum).\n"+
		"Answer again with only the JSON object asked for.\n\n"+answer.Contract[research](), got)
	assert.True(t, strings.HasPrefix(answer.Correction[research](errors.New("the answer was empty")),
		"Your last answer did not pass validation: the answer was empty.\n"))
}

func TestHandoff(t *testing.T) {
	prev := research{
		Envelope: answer.Envelope{Status: answer.Success, Summary: "Three findings <in brief>.", Artifacts: []string{"notes/scout.md"},
			NotesForNextAgent: "Do not edit apps/plume/config.toml."},
		Findings: []string{"a"},
	}
	got, err := answer.Handoff(prev)
	require.NoError(t, err)
	assert.Equal(t, `### previous_envelope

The envelope the previous agent returned:
{
  "status": "success",
  "summary": "Three findings <in brief>.",
  "artifacts": [
    "notes/scout.md"
  ],
  "notes_for_next_agent": "Do not edit apps/plume/config.toml.",
  "findings": [
    "a"
  ]
}`, got)
	nan := math.NaN()
	_, err = answer.Handoff(research{Envelope: answer.Envelope{Status: answer.Success}, Score: &nan})
	assert.ErrorContains(t, err, "answer: the previous envelope: json: unsupported value: NaN")
}

// bounds has a rule across fields, on a pointer receiver.
type bounds struct {
	answer.Envelope
	Min int `json:"min"`
	Max int `json:"max"`
}

func (b *bounds) Check() error {
	if b.Min > b.Max {
		return errors.New("min: greater than max")
	}
	return nil
}

// TestParseCheck: the type's Check method runs after the schema, on the
// decoded answer (a pointer receiver too); its error is a violation of the
// rule "check" that Ask corrects.
func TestParseCheck(t *testing.T) {
	got, err := answer.Parse[bounds](`{"status": "success", "min": 1, "max": 2}`)
	require.NoError(t, err)
	assert.Equal(t, 2, got.Max)

	got, err = answer.Parse[bounds](`{"status": "success", "min": 3, "max": 2}`)
	var ce *answer.ContractError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []answer.Violation{{Rule: "check", Msg: "min: greater than max"}}, ce.Violations)
	assert.Zero(t, got)

	_, err = answer.Parse[bounds](`{"status": "success", "min": "3", "max": 2}`)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "type", ce.Violations[0].Rule, "the schema first")

	s := &script{answers: []string{`{"status": "success", "min": 3, "max": 2}`, `{"status": "success", "min": 2, "max": 3}`}}
	got, err = answer.Ask[bounds](context.Background(), s.model, "Give bounds.", 2)
	require.NoError(t, err)
	assert.Equal(t, 3, got.Max)
	assert.True(t, strings.HasPrefix(s.prompts[1], "Your last answer did not pass validation: min: greater than max (check).\n"), s.prompts[1])
}
