package resource_test

import (
	"encoding/base64"
	"fmt"

	"github.com/supervaize/supervaizer-go/resource"
)

// ContextHeaders writes the DataResource context headers, the mission
// metadata as unpadded base64url JSON.
func ExampleContextHeaders() {
	h, err := resource.ContextHeaders(resource.ContextHeaderValues{
		WorkspaceID:     "ws-1",
		MissionID:       "mis-3",
		MissionMetadata: map[string]any{"filter": map[string]any{"contact": "c-1"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.Get(resource.HeaderWorkspaceID), h.Get(resource.HeaderMissionID))
	meta, _ := base64.RawURLEncoding.DecodeString(h.Get(resource.HeaderMissionMetadata))
	fmt.Println(string(meta))
	fmt.Println(h.Get(resource.HeaderRequestID) == "")
	// Output:
	// ws-1 mis-3
	// {"filter":{"contact":"c-1"}}
	// true
}
