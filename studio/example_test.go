package studio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/supervaize/supervaizer-go/studio"
)

// A Client posts controller events to Studio; here the case event that
// announces a case before its rule checkpoints.
func ExampleClient() {
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	defer fake.Close()

	acct, err := studio.NewClient(studio.Config{
		APIURL: fake.URL, WorkspaceID: "ws-1", APIKey: "example-account-key",
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
