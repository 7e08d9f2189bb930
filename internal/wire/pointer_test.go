package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPointerToken(t *testing.T) {
	for _, tt := range []struct{ raw, tok string }{
		{"", ""},
		{"plain", "plain"},
		{"a/b", "a~1b"},
		{"a~b", "a~0b"},
		{"~1", "~01"},
		{"/~/", "~1~0~1"},
	} {
		assert.Equal(t, tt.tok, PointerToken(tt.raw), tt.raw)
		assert.Equal(t, tt.raw, UnescapePointerToken(tt.tok), tt.tok)
	}
}
