package resource_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/resource"
	svtest "github.com/supervaize/supervaizer-go/testing"
)

// scopedContacts is the package comment's store: contacts kept by scope key.
type scopedContacts struct {
	items  []contact
	scopes []string // the scope of each List call
}

func (s *scopedContacts) List(scope string, offset, limit int) ([]contact, error) {
	s.scopes = append(s.scopes, scope)
	return s.items[min(offset, len(s.items)):min(offset+limit, len(s.items))], nil
}

// TestPackageDocRegisterResource runs the package comment's registration as
// written: resource.contacts.list answers the contacts of the call's scope.
func TestPackageDocRegisterResource(t *testing.T) {
	srv, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Contacts Agent", Version: "1.0.0",
		Registration: supervaizer.RegistrationSpec{Resources: []contracts.ResourceDefinition{
			{ID: "contacts", Label: "Contacts", Operations: []string{"list"}}}}})
	require.NoError(t, err)
	store := &scopedContacts{items: []contact{{ID: "c-1", Email: "ada@example.com"}}}

	supervaizer.RegisterResource(srv, "contacts", resource.Handlers[contact]{
		List: func(ctx context.Context, rc resource.Context, q resource.ListQuery) ([]contact, error) {
			return store.List(rc.Scope.String(), q.Offset, q.Limit)
		},
	})

	ts := svtest.NewTestServer(t, []*supervaizer.Agent{srv})
	res, err := ts.Invoke(t.Context(), ts.Request("resource.contacts.list", map[string]any{}))
	require.NoError(t, err)
	require.Equal(t, "ok", res.Status)
	out, err := contracts.Marshal(res)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"email":"ada@example.com"`)
	assert.Equal(t, []string{"workspace:" + svtest.DefaultWorkspaceID}, store.scopes, "the verified workspace's key")
}
