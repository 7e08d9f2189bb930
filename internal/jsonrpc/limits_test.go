//go:build !race

package jsonrpc

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The race detector adds allocations of its own, so the TestLimit tests build
// only without it; make test runs them in a pass of their own.

// TestLimitDecodeRequestAllocs: decoding a typical call allocates the Request
// and its Method string, nothing else.
func TestLimitDecodeRequestAllocs(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		if _, rpcErr := DecodeRequest(benchBody); rpcErr != nil {
			t.Fatal(rpcErr.Message)
		}
	})
	require.LessOrEqual(t, allocs, 2.0)
}
