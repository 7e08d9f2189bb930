package contracts_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/golden"
)

// publishedSchema is the committed copy of contracts.Schema().
const publishedSchema = "schema/supervaizer-v2.schema.json"

// TestPublishedSchema fails while the committed schema differs from Schema().
// `go generate ./contracts` runs it with -update to rewrite the file.
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
