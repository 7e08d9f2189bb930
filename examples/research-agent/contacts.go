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
	"github.com/supervaize/supervaizer-go/resource"
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

// errDuplicateEmail is the business error of a create or update that loses
// the address of a workspace to another contact.
func errDuplicateEmail() error {
	return &resource.RefusalError{Code: codeDuplicateEmail, Field: "email",
		Message: "another contact of this workspace has this e-mail address", Status: 409}
}

// E-mail uniqueness. The address is unique per workspace even under concurrent
// writes and after a crash, with the store's two atomic operations only:
//
//   - The index entry emailKey(scope, email) holds an [emailClaim]: the id of
//     the contact that may use the address and a token that changes with every
//     claim. A writer claims the address (PutIfAbsent, or CompareAndSwap of the
//     exact entry it read) before it writes the contact.
//   - The stored contact ([contactRecord]) is the commit point: a create writes
//     it with PutIfAbsent, an update with CompareAndSwap of the bytes it read
//     before claiming. An entry whose contact does not hold the address is
//     taken over only after fencing that contact: a void record where it is
//     missing (so its pending create can never be written) or a new revision
//     where it has another address (so its pending update must start again).
//
// So a writer that lost its claim always fails its write, and an index entry
// left by a crash, a failed write or an address an update gave up never blocks
// the address: the next claim fences its contact and takes it over. Entries
// are not deleted (deleting one could drop a claim made meanwhile); a stale one
// costs the next claim of its address one fencing write.

// contactRecord is a stored contact: the item, the revision that fences
// concurrent updates, and Void for the record that fences a create which lost
// its address (it is no contact).
type contactRecord struct {
	contact
	Rev  uint64 `json:"rev,omitempty"`
	Void bool   `json:"void,omitempty"`
}

// emailClaim is an entry of the e-mail index.
type emailClaim struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

func contactKey(scope, id string) string { return store.Key(keyRoot, "contacts", scope, id) }

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
		AcceptedFormats: []string{"csv"},
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
	supervaizer.RegisterResource(a.srv, resourceContacts, resource.Handlers[contact]{
		List:           a.listContacts,
		Create:         a.createContact,
		Update:         a.updateContact,
		Import:         a.importContacts,
		ImportDocument: contactImportDocument(),
	})
	a.srv.HandleSurface(surfaceContactImport, func(ctx context.Context, _ *supervaizer.SurfaceRequest) (*supervaizer.SurfaceResult, error) {
		return supervaizer.NewSurfaceResult(ctx, surfaceContactImport, contactImportDocument())
	})
}

// listContacts returns a page of the scope's contacts, narrowed by q.Search.
func (a *app) listContacts(ctx context.Context, rc resource.Context, q resource.ListQuery) ([]contact, error) {
	search := strings.ToLower(strings.TrimSpace(q.Search))
	var out []contact
	skip := q.Offset
	err := a.store.Scan(ctx, store.Prefix(keyRoot, "contacts", rc.Scope.String()), func(_ string, v []byte) error {
		var rec contactRecord
		if err := json.Unmarshal(v, &rec); err != nil || rec.Void {
			return err
		}
		c := rec.contact
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
func (a *app) createContact(ctx context.Context, rc resource.Context, c contact) (contact, error) {
	c = normalize(c)
	c.ID = uuid.NewString()
	scope := rc.Scope.String()
	b, err := json.Marshal(contactRecord{contact: c})
	if err != nil {
		return contact{}, err
	}
	if err := a.claimEmail(ctx, scope, c.Email, c.ID); err != nil {
		return contact{}, err
	}
	if _, stored, err := a.store.PutIfAbsent(ctx, contactKey(scope, c.ID), b); err != nil {
		return contact{}, err
	} else if !stored {
		// Another create took the address over and voided this id.
		return contact{}, errDuplicateEmail()
	}
	return c, nil
}

// updateContact replaces the contact id of the scope. It starts again when
// another writer changed the stored contact since it was read.
func (a *app) updateContact(ctx context.Context, rc resource.Context, id string, c contact) (contact, error) {
	scope := rc.Scope.String()
	key := contactKey(scope, id)
	c = normalize(c)
	c.ID = id
	for {
		raw, found, err := a.store.Get(ctx, key)
		if err != nil {
			return contact{}, err
		}
		var old contactRecord
		if found {
			if err := json.Unmarshal(raw, &old); err != nil {
				return contact{}, err
			}
		}
		if !found || old.Void {
			return contact{}, resource.ErrNotFound
		}
		if c.Email != old.Email {
			if err := a.claimEmail(ctx, scope, c.Email, id); err != nil {
				return contact{}, err
			}
		}
		b, err := json.Marshal(contactRecord{contact: c, Rev: old.Rev + 1})
		if err != nil {
			return contact{}, err
		}
		if swapped, err := a.store.CompareAndSwap(ctx, key, raw, b); err != nil || swapped {
			if err != nil {
				return contact{}, err
			}
			return c, nil
		}
	}
}

// importContacts applies an uploaded file whose rows all passed the SDK's
// checks: a row whose e-mail address is known updates that contact, any other
// row creates one.
func (a *app) importContacts(ctx context.Context, rc resource.Context, batch resource.ImportBatch[contact]) (resource.ImportReport[contact], error) {
	scope := rc.Scope.String()
	var (
		rep              resource.ImportReport[contact]
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
		var re *resource.RefusalError
		if errors.As(err, &re) {
			rep.Errors = append(rep.Errors, resource.ImportRowError{Row: batch.Rows[i], Column: re.Field, Code: re.Code, Message: re.Message})
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
	var claim emailClaim
	if found, err := get(ctx, a.store, emailKey(scope, email), &claim); err != nil || !found {
		return "", false, err
	}
	var rec contactRecord
	found, err := get(ctx, a.store, contactKey(scope, claim.ID), &rec)
	if err != nil || !found || rec.Void || rec.Email != email {
		return "", false, err
	}
	return claim.ID, true, nil
}

// claimEmail reserves the e-mail address of a workspace for the contact id,
// taking over an entry whose contact does not hold the address (see "E-mail
// uniqueness" above).
func (a *app) claimEmail(ctx context.Context, scope, email, id string) error {
	key := emailKey(scope, email)
	claim, err := json.Marshal(emailClaim{ID: id, Token: uuid.NewString()})
	if err != nil {
		return err
	}
	for {
		existing, stored, err := a.store.PutIfAbsent(ctx, key, claim)
		if err != nil || stored {
			return err
		}
		var owner emailClaim
		if err := json.Unmarshal(existing, &owner); err != nil {
			return err
		}
		if owner.ID != id {
			held, err := a.fenceContact(ctx, scope, owner.ID, email)
			if err != nil {
				return err
			}
			if held {
				return errDuplicateEmail()
			}
		}
		// The entry is ours from an earlier write, or its contact is fenced:
		// take it over unless another claim replaced it meanwhile.
		if swapped, err := a.store.CompareAndSwap(ctx, key, existing, claim); err != nil || swapped {
			return err
		}
	}
}

// fenceContact reports whether the contact id holds the address email. When
// it does not, it changes the stored contact so that a write of it prepared
// earlier fails: it stores a void record where the contact does not exist and
// a new revision where it does.
func (a *app) fenceContact(ctx context.Context, scope, id, email string) (bool, error) {
	key := contactKey(scope, id)
	for {
		raw, found, err := a.store.Get(ctx, key)
		if err != nil {
			return false, err
		}
		if !found {
			void, err := json.Marshal(contactRecord{contact: contact{ID: id}, Void: true})
			if err != nil {
				return false, err
			}
			existing, stored, err := a.store.PutIfAbsent(ctx, key, void)
			if err != nil || stored {
				return false, err
			}
			raw = existing
		}
		var rec contactRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return false, err
		}
		switch {
		case rec.Void:
			return false, nil
		case rec.Email == email:
			return true, nil
		}
		rec.Rev++
		b, err := json.Marshal(rec)
		if err != nil {
			return false, err
		}
		if swapped, err := a.store.CompareAndSwap(ctx, key, raw, b); err != nil || swapped {
			return false, err
		}
	}
}

// contactEmails returns the addresses the brief of a job is sent to: every
// contact of the job's workspace, sorted.
func (a *app) contactEmails(ctx context.Context, scope string) ([]string, error) {
	var out []string
	err := a.store.Scan(ctx, store.Prefix(keyRoot, "contacts", scope), func(_ string, v []byte) error {
		var rec contactRecord
		if err := json.Unmarshal(v, &rec); err != nil || rec.Void {
			return err
		}
		out = append(out, rec.Email)
		return nil
	})
	slices.Sort(out)
	return out, err
}
