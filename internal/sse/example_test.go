package sse_test

import (
	"fmt"

	"github.com/supervaize/supervaizer-go/internal/sse"
)

func ExampleParseLastEventID() {
	for _, h := range []string{"42", " 7 ", "", "abc", "-1"} {
		id, ok := sse.ParseLastEventID(h)
		fmt.Printf("%q: %d %t\n", h, id, ok)
	}
	// Output:
	// "42": 42 true
	// " 7 ": 7 true
	// "": 0 false
	// "abc": 0 false
	// "-1": 0 false
}
