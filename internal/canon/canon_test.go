package canon

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHash(t *testing.T) {
	a, err := Hash(json.RawMessage(`{"b": 1, "a": [1.50, "x"]}`))
	require.NoError(t, err)
	b, err := Hash(json.RawMessage(`{"a":[1.50,"x"],"b":1}`))
	require.NoError(t, err)
	assert.Equal(t, a, b, "key order and white space do not matter")
	c, err := Hash(json.RawMessage(`{"a":[1.5,"x"],"b":1}`))
	require.NoError(t, err)
	assert.NotEqual(t, a, c, "numbers keep their literal form")
	empty, err := Hash(nil)
	require.NoError(t, err)
	obj, err := Hash(json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.Equal(t, obj, empty)
	_, err = Hash(json.RawMessage(`{`))
	assert.Error(t, err)
}
