//go:build unix

package proc

import (
	"errors"
	"syscall"
)

// Alive reports whether a process with id pid exists on this host
// (a stopped one included).
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
