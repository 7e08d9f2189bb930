package slug_test

import (
	"fmt"

	"github.com/supervaize/supervaizer-go/internal/slug"
)

func ExampleMake() {
	for _, name := range []string{"Research Agent", "L'Équipe 2", "Caf&eacute;", "1,000 agents"} {
		fmt.Println(slug.Make(name))
	}
	// Output:
	// research-agent
	// l-equipe-2
	// cafe
	// 1000-agents
}

func ExampleLegacyAgentID() {
	fmt.Println(slug.LegacyAgentID("Research Agent"))
	// Output: imussvG8U97vC93sU6egrt
}
