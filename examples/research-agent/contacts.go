package main

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/store"
)

// contact is one item of the contacts resource: a person who receives the
// briefs of the workspace. Its JSON keys are the declared resource fields,
// plus the id the agent assigns.
type contact struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Email        string `json:"email"`
	Organization string `json:"organization,omitempty"`
}

// codeDuplicateEmail refuses a second contact with the same e-mail address in
// a workspace.
const codeDuplicateEmail = "duplicate_email"

func contactKey(scope, id string) string { return store.Key(keyRoot, "contacts", scope, id) }

// emailKey indexes contacts by e-mail address, which makes the address unique
// per workspace even under concurrent writes.
func emailKey(scope, email string) string { return store.Key(keyRoot, "contact-emails", scope, email) }

func normalize(c contact) contact {
	c.Name, c.Organization = strings.TrimSpace(c.Name), strings.TrimSpace(c.Organization)
	c.Email = strings.ToLower(strings.TrimSpace(c.Email))
	return c
}

// contactImportDocument is the ResourceImport document of the contacts import
// view, mounted on surfaceContactImport. The SDK checks every uploaded row
// against its columns before importContacts sees it.
func contactImportDocument() *a2ui.ResourceImport {
	return &a2ui.ResourceImport{
		ID: "research-agent.contacts.import", Title: "Import contacts", Resource: resourceContacts,
		AcceptedFormats: []string{contracts.ImportFormatCSV},
		Columns: []a2ui.ImportColumn{
			{ID: "name", Label: "Name", Required: true},
			{ID: "email", Label: "Email", Required: true},
			{ID: "organization", Label: "Organization"},
		},
		Submit: a2ui.Submit{Action: "resource.contacts.import", Label: "Import"},
	}
}

// registerContacts serves the contacts resource. Every operation receives the
// verified scope (rc.Scope) and reads and writes inside it only: the SDK
// builds it from the workspace token, never from a slug of the request.
func (a *app) registerContacts() {
	supervaizer.RegisterResource(a.agent, resourceContacts, supervaizer.Resource[contact]{
		List:           a.listContacts,
		Create:         a.createContact,
		Update:         a.updateContact,
		Import:         a.importContacts,
		ImportDocument: contactImportDocument(),
	})
	a.agent.HandleSurface(surfaceContactImport, func(ctx context.Context, _ *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
		return supervaizer.NewSurfaceResult(ctx, surfaceContactImport, contactImportDocument())
	})
}

// listContacts returns a page of the scope's contacts, narrowed by q.Search.
func (a *app) listContacts(ctx context.Context, rc supervaizer.ResourceContext, q supervaizer.ListQuery) ([]contact, error) {
	search := strings.ToLower(strings.TrimSpace(q.Search))
	var out []contact
	skip := q.Offset
	err := a.store.Scan(ctx, store.Prefix(keyRoot, "contacts", rc.Scope.String()), func(_ string, v []byte) error {
		var c contact
		if err := json.Unmarshal(v, &c); err != nil {
			return err
		}
		if search != "" && !strings.Contains(strings.ToLower(c.Name+"\x00"+c.Email+"\x00"+c.Organization), search) {
			return nil
		}
		if skip > 0 {
			skip--
			return nil
		}
		if len(out) < q.Limit {
			out = append(out, c)
		}
		return nil
	})
	return out, err
}

// createContact stores a new contact with an id of its own.
func (a *app) createContact(ctx context.Context, rc supervaizer.ResourceContext, c contact) (contact, error) {
	c = normalize(c)
	c.ID = uuid.NewString()
	scope := rc.Scope.String()
	if err := a.claimEmail(ctx, scope, c.Email, c.ID); err != nil {
		return contact{}, err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return contact{}, err
	}
	if _, _, err := a.store.PutIfAbsent(ctx, contactKey(scope, c.ID), b); err != nil {
		return contact{}, err
	}
	return c, nil
}

// updateContact replaces the contact id of the scope.
func (a *app) updateContact(ctx context.Context, rc supervaizer.ResourceContext, id string, c contact) (contact, error) {
	scope := rc.Scope.String()
	var old contact
	if found, err := get(ctx, a.store, contactKey(scope, id), &old); err != nil {
		return contact{}, err
	} else if !found {
		return contact{}, supervaizer.ErrNotFound
	}
	c = normalize(c)
	c.ID = id
	if c.Email != old.Email {
		if err := a.claimEmail(ctx, scope, c.Email, id); err != nil {
			return contact{}, err
		}
	}
	if err := put(ctx, a.store, contactKey(scope, id), c); err != nil {
		return contact{}, err
	}
	if c.Email != old.Email {
		a.releaseEmail(ctx, scope, old.Email, id)
	}
	return c, nil
}

// importContacts applies an uploaded file whose rows all passed the SDK's
// checks: a row whose e-mail address is known updates that contact, any other
// row creates one.
func (a *app) importContacts(ctx context.Context, rc supervaizer.ResourceContext, batch supervaizer.ImportBatch[contact]) (supervaizer.ImportReport[contact], error) {
	scope := rc.Scope.String()
	var (
		rep              supervaizer.ImportReport[contact]
		created, updated int
	)
	for i, row := range batch.Items {
		row = normalize(row)
		id, known, err := a.contactByEmail(ctx, scope, row.Email)
		if err != nil {
			return rep, err
		}
		var c contact
		if known {
			c, err = a.updateContact(ctx, rc, id, row)
		} else {
			c, err = a.createContact(ctx, rc, row)
		}
		var re *supervaizer.ResourceError
		if errors.As(err, &re) {
			rep.Errors = append(rep.Errors, supervaizer.ImportRowError{Row: batch.Rows[i], Column: re.Field, Code: re.Code, Message: re.Message})
			continue
		}
		if err != nil {
			return rep, err
		}
		if known {
			updated++
		} else {
			created++
		}
		rep.Items = append(rep.Items, c)
	}
	rep.Summary = map[string]any{"created": created, "updated": updated}
	return rep, nil
}

// contactByEmail returns the id of the scope's contact with the address.
func (a *app) contactByEmail(ctx context.Context, scope, email string) (string, bool, error) {
	var id string
	if found, err := get(ctx, a.store, emailKey(scope, email), &id); err != nil || !found {
		return "", false, err
	}
	_, found, err := a.store.Get(ctx, contactKey(scope, id))
	return id, found, err
}

// claimEmail reserves the e-mail address of a workspace for the contact id.
// An index entry left by a write that did not complete (its contact does not
// exist) is taken over.
func (a *app) claimEmail(ctx context.Context, scope, email, id string) error {
	key := emailKey(scope, email)
	claim, err := json.Marshal(id)
	if err != nil {
		return err
	}
	for {
		existing, stored, err := a.store.PutIfAbsent(ctx, key, claim)
		if err != nil || stored {
			return err
		}
		var owner string
		if err := json.Unmarshal(existing, &owner); err != nil {
			return err
		}
		if owner == id {
			return nil
		}
		if _, found, err := a.store.Get(ctx, contactKey(scope, owner)); err != nil {
			return err
		} else if found {
			return &supervaizer.ResourceError{Code: codeDuplicateEmail, Field: "email",
				Message: "another contact of this workspace has this e-mail address", Status: 409}
		}
		if swapped, err := a.store.CompareAndSwap(ctx, key, existing, claim); err != nil || swapped {
			return err
		}
	}
}

// releaseEmail drops the index entry of an address the contact id no longer
// uses. A failure leaves a stale entry that claimEmail takes over later.
func (a *app) releaseEmail(ctx context.Context, scope, email, id string) {
	key := emailKey(scope, email)
	var owner string
	if found, err := get(ctx, a.store, key, &owner); err == nil && found && owner == id {
		if err := a.store.Delete(ctx, key); err != nil {
			a.logger.WarnContext(ctx, "release a contact e-mail index entry", "error", err)
		}
	}
}

// contactEmails returns the addresses the brief of a job is sent to: every
// contact of the job's workspace, sorted.
func (a *app) contactEmails(ctx context.Context, scope string) ([]string, error) {
	var out []string
	err := a.store.Scan(ctx, store.Prefix(keyRoot, "contacts", scope), func(_ string, v []byte) error {
		var c contact
		if err := json.Unmarshal(v, &c); err != nil {
			return err
		}
		out = append(out, c.Email)
		return nil
	})
	slices.Sort(out)
	return out, err
}
