//go:build !unix

package supervaizer

// processAlive cannot tell on this system: a displaced holder is presumed
// alive, and its records wait for their lease.
func processAlive(int) bool { return true }
