package supervaizer_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/resource"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

type parityPerson struct {
	ID    string `json:"id,omitempty"`
	Name  string `json:"name"`
	Email string `json:"email"`
	Age   *int64 `json:"age,omitempty"`
}

// parityServer serves a "people" resource whose fields carry rules (required,
// lengths, a pattern, a minimum) and whose import document declares the same
// columns without those rules. It counts the items stored by either path.
func parityServer(t *testing.T) (*svtest.TestServer, *atomic.Int64) {
	t.Helper()
	reg := supervaizer.RegistrationSpec{
		AgentSlug: "people", DisplayName: "People", A2UICatalogVersion: "people/1",
		Resources: []contracts.ResourceDefinition{{
			ID: "people", Label: "People", Operations: []string{"create", "import"},
			Fields: a2ui.ResourceFields(
				a2ui.StringField("id", "ID", a2ui.ReadOnly(), a2ui.Required()),
				a2ui.StringField("name", "Name", a2ui.Required(), a2ui.MinLength(2), a2ui.MaxLength(100)),
				a2ui.StringField("email", "E-mail", a2ui.Required(), a2ui.Pattern(`^[^@\s]+@[^@\s]+\.[a-z]+$`)),
				a2ui.IntegerField("age", "Age", a2ui.Min(0), a2ui.Max(150)),
			),
		}},
	}
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "People", Version: "1.0.0", Registration: reg})
	require.NoError(t, err)
	var stored atomic.Int64
	supervaizer.RegisterResource(agent, "people", resource.Handlers[parityPerson]{
		Create: func(_ context.Context, _ resource.Context, p parityPerson) (parityPerson, error) {
			stored.Add(1)
			p.ID = "p-1"
			return p, nil
		},
		Import: func(_ context.Context, _ resource.Context, b resource.ImportBatch[parityPerson]) (resource.ImportReport[parityPerson], error) {
			stored.Add(int64(len(b.Items)))
			return resource.ImportReport[parityPerson]{Count: len(b.Items)}, nil
		},
		ImportDocument: &a2ui.ResourceImport{
			ID: "people.import", Title: "Import people", Resource: "people",
			Columns: []a2ui.ImportColumn{
				{ID: "name", Label: "Name"}, {ID: "email", Label: "E-mail"},
				{ID: "age", Label: "Age", Type: contracts.FieldInteger},
			},
			Submit: a2ui.Submit{Action: "resource.people.import", Label: "Import"},
		},
	})
	return svtest.NewTestServer(t, []*supervaizer.Agent{agent}, supervaizer.WithLocalMode(true)), &stored
}

// TestImportRowsPassTheCreateChecks: every row of an import is checked with
// the resource's declared field rules exactly as create checks one item, and
// a refused row is reported with its row number, column and rule.
func TestImportRowsPassTheCreateChecks(t *testing.T) {
	ts, stored := parityServer(t)
	ctx := t.Context()
	tests := []struct {
		name            string
		item            map[string]string // cells; absent means empty
		wantCode, field string            // "" : accepted
	}{
		{name: "valid", item: map[string]string{"name": "Ann", "email": "ann@a.test", "age": "40"}},
		{name: "valid without the optional age", item: map[string]string{"name": "Bob", "email": "bob@b.test"}},
		{name: "name of 5,000 characters", item: map[string]string{"name": strings.Repeat("n", 5000), "email": "ann@a.test"}, wantCode: a2ui.CodeMaxLength, field: "name"},
		{name: "name too short", item: map[string]string{"name": "A", "email": "ann@a.test"}, wantCode: a2ui.CodeMinLength, field: "name"},
		{name: "not an e-mail", item: map[string]string{"name": "Ann", "email": "not-an-email"}, wantCode: a2ui.CodePattern, field: "email"},
		{name: "missing required e-mail", item: map[string]string{"name": "Ann"}, wantCode: a2ui.CodeRequired, field: "email"},
		{name: "missing required name", item: map[string]string{"email": "ann@a.test"}, wantCode: a2ui.CodeRequired, field: "name"},
		{name: "negative age", item: map[string]string{"name": "Ann", "email": "ann@a.test", "age": "-1"}, wantCode: a2ui.CodeMin, field: "age"},
		{name: "age above the maximum", item: map[string]string{"name": "Ann", "email": "ann@a.test", "age": "151"}, wantCode: a2ui.CodeMax, field: "age"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			item := map[string]any{}
			for k, v := range tt.item {
				item[k] = v
			}
			if age, ok := tt.item["age"]; ok {
				item["age"] = jsonNumber(age)
			}
			before := stored.Load()
			created, err := ts.Invoke(ctx, ts.Request("resource.people.create", map[string]any{"item": item}))
			require.NoError(t, err)

			var sb strings.Builder
			w := csv.NewWriter(&sb)
			require.NoError(t, w.Write([]string{"name", "email", "age"}))
			require.NoError(t, w.Write([]string{"", "", ""}))                                        // row 1: blank, skipped
			require.NoError(t, w.Write([]string{tt.item["name"], tt.item["email"], tt.item["age"]})) // row 2
			w.Flush()
			imported, err := ts.Invoke(ctx, ts.Request("resource.people.import", map[string]any{"content": sb.String()}))
			require.NoError(t, err)

			if tt.wantCode == "" {
				assert.Equal(t, contracts.StatusOK, created.Status, "%+v", created.Errors)
				assert.Equal(t, contracts.StatusOK, imported.Status, "%+v", imported.Errors)
				assert.Equal(t, before+2, stored.Load())
				return
			}
			require.Equal(t, contracts.StatusError, created.Status)
			require.Equal(t, contracts.StatusError, imported.Status, "import accepted what create refuses")
			assert.Equal(t, before, stored.Load(), "nothing stored")
			require.NotEmpty(t, created.Errors)
			assert.Equal(t, tt.wantCode, created.Errors[0].Code)
			assert.Equal(t, tt.field, created.Errors[0].Field)
			var rowErr *contracts.ResultError
			for i := range imported.Errors {
				if imported.Errors[i].Code == tt.wantCode {
					rowErr = &imported.Errors[i]
				}
			}
			require.NotNil(t, rowErr, "import errors: %+v", imported.Errors)
			assert.Equal(t, tt.field, rowErr.Field)
			assert.True(t, strings.HasPrefix(rowErr.Message, "row 2, column "+tt.field+": "), rowErr.Message)
		})
	}
}

// jsonNumber is a cell as the JSON number create would receive.
func jsonNumber(s string) json.Number { return json.Number(s) }

// FuzzImportCreateParity: for any name, e-mail and age, an imported row is
// accepted exactly when create accepts the same item.
func FuzzImportCreateParity(f *testing.F) {
	f.Add("Ann", "ann@a.test", "40")
	f.Add(strings.Repeat("n", 101), "ann@a.test", "")
	f.Add("Ann", "not-an-email", "1")
	f.Add("Ann", "", "-1")
	f.Add("é", "x@y.fr", "151")
	f.Fuzz(func(t *testing.T, name, email, age string) {
		// Every input is brought into the domain where the two paths receive
		// the same value: a cell that CSV and JSON both carry unchanged, and
		// an age that is an integer literal (create would otherwise receive a
		// string where import reports a type error) or absent.
		name, email, age = parityCell(name), parityCell(email), parityCell(age)
		if age != "" && !integerLiteral(age) {
			age = ""
		}
		ts, _ := parityServer(t)
		item := map[string]any{"name": name, "email": email}
		if age != "" {
			item["age"] = json.Number(age)
		}
		created, err := ts.Invoke(t.Context(), ts.Request("resource.people.create", map[string]any{"item": item}))
		require.NoError(t, err)
		var sb strings.Builder
		w := csv.NewWriter(&sb)
		require.NoError(t, w.Write([]string{"name", "email", "age"}))
		require.NoError(t, w.Write([]string{name, email, age}))
		w.Flush()
		imported, err := ts.Invoke(t.Context(), ts.Request("resource.people.import", map[string]any{"content": sb.String()}))
		require.NoError(t, err)
		assert.Equal(t, created.Status, imported.Status, "create %+v, import %+v", created.Errors, imported.Errors)
	})
}

// integerLiteral reports whether s is an optional minus and 1 to 18 digits
// without a leading zero: the same integer to strconv and to JSON.
// parityCell makes s a cell that create and a CSV import both carry
// unchanged: valid UTF-8, no CR, LF or NUL, no surrounding spaces, at most
// 300 bytes (cut on a rune boundary).
func parityCell(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == 0 {
			return -1
		}
		return r
	}, s)
	for len(s) > 300 {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return strings.TrimSpace(s)
}

func integerLiteral(s string) bool {
	d := strings.TrimPrefix(s, "-")
	if d == "" || len(d) > 18 || (len(d) > 1 && d[0] == '0') {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
