package contracts_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/testing/golden"
)

// publishedSchema is the committed copy of contracts.Schema().
const publishedSchema = "schema/supervaizer-v2.schema.json"

// TestPublishedSchema fails while the committed schema differs from Schema().
// `go generate ./contracts` runs it with SUPERVAIZER_UPDATE_GOLDEN=1 to rewrite the file.
func TestPublishedSchema(t *testing.T) {
	golden.Bytes(t, publishedSchema, contracts.Schema())
}

func TestSchemaDocument(t *testing.T) {
	var doc struct {
		Schema string                    `json:"$schema"`
		ID     string                    `json:"$id"`
		Defs   map[string]map[string]any `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(contracts.Schema(), &doc))
	assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc.Schema)
	assert.Equal(t, contracts.SchemaID, doc.ID)
	for _, m := range contracts.Models() {
		assert.Contains(t, doc.Defs, string(m), "every model has a root definition")
	}
	// Schema returns a copy: callers cannot corrupt the shared document.
	s := contracts.Schema()
	s[0] = 'x'
	assert.Equal(t, byte('{'), contracts.Schema()[0])
}

// TestInputTypeWithoutSchemaMapping: an input type the schema cannot map is
// an error naming the Go type; an anonymous struct's error suggests the named
// type that fixes it (issue 29).
func TestInputTypeWithoutSchemaMapping(t *testing.T) {
	type named struct {
		Name string `json:"name"`
	}
	type withNamed struct {
		Item named `json:"item"`
	}
	type withAnonymous struct {
		Item struct {
			Name string `json:"name"`
		} `json:"item"`
	}
	type withAnonymousSlice struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	type withChan struct {
		C chan int `json:"c"`
	}
	tests := []struct {
		name string
		typ  reflect.Type
		want []string // substrings of the error; none: no error
		not  []string
	}{
		{"a named struct", reflect.TypeFor[withNamed](), nil, nil},
		{"an anonymous struct", reflect.TypeFor[withAnonymous](), []string{"anonymous struct type struct { Name string", "declare it as a named type"}, nil},
		{"a slice of anonymous structs", reflect.TypeFor[withAnonymousSlice](), []string{"anonymous struct type", "declare it as a named type"}, nil},
		{"a channel", reflect.TypeFor[withChan](), []string{"no JSON Schema mapping for Go type chan int"}, []string{"named type"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := contracts.NewInputValidator(tt.typ)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			for _, w := range tt.not {
				assert.NotContains(t, err.Error(), w)
			}
		})
	}
}
