package contracts_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

var update = flag.Bool("update", false, "rewrite schema/supervaizer-v2.schema.json and testdata/golden from the code")

// publishedSchema is the committed copy of contracts.Schema().
const publishedSchema = "schema/supervaizer-v2.schema.json"

// TestPublishedSchema fails while the committed schema differs from Schema().
// `go generate ./contracts` runs it with -update to rewrite the file.
func TestPublishedSchema(t *testing.T) {
	want := contracts.Schema()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(publishedSchema), 0o755))
		require.NoError(t, os.WriteFile(publishedSchema, want, 0o644))
	}
	got, err := os.ReadFile(publishedSchema)
	require.NoError(t, err, "run `go generate ./contracts` to write the published schema")
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from contracts.Schema() from line %d on: run `go generate ./contracts` and commit the file",
			publishedSchema, firstDifferentLine(got, want))
	}
}

func firstDifferentLine(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
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
