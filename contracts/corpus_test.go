package contracts_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

// The corpus lives in testdata/corpus/<Model>/{valid,invalid}/<name>.json. Each
// invalid document has a sidecar <name>.expect: a JSON array of the problems the
// Validator must report, {"path": <JSON Pointer>, "type": <rule>}, exactly.

// sentinel marks rejected values in the invalid documents: no problem may quote it.
const sentinel = "SENTINEL"

// goRules are the rules the Validator checks in Go because JSON Schema cannot
// express them (checks.go), plus "decode" for documents the Go decoder refuses.
var goRules = []string{"declared_surface", "decode", "depends_on", "help_action", "identifier", "mission_id",
	"min_le_max", "scheduled_start", "unique", "validation_type"}

// goOnly lists the invalid documents the published schema accepts and the
// Validator rejects: each breaks only a Go rule.
var goOnly = []string{
	"ActionRequest/invalid/authorization-key-differs-in-case",
	"ActionRequest/invalid/idempotency-key-line-separator",
	"ActionRequest/invalid/key-differs-in-case",
	"ActionRequest/invalid/mission-id-mismatch",
	"ActionRequest/invalid/mission-id-nul",
	"ActionRequest/invalid/request-id-too-long",
	"ActionResult/invalid/dry-run-cost-min-above-max",
	"ActionResult/invalid/job-state-awaiting-validation-type",
	"ActionResult/invalid/key-differs-by-long-s",
	"ActionResult/invalid/key-differs-in-case",
	"ActionResult/invalid/nested-key-differs-in-case",
	"BillingCatalog/invalid/sku-twice",
	"ContextAssignment/invalid/mission-item-blank-mission-id",
	"ContextAssignment/invalid/mission-item-without-mission-id",
	// JSON Schema reads 2.0 as an integer; encoding/json cannot put it in an int.
	"ContextAssignment/invalid/version-integral-float",
	"CostEstimate/invalid/min-above-max",
	"Field/invalid/depends-on-key-differs-in-case",
	"Field/invalid/depends-on-self",
	"Field/invalid/validation-items-on-string",
	"Field/invalid/validation-key-differs-in-case",
	"Field/invalid/validation-length-on-boolean",
	"Field/invalid/validation-min-above-max",
	"Field/invalid/validation-min-items-above-max",
	"Field/invalid/validation-min-length-above-max",
	"Field/invalid/validation-pattern-on-integer",
	"JobState/invalid/awaiting-field-depends-on-unknown",
	"JobState/invalid/awaiting-field-length-on-default-boolean",
	"Registration/invalid/binding-create-field-validation-type",
	"Registration/invalid/help-action-bare-string",
	"Registration/invalid/help-action-not-help",
	"Registration/invalid/help-action-undeclared",
	"Registration/invalid/key-differs-in-case",
	"Registration/invalid/nested-key-differs-in-case",
	"Registration/invalid/raw-plan-help-action-undeclared",
	"Registration/invalid/resource-field-depends-on-self",
	"Registration/invalid/resource-field-depends-on-unknown",
	"Registration/invalid/resource-field-validation-min-on-string",
	"Registration/invalid/scheduled-start-without-job-start",
	"Registration/invalid/surface-definition-twice",
	"Registration/invalid/surface-definition-undeclared",
	"SetupPlan/invalid/cost-min-above-max",
	"SetupPlan/invalid/depends-on-unknown-sibling",
	"SetupPlan/invalid/item-field-depends-on-outer",
	"SetupPlan/invalid/step-id-twice",
	"SetupPlan/invalid/validation-min-on-text",
	"SurfaceRequest/invalid/job-id-too-many-bytes",
	"SurfaceRequest/invalid/key-differs-in-case",
	"SurfaceRequest/invalid/mission-id-mismatch",
	"SurfaceResult/invalid/key-differs-in-case",
}

type expectedProblem struct {
	Path string `json:"path"`
	Type string `json:"type"`
}

type corpusDoc struct {
	name   string // <Model>/<valid|invalid>/<name>
	model  contracts.Model
	raw    []byte
	valid  bool
	expect []expectedProblem
}

func loadCorpus(t testing.TB) []corpusDoc {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*", "*", "*.json"))
	require.NoError(t, err)
	var docs []corpusDoc
	for _, f := range files {
		rel, err := filepath.Rel(filepath.Join("testdata", "corpus"), f)
		require.NoError(t, err)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		model, verdict := contracts.Model(parts[0]), parts[1]
		require.Contains(t, contracts.Models(), model, "%s: unknown model directory", f)
		require.Contains(t, []string{"valid", "invalid"}, verdict, "%s: expected valid/ or invalid/", f)
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		d := corpusDoc{name: strings.TrimSuffix(filepath.ToSlash(rel), ".json"), model: model, raw: raw, valid: verdict == "valid"}
		expectFile := strings.TrimSuffix(f, ".json") + ".expect"
		exp, err := os.ReadFile(expectFile)
		if d.valid {
			require.ErrorIs(t, err, os.ErrNotExist, "%s: a valid document has no .expect", f)
		} else {
			require.NoError(t, err, "%s: an invalid document needs a .expect", f)
			require.NoError(t, json.Unmarshal(exp, &d.expect), expectFile)
			require.NotEmpty(t, d.expect, expectFile)
		}
		docs = append(docs, d)
	}
	return docs
}

// compilePublished compiles every model of the published schema file with a
// fresh compiler: an independent reading of the committed document.
func compilePublished(t testing.TB) map[contracts.Model]*jsonschema.Schema {
	t.Helper()
	f, err := os.Open(publishedSchema)
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	id, _ := doc.(map[string]any)["$id"].(string)
	require.NotEmpty(t, id)

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: "nonblank", Validate: func(v any) error {
		if s, ok := v.(string); ok && strings.TrimSpace(s) == "" {
			return errors.New("blank")
		}
		return nil
	}})
	require.NoError(t, c.AddResource(id, doc))
	schemas := map[contracts.Model]*jsonschema.Schema{}
	for _, m := range contracts.Models() {
		s, err := c.Compile(id + "#/$defs/" + string(m))
		require.NoError(t, err, m)
		schemas[m] = s
	}
	return schemas
}

func sortedProblems(ps []contracts.Problem) []expectedProblem {
	out := make([]expectedProblem, len(ps))
	for i, p := range ps {
		out[i] = expectedProblem{Path: p.Path, Type: p.Type}
	}
	return sortExpected(out)
}

func sortExpected(ps []expectedProblem) []expectedProblem {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b expectedProblem) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
	return ps
}

// TestCorpusAgreement checks that the Validator and an independent compile of
// the published schema give the same verdict on every corpus document, except
// the documents of goOnly, which only the Go rules reject.
func TestCorpusAgreement(t *testing.T) {
	docs := loadCorpus(t)
	require.GreaterOrEqual(t, len(docs), 120, "the corpus should hold at least 120 documents")
	published := compilePublished(t)
	v := contracts.DefaultValidator()

	names := map[string]bool{}
	counts := map[contracts.Model][2]int{} // valid, invalid
	for _, d := range docs {
		names[d.name] = true
		c := counts[d.model]
		if d.valid {
			c[0]++
		} else {
			c[1]++
		}
		counts[d.model] = c
	}
	for _, m := range coreModels {
		assert.Positive(t, counts[m][0], "%s has no valid corpus document", m)
		assert.GreaterOrEqual(t, counts[m][1], 5, "%s has few invalid corpus documents", m)
	}
	for _, n := range goOnly {
		require.True(t, names[n], "goOnly lists %s, which is not in the corpus", n)
	}

	var withSentinel int
	for _, d := range docs {
		t.Run(d.name, func(t *testing.T) {
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(d.raw))
			require.NoError(t, err)
			schemaErr := published[d.model].Validate(inst)
			err = v.Validate(d.model, d.raw)

			if d.valid {
				assert.NoError(t, err, "Validator")
				assert.NoError(t, schemaErr, "published schema")
				return
			}
			var ve *contracts.ValidationError
			require.ErrorAs(t, err, &ve, "the Validator must reject an invalid document")
			assert.Equal(t, d.model, ve.Model)
			assert.Equal(t, sortExpected(d.expect), sortedProblems(ve.Problems), "problems (path, type)")

			if slices.Contains(goOnly, d.name) {
				assert.NoError(t, schemaErr, "a goOnly document must pass the published schema")
				for _, e := range d.expect {
					assert.Contains(t, goRules, e.Type, "a goOnly document breaks only Go rules")
				}
			} else {
				assert.Error(t, schemaErr, "the published schema must reject the document too (or list it in goOnly)")
			}

			// Problems never quote the rejected value.
			if bytes.Contains(d.raw, []byte(sentinel)) {
				withSentinel++
			}
			assert.NotContains(t, err.Error(), sentinel)
			data, mErr := json.Marshal(ve.Problems)
			require.NoError(t, mErr)
			assert.NotContains(t, string(data), sentinel)
			assertReadable(t, ve)
		})
	}
	assert.GreaterOrEqual(t, withSentinel, 60, "invalid documents should carry the sentinel in their rejected values")
}

// assertReadable checks the shape of every problem: a JSON Pointer that matches
// Loc, a rule and a one-line message.
func assertReadable(t *testing.T, ve *contracts.ValidationError) {
	t.Helper()
	lines := strings.Split(ve.Error(), "\n")
	assert.Equal(t, "invalid "+string(ve.Model)+":", lines[0])
	assert.Len(t, lines, len(ve.Problems)+1, "one line per problem")
	for _, p := range ve.Problems {
		assert.NotEmpty(t, p.Msg)
		assert.NotEmpty(t, p.Type)
		assert.NotContains(t, p.Msg, "\n")
		assert.Equal(t, p.Path, pointerOf(p.Loc), "Path is the JSON Pointer of Loc")
		assert.Less(t, len(p.Msg), 200, "a message is one short line")
	}
}

func pointerOf(loc []any) string {
	var b strings.Builder
	for _, seg := range loc {
		b.WriteByte('/')
		switch s := seg.(type) {
		case string:
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
		case int:
			b.WriteString(strconv.Itoa(s))
		}
	}
	return b.String()
}
