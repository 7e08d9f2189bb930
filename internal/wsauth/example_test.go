package wsauth_test

import (
	"fmt"

	"github.com/supervaize/supervaizer-go/internal/wsauth"
)

func ExampleExtractToken() {
	fmt.Printf("%q\n", wsauth.ExtractToken("  bearer eyJh.eyJp.c2ln "))
	fmt.Printf("%q\n", wsauth.ExtractToken("eyJh.eyJp.c2ln"))
	fmt.Printf("%q\n", wsauth.ExtractToken("Bearer "))
	// Output:
	// "eyJh.eyJp.c2ln"
	// "eyJh.eyJp.c2ln"
	// "Bearer"
}
