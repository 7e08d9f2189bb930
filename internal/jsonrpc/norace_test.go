//go:build !race

package jsonrpc

// raceEnabled reports whether the race detector is on; it adds allocations.
const raceEnabled = false
