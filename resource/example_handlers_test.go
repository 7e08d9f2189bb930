package resource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sync"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/resource"
)

type contact struct {
	ID    string `json:"id"`
	Email string `json:"email"`
}

// contacts keeps the contacts of every scope apart: the only key is the
// verified rc.Scope, never a slug or a filter of the request.
type contacts struct {
	mu    sync.Mutex
	items map[resource.ScopeKey][]contact
}

func (s *contacts) handlers() resource.Handlers[contact] {
	return resource.Handlers[contact]{
		List: func(_ context.Context, rc resource.Context, q resource.ListQuery) ([]contact, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			items := s.items[rc.Scope]
			return items[min(q.Offset, len(items)):], nil
		},
		Get: func(_ context.Context, rc resource.Context, id string) (contact, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, c := range s.items[rc.Scope] {
				if c.ID == id {
					return c, nil
				}
			}
			return contact{}, resource.ErrNotFound
		},
		Create: func(_ context.Context, rc resource.Context, c contact) (contact, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, old := range s.items[rc.Scope] {
				if old.Email == c.Email {
					return contact{}, &resource.RefusalError{Code: "duplicate_email", Message: "this e-mail address is taken", Field: "email"}
				}
			}
			c.ID = fmt.Sprintf("c-%d", len(s.items[rc.Scope])+1)
			s.items[rc.Scope] = append(s.items[rc.Scope], c)
			return c, nil
		},
	}
}

// printResult prints the status, the effects' types and the errors' codes.
func printResult(res *contracts.ActionResult, problems []contracts.Problem, err error) {
	switch {
	case err != nil:
		fmt.Println("failure:", err)
	case len(problems) > 0:
		fmt.Println("invalid input at", problems[0].Path)
	default:
		out, _ := contracts.Marshal(res.Effects)
		fmt.Println(res.Status, string(out))
		for _, e := range res.Errors {
			if e.Field != "" {
				fmt.Printf("  error %s (field %s)\n", e.Code, e.Field)
			} else {
				fmt.Printf("  error %s\n", e.Code)
			}
		}
	}
}

// Handlers implements the operations of a declared resource once; the
// server binds them ([resource.Bind]) when supervaizer.RegisterResource
// registers them, and serves each operation as the resource.<id>.<op> action
// and on the DataResource REST routes. Here the binding is called directly,
// as the server calls it for POST /a2a.
func ExampleHandlers() {
	def := contracts.ResourceDefinition{
		ID: "contacts", Label: "Contacts", Operations: []string{"list", "get", "create"},
		Fields: []contracts.ResourceField{{ID: "email", Label: "E-mail", Type: contracts.FieldString, Required: true}},
	}
	store := &contacts{items: map[resource.ScopeKey][]contact{}}
	b, err := resource.Bind(def, store.handlers())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(b.ID(), b.Operations())

	ctx := context.Background()
	call := func(op, input string) {
		req := &contracts.ActionRequest{
			AgentSlug: "contacts-agent", Action: resource.Action("contacts", op), Input: json.RawMessage(input),
			// The verified workspace context the server puts on the request.
			WorkspaceAuthorization: &contracts.VerifiedWorkspaceContext{WorkspaceID: "ws-1", AgentSlug: "contacts-agent"},
		}
		printResult(b.Invoke(ctx, op, req))
	}
	call("create", `{"item":{"email":"ann@example.com"}}`)
	call("create", `{"item":{"email":"ann@example.com"}}`) // a business refusal
	call("create", `{"item":{}}`)                          // refused by the declared fields
	call("get", `{"id":"c-9"}`)                            // ErrNotFound
	call("list", `{"limit":0}`)                            // malformed input: -32602
	call("list", `{}`)
	// Output:
	// contacts [list get create]
	// ok [{"type":"resource.created","resource":"contacts","item":{"email":"ann@example.com","id":"c-1"}}]
	// error []
	//   error duplicate_email (field email)
	// error []
	//   error required (field email)
	// error []
	//   error not_found
	// invalid input at /input/limit
	// ok [{"type":"resource.listed","resource":"contacts","items":[{"email":"ann@example.com","id":"c-1"}]}]
}

// ScopeKey.String is a storage key: its components are escaped, so two
// scopes never share one.
func ExampleScopeKey_String() {
	fmt.Println(resource.ScopeKey{Level: contracts.ScopeWorkspace, Workspace: "ws-1"})
	fmt.Println(resource.ScopeKey{Level: contracts.ScopeMission, Workspace: "acme/prod", ByRef: true, Mission: "m-1"})
	// Output:
	// workspace:ws-1
	// ref:acme%2Fprod/mission:m-1
}

// ParseDataResourceContext reads the context headers of a DataResource REST
// call; the mission metadata header is decoded, and refused when malformed.
func ExampleParseDataResourceContext() {
	h, _ := resource.ContextHeaders(resource.ContextHeaderValues{
		WorkspaceID: "ws-1", MissionID: "m-1", MissionMetadata: map[string]any{"segment": "b2b"},
	})
	r := httptest.NewRequest("GET", "/api/agents/contacts-agent/data/contacts/", nil)
	r.Header = h
	verified := &contracts.VerifiedWorkspaceContext{WorkspaceID: "ws-1", AgentSlug: "contacts-agent"}
	dc, err := resource.ParseDataResourceContext(r, verified)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(dc.WorkspaceID, dc.AgentSlug, dc.Mission.ID, string(dc.Mission.Metadata))

	r.Header.Set(resource.HeaderMissionMetadata, "not base64url!")
	_, err = resource.ParseDataResourceContext(r, verified)
	fmt.Println(err)
	// Output:
	// ws-1 contacts-agent m-1 {"segment":"b2b"}
	// X-Supervaize-Mission-Metadata is not valid base64url
}
