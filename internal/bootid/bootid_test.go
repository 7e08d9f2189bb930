package bootid

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := New()
		require.Len(t, id, 24)
		_, err := hex.DecodeString(id)
		require.NoError(t, err, "%q is not hex", id)
		assert.False(t, seen[id], "%q drawn twice", id)
		seen[id] = true
	}
}
