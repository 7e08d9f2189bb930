package p

// Mode is a mode.
type Mode int

// The modes: shown by ExampleMode.
const (
	ModeA Mode = iota
	ModeB
)

// Limit is used by ExampleCovered only.
const Limit = 3

// Alone has no Example using it.
const Alone = "x"

// Covered has a runnable Example.
func Covered() int { return Limit }

// Silent has an Example without Output.
func Silent() {}

// Missing has none.
func Missing() {}

// T is a type.
type T struct{}

// M is a method without an Example.
func (T) M() {}
