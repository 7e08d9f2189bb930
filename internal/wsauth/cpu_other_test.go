//go:build !unix

package wsauth

import "testing"

// processCPU is not available here: the cpu-ns/op metric reads 0.
func processCPU(testing.TB) int64 { return 0 }
