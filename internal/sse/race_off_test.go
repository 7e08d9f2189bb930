//go:build !race

package sse

// raceEnabled reports whether the race detector, which slows goroutine hand-offs by an
// order of magnitude, is on.
const raceEnabled = false
