package contracts_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

// TestKeysDifferingOnlyInCase checks the defence against keys that differ from
// a declared key only in letter case: encoding/json would read "Status" (or
// "ſtatus", with a long s) into the status field, after the schema validated
// the real "status". Both the decoder and the Validator refuse such documents,
// with a readable problem that names the keys, never the values, and whose
// path locates the offending key.
func TestKeysDifferingOnlyInCase(t *testing.T) {
	tests := []struct {
		name  string
		model contracts.Model
		doc   string
		key   string
	}{
		{"top level", contracts.ModelActionResult, `{"status": "ok", "Status": "error"}`, `"Status"`},
		{"only the folded key", contracts.ModelActionResult, `{"status": "ok", "JOB_STATE": {"job": "error"}}`, `"JOB_STATE"`},
		{"long s folds to s", contracts.ModelActionResult, "{\"status\": \"ok\", \"\u017ftatus\": \"error\"}", "\"\u017ftatus\""},
		{"Kelvin sign folds to k", contracts.ModelRegistration, "{\"agent\": {\"id\": \"a\", \"slug\": \"a\", \"display_name\": \"A\"}, " +
			"\"versions\": {\"a2ui_version\": \"v\", \"a2ui_catalog_version\": \"c\", \"a2a_version\": \"a\"}, " +
			"\"a2a\": {\"agent_card_url\": \"/c\", \"controller_url\": \"/a\"}, " +
			"\"capabilities\": {\"actions\": [{\"id\": \"x\", \"\u212aind\": \"help\"}]}}", "\"\u212aind\""},
		{"effect", contracts.ModelActionResult, `{"status": "ok", "effects": [{"type": "a", "TYPE": "b"}]}`, `"TYPE"`},
		{"snapshot", contracts.ModelJobState, `{"job": {"id": "j", "agent_slug": "a", "mission_id": "m", "status": "s",
			"source": {"type": "external", "Type": "fresh_start"}}}`, `"Type"`},
		{"camelCase key", contracts.ModelRegistration, `{"agent": {"id": "a", "slug": "a", "display_name": "A"},
			"versions": {"a2ui_version": "v", "a2ui_catalog_version": "c", "a2a_version": "a"},
			"a2a": {"agent_card_url": "/c", "controller_url": "/a"},
			"dashboards": [{"id": "d", "label": "D", "widgets": [{"id": "w", "title": "W",
				"data": {"datasetId": "sales", "datasetid": "other"}}]}]}`, `"datasetid"`},
		{"request", contracts.ModelActionRequest, `{"request_id": "r", "actor": {"user_id": "u"}, "workspace": {"id": "w"},
			"mission_id": "m", "agent_slug": "a", "surface": "s", "action": "job.start", "Action": "job.delete"}`, `"Action"`},
		{"verified context", contracts.ModelVerifiedContext, `{"grant_id": "g", "Grant_Id": "local-mode"}`, `"Grant_Id"`},
		{"field validation", contracts.ModelField, `{"id": "f", "label": "F", "validation": {"max_length": 5, "Max_Length": -1}}`, `"Max_Length"`},
		{"depends on", contracts.ModelField, `{"id": "f", "label": "F", "depends_on": {"field": "g", "in": ["1"], "FIELD": "f"}}`, `"FIELD"`},
		{"billing item", contracts.ModelBillingCatalog, `[{"sku": "a", "unit": "u", "SKU": "b"}]`, `"SKU"`},
	}
	v := contracts.DefaultValidator()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Validate(tt.model, []byte(tt.doc))
			var ve *contracts.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Problems, 1)
			p := ve.Problems[0]
			assert.Equal(t, "decode", p.Type)
			assert.True(t, strings.HasSuffix(p.Path, "/"+strings.Trim(tt.key, `"`)), "the path %q locates the key", p.Path)
			assert.Contains(t, p.Msg, tt.key)
			assert.Contains(t, p.Msg, "only in letter case")
			assert.NotContains(t, p.Msg, "contracts:")
			assert.NotContains(t, p.Msg, "error", "the message quotes keys, not values")

			// Plain json.Unmarshal into the Go type refuses the document too.
			assert.Error(t, contracts.Unmarshal([]byte(tt.doc), newValue(t, tt.model)))
		})
	}
}

// TestExactDuplicateKeys: a repeated key is refused, whichever value would
// win: decoders disagree on it (encoding/json keeps the last, a proxy may read
// the first), so accepting it would let two readers see two documents.
func TestExactDuplicateKeys(t *testing.T) {
	v := contracts.DefaultValidator()
	for _, doc := range []string{`{"status": "ok", "status": "bogus"}`, `{"status": "bogus", "status": "ok"}`} {
		err := v.Validate(contracts.ModelActionResult, []byte(doc))
		var ve *contracts.ValidationError
		require.ErrorAs(t, err, &ve, doc)
		assert.Equal(t, "/status", ve.Problems[0].Path)
		assert.Equal(t, "duplicate_key", ve.Problems[0].Type)
		var res contracts.ActionResult
		require.Error(t, v.Decode(contracts.ModelActionResult, []byte(doc), &res))
	}
}

// TestFoldKey: two keys fold alike exactly when encoding/json reads them
// into the same field (long s and Kelvin sign included), the folding every
// key check of the SDK uses.
func TestFoldKey(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"topic_id", "TOPIC_ID"}, {"topic_id", "Topic_Id"},
		{"s", "\u017f"}, // long s folds with s, as in encoding/json
		{"k", "\u212a"}, // Kelvin sign folds with k
	} {
		assert.Equal(t, contracts.FoldKey(tc.a), contracts.FoldKey(tc.b), "%q ~ %q", tc.a, tc.b)
	}
	assert.NotEqual(t, contracts.FoldKey("topic_id"), contracts.FoldKey("topic-id"))
	assert.Equal(t, strings.ToUpper("abc"), contracts.FoldKey("abc"), "ASCII folds to upper case")
}
