//go:build unix

package wsauth

import (
	"syscall"
	"testing"
)

// processCPU returns the CPU time (user + system) the process has used so
// far, in nanoseconds.
func processCPU(tb testing.TB) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
