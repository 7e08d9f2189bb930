package supervaizer_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	supervaizer "github.com/supervaize/supervaizer-go"
)

// An Account posts controller events to Studio; here the case event that
// announces a case before its rule checkpoints.
func ExampleAccount() {
	studio := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev struct {
			EventType  string            `json:"event_type"`
			ObjectType string            `json:"object_type"`
			Source     map[string]string `json:"source"`
		}
		_ = json.Unmarshal(body, &ev)
		fmt.Println(r.Method, r.URL.Path, r.Header.Get("workspace"))
		fmt.Println(ev.EventType, ev.ObjectType, ev.Source["job"], ev.Source["case"])
		w.WriteHeader(http.StatusCreated)
	}))
	defer studio.Close()

	acct, err := supervaizer.NewAccount(supervaizer.AccountConfig{
		APIURL: studio.URL, WorkspaceID: "ws-1", APIKey: "example-account-key",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := acct.StartCase(context.Background(), "job-1", "case-7", map[string]any{"name": "Acme"}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// POST /w/ws-1/api/v1/ctrl-events/ ws-1
	// agent.case.start case job-1 case-7
}

// ContextHeaders writes the DataResource context headers, the mission
// metadata as unpadded base64url JSON.
func ExampleContextHeaders() {
	h, err := supervaizer.ContextHeaders(supervaizer.ContextHeaderValues{
		WorkspaceID:     "ws-1",
		MissionID:       "mis-3",
		MissionMetadata: map[string]any{"filter": map[string]any{"contact": "c-1"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.Get(supervaizer.HeaderWorkspaceID), h.Get(supervaizer.HeaderMissionID))
	meta, _ := base64.RawURLEncoding.DecodeString(h.Get(supervaizer.HeaderMissionMetadata))
	fmt.Println(string(meta))
	fmt.Println(h.Get(supervaizer.HeaderRequestID) == "")
	// Output:
	// ws-1 mis-3
	// {"filter":{"contact":"c-1"}}
	// true
}
