//go:build conformance

package cardcheck

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCardChecksAgreeWithPublishedSchemas shows that the structural checks
// accept and reject the same cards as the published A2A JSON Schemas.
func TestCardChecksAgreeWithPublishedSchemas(t *testing.T) {
	published, err := loadPublished(os.Getenv(EnvSchemas))
	require.NoError(t, err)
	require.Len(t, published, len(Versions))
	for _, tc := range cardCases {
		t.Run(tc.name, func(t *testing.T) {
			card := caseCard(t, tc)
			for i, version := range Versions {
				schemaErr := published[i].Validate(card)
				structErr := Check(version, card)
				assert.Equal(t, tc.valid[version], schemaErr == nil, "%s, published schema: %v", version, schemaErr)
				assert.Equal(t, schemaErr == nil, structErr == nil, "%s: structure %v, published schema %v", version, structErr, schemaErr)
			}
		})
	}
}
