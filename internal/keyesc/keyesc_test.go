package keyesc

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAppend(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"research-agent", "research-agent"},
		{"a/b c", "a%2Fb%20c"},
		{"%", "%25"},
		{"~._-AZaz09", "~._-AZaz09"},
		{"é", "%C3%A9"},
		{"\x00\xff", "%00%FF"},
	} {
		assert.Equal(t, "p"+tc.want, string(Append([]byte("p"), tc.in)), "string %q", tc.in)
		assert.Equal(t, "p"+tc.want, string(Append([]byte("p"), []byte(tc.in))), "bytes %q", tc.in)
	}
}
