package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/resource"
)

// contactsRC is the resource context of a contacts call from workspace ws.
func contactsRC(ws string) resource.Context {
	return resource.Context{Resource: resourceContacts,
		Scope: resource.ScopeKey{Level: contracts.ScopeWorkspace, Workspace: ws}}
}

// requireDuplicate requires the business error of a taken address.
func requireDuplicate(t *testing.T, err error) {
	t.Helper()
	var re *resource.RefusalError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, codeDuplicateEmail, re.Code)
}

// holders returns the contacts of ws with the address.
func holders(t *testing.T, a *app, ws, email string) []contact {
	t.Helper()
	all, err := a.listContacts(t.Context(), contactsRC(ws), resource.ListQuery{Limit: 1000})
	require.NoError(t, err)
	var out []contact
	for _, c := range all {
		if c.Email == email {
			out = append(out, c)
		}
	}
	return out
}

// race runs n calls of fn at once and returns their errors.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// TestConcurrentCreatesOfOneAddress: of n concurrent creates with the same
// address in a workspace exactly one wins; every other gets the duplicate
// error, and the address stays free in another workspace.
func TestConcurrentCreatesOfOneAddress(t *testing.T) {
	a, _ := newTestServer(t)
	const n = 16
	for round := range 20 {
		email := fmt.Sprintf("ada-%d@example.com", round)
		var (
			mu     sync.Mutex
			winner contact
		)
		errs := race(n, func(i int) error {
			// Spelling variants normalize to the same address.
			c, err := a.createContact(context.Background(), contactsRC("ws-1"),
				contact{Name: fmt.Sprintf("Ada %d", i), Email: fmt.Sprintf("  ADA-%d@Example.com ", round)})
			if err == nil {
				mu.Lock()
				winner = c
				mu.Unlock()
			}
			return err
		})
		wins := 0
		for _, err := range errs {
			if err == nil {
				wins++
				continue
			}
			requireDuplicate(t, err)
		}
		require.Equal(t, 1, wins, "round %d", round)
		assert.Equal(t, []contact{winner}, holders(t, a, "ws-1", email))
		id, known, err := a.contactByEmail(t.Context(), contactsRC("ws-1").Scope.String(), email)
		require.NoError(t, err)
		assert.True(t, known)
		assert.Equal(t, winner.ID, id)

		_, err = a.createContact(t.Context(), contactsRC("ws-2"), contact{Name: "Ada", Email: email})
		require.NoError(t, err)
	}
}

// TestConcurrentUpdateAndCreatesOfOneAddress: an update moving a contact to an
// address races creates of that address; exactly one of them gets it.
func TestConcurrentUpdateAndCreatesOfOneAddress(t *testing.T) {
	a, _ := newTestServer(t)
	rc := contactsRC("ws-1")
	for round := range 5 {
		email := fmt.Sprintf("cy-%d@example.com", round)
		x, err := a.createContact(t.Context(), rc, contact{Name: "X", Email: fmt.Sprintf("x-%d@example.com", round)})
		require.NoError(t, err)
		errs := race(8, func(i int) error {
			if i == 0 {
				_, err := a.updateContact(context.Background(), rc, x.ID, contact{Name: "X", Email: email})
				return err
			}
			_, err := a.createContact(context.Background(), rc, contact{Name: "Cy", Email: email})
			return err
		})
		wins := 0
		for _, err := range errs {
			if err == nil {
				wins++
				continue
			}
			requireDuplicate(t, err)
		}
		require.Equal(t, 1, wins, "round %d", round)
		assert.Len(t, holders(t, a, "ws-1", email), 1)
	}
}

// TestCreateTakesOverStaleClaim: an index entry whose contact does not hold
// the address (a create that crashed before its write, an address an update
// gave up) does not block the address; a held one does.
func TestCreateTakesOverStaleClaim(t *testing.T) {
	a, _ := newTestServer(t)
	rc := contactsRC("ws-1")
	scope := rc.Scope.String()
	ctx := t.Context()

	// A create that reserved ada@ and crashed before writing its contact.
	ghost, err := json.Marshal(emailClaim{ID: "ghost", Token: "t"})
	require.NoError(t, err)
	_, stored, err := a.store.PutIfAbsent(ctx, emailKey(scope, "ada@example.com"), ghost)
	require.NoError(t, err)
	require.True(t, stored)
	_, known, err := a.contactByEmail(ctx, scope, "ada@example.com")
	require.NoError(t, err)
	assert.False(t, known)
	ada, err := a.createContact(ctx, rc, contact{Name: "Ada", Email: "ada@example.com"})
	require.NoError(t, err)
	// The crashed create is fenced: it can no longer write its contact.
	_, stored, err = a.store.PutIfAbsent(ctx, contactKey(scope, "ghost"), []byte(`{}`))
	require.NoError(t, err)
	assert.False(t, stored)
	_, err = a.updateContact(ctx, rc, "ghost", contact{Name: "G", Email: "g@example.com"})
	assert.ErrorIs(t, err, resource.ErrNotFound)

	// Ada moves to a new address: the old one is free again, the new one not.
	_, err = a.updateContact(ctx, rc, ada.ID, contact{Name: "Ada", Email: "ada@new.example"})
	require.NoError(t, err)
	_, err = a.createContact(ctx, rc, contact{Name: "Other Ada", Email: "ada@example.com"})
	require.NoError(t, err)
	_, err = a.createContact(ctx, rc, contact{Name: "Copy", Email: "ada@new.example"})
	requireDuplicate(t, err)
	// Nor can Ada take her old address back.
	_, err = a.updateContact(ctx, rc, ada.ID, contact{Name: "Ada", Email: "ada@example.com"})
	requireDuplicate(t, err)

	emails, err := a.contactEmails(ctx, scope)
	require.NoError(t, err)
	assert.Equal(t, []string{"ada@example.com", "ada@new.example"}, emails)
	all, err := a.listContacts(ctx, rc, resource.ListQuery{Limit: 10})
	require.NoError(t, err)
	assert.Len(t, all, 2, "the void record of the fenced create is no contact")
}
