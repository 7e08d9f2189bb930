//go:build unix

package supervaizer

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with id pid exists on this host
// (a stopped one included).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
