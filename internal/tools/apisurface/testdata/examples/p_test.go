package p

import "fmt"

func ExampleMode() {
	fmt.Println(ModeA, ModeB)
	// Output: 0 1
}

func ExampleCovered() {
	fmt.Println(Covered() == Limit)
	// Output: true
}

func ExampleSilent() {
	Silent()
}

func ExampleT() {
	fmt.Println(T{})
	// Output: {}
}
