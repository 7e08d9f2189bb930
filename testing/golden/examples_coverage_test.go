package golden_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/apisurface"
)

// TestEveryIdentifierHasAnExample: every exported name of the package has
// a runnable Example (apisurface.MissingExamples says what counts).
func TestEveryIdentifierHasAnExample(t *testing.T) {
	missing, err := apisurface.MissingExamples(".")
	require.NoError(t, err)
	assert.Empty(t, missing)
}
