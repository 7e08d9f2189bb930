package validate

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// This file fills the request models (ActionRequest, SurfaceRequest) straight
// from the tape of a document the schema accepted, instead of decoding the
// bytes again with encoding/json (twice: unmarshalOpen reads each open object
// into a map first). It reproduces exactly what UnmarshalJSON produces, and
// gives up (the caller then uses UnmarshalJSON) on anything it does not
// handle: a key that differs from a declared key only in letter case, or a
// value of a type the schema should have refused. The differential tests
// (compiled_test.go, sameOutcome) compare both decoders over the corpus, its
// mutations and under fuzzing.

// requestDecoder decodes the values of one document.
type requestDecoder struct {
	t   *wire.Tape
	s   string // the document as one string: unescaped strings are substrings of it
	own []byte // the document's bytes: raw values are subslices of it
}

// newRequestDecoder reads t. Raw values (the input, extra keys) are views of
// a private copy of the document, or of t.Src itself when aliasSrc is set
// (the caller owns t.Src and never changes it: the body the dispatcher read).
// Strings are substrings of one string copy of the document: one allocation
// for all of them.
func newRequestDecoder(t *wire.Tape, aliasSrc bool) *requestDecoder {
	d := &requestDecoder{t: t, own: t.Src}
	if !aliasSrc {
		d.own = append([]byte(nil), t.Src...)
	}
	d.s = string(d.own)
	return d
}

// str stores the string at i in dst; null leaves dst unchanged, as with
// encoding/json. Any other kind fails.
func (d *requestDecoder) str(i int32, dst *string) bool {
	nd := d.t.Nodes[i]
	switch nd.Kind {
	case wire.Null:
		return true
	case wire.String:
		if !nd.Esc {
			*dst = d.s[nd.Start+1 : nd.End-1]
			return true
		}
		var v string // not dst: passing dst to json.Unmarshal would move every request to the heap
		if json.Unmarshal(d.own[nd.Start:nd.End], &v) != nil {
			return false
		}
		*dst = v
		return true
	default:
		return false
	}
}

// raw returns the bytes of the value at i, capped so that appending to them
// never writes over the rest of the document.
func (d *requestDecoder) raw(i int32) json.RawMessage {
	nd := d.t.Nodes[i]
	return d.own[nd.Start:nd.End:nd.End]
}

// key returns the key at m as a substring of the document.
func (d *requestDecoder) key(m int32) string {
	nd := d.t.Nodes[m]
	return d.s[nd.Start+1 : nd.End-1]
}

// extra records an undeclared key, or fails on a key that differs from a
// declared one only in letter case (unmarshalOpen refuses it).
func (d *requestDecoder) extra(ti foldedKeys, m int32, dst *contracts.Extra) bool {
	k := d.key(m)
	if _, folded := ti[contracts.FoldKey(k)]; folded {
		return false
	}
	if *dst == nil {
		*dst = contracts.Extra{}
	}
	(*dst)[k] = d.raw(m + 1)
	return true
}

// requestFields points at the fields of an ActionRequest or SurfaceRequest;
// action and idempotencyKey are nil for a SurfaceRequest.
type requestFields struct {
	info                                     foldedKeys
	requestID, missionID, agentSlug, surface *string
	action, idempotencyKey                   *string
	draftSessionID, jobID, caseID, stepID    *string
	actor                                    *contracts.Actor
	workspace                                *contracts.WorkspaceRef
	input                                    *json.RawMessage
	mission                                  **contracts.MissionContext
	auth                                     **contracts.VerifiedWorkspaceContext
	extra                                    *contracts.Extra
}

// foldedKeys holds the case-folded json keys of a struct's declared fields
// (contracts.FoldKey): the keys UnmarshalJSON refuses when they differ from a declared
// key only in letter case.
type foldedKeys map[string]struct{}

func foldedKeysOf(t reflect.Type) foldedKeys {
	ks := foldedKeys{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "-" && name != "" {
			ks[contracts.FoldKey(name)] = struct{}{}
		}
	}
	return ks
}

var (
	actionRequestInfo  = foldedKeysOf(reflect.TypeFor[contracts.ActionRequest]())
	surfaceRequestInfo = foldedKeysOf(reflect.TypeFor[contracts.SurfaceRequest]())
	actorInfo          = foldedKeysOf(reflect.TypeFor[contracts.Actor]())
	workspaceRefInfo   = foldedKeysOf(reflect.TypeFor[contracts.WorkspaceRef]())
	missionInfo        = foldedKeysOf(reflect.TypeFor[contracts.MissionContext]())
)

func actionRequestFields(r *contracts.ActionRequest) requestFields {
	return requestFields{
		info: actionRequestInfo, requestID: &r.RequestID, missionID: &r.MissionID, agentSlug: &r.AgentSlug,
		surface: &r.Surface, action: &r.Action, idempotencyKey: &r.IdempotencyKey,
		draftSessionID: &r.DraftSessionID, jobID: &r.JobID, caseID: &r.CaseID, stepID: &r.StepID,
		actor: &r.Actor, workspace: &r.Workspace, input: &r.Input, mission: &r.Mission,
		auth: &r.WorkspaceAuthorization, extra: &r.Extra,
	}
}

func surfaceRequestFields(r *contracts.SurfaceRequest) requestFields {
	return requestFields{
		info: surfaceRequestInfo, requestID: &r.RequestID, missionID: &r.MissionID, agentSlug: &r.AgentSlug,
		surface: &r.Surface, draftSessionID: &r.DraftSessionID, jobID: &r.JobID, caseID: &r.CaseID, stepID: &r.StepID,
		actor: &r.Actor, workspace: &r.Workspace, input: &r.Input, mission: &r.Mission,
		auth: &r.WorkspaceAuthorization, extra: &r.Extra,
	}
}

// request fills f from the object at obj, as UnmarshalJSON would.
func (d *requestDecoder) request(obj int32, f requestFields) bool {
	t := d.t
	end := t.Nodes[obj].Next
	for m := obj + 1; m < end; m = t.Nodes[m+1].Next {
		v := m + 1
		var ok bool
		switch d.key(m) {
		case "request_id":
			ok = d.str(v, f.requestID)
		case "mission_id":
			ok = d.str(v, f.missionID)
		case "agent_slug":
			ok = d.str(v, f.agentSlug)
		case "surface":
			ok = d.str(v, f.surface)
		case "draft_session_id":
			ok = d.str(v, f.draftSessionID)
		case "job_id":
			ok = d.str(v, f.jobID)
		case "case_id":
			ok = d.str(v, f.caseID)
		case "step_id":
			ok = d.str(v, f.stepID)
		case "actor":
			ok = d.actor(v, f.actor)
		case "workspace":
			ok = d.workspace(v, f.workspace)
		case "input":
			if ok = t.Nodes[v].Kind == wire.Object; ok {
				*f.input = d.raw(v)
			}
		case "mission":
			ok = d.mission(v, f.mission)
		case "workspace_authorization":
			ok = d.verified(v, f.auth)
		case "action":
			if f.action == nil {
				ok = d.extra(f.info, m, f.extra)
			} else {
				ok = d.str(v, f.action)
			}
		case "idempotency_key":
			if f.idempotencyKey == nil {
				ok = d.extra(f.info, m, f.extra)
			} else {
				ok = d.str(v, f.idempotencyKey)
			}
		default:
			ok = d.extra(f.info, m, f.extra)
		}
		if !ok {
			return false
		}
	}
	if *f.input == nil {
		*f.input = json.RawMessage("{}")
	}
	return true
}

func (d *requestDecoder) actor(i int32, dst *contracts.Actor) bool {
	t := d.t
	if t.Nodes[i].Kind != wire.Object {
		return false
	}
	for m := i + 1; m < t.Nodes[i].Next; m = t.Nodes[m+1].Next {
		var ok bool
		if d.key(m) == "user_id" {
			ok = d.str(m+1, &dst.UserID)
		} else {
			ok = d.extra(actorInfo, m, &dst.Extra)
		}
		if !ok {
			return false
		}
	}
	return true
}

func (d *requestDecoder) workspace(i int32, dst *contracts.WorkspaceRef) bool {
	t := d.t
	if t.Nodes[i].Kind != wire.Object {
		return false
	}
	for m := i + 1; m < t.Nodes[i].Next; m = t.Nodes[m+1].Next {
		var ok bool
		switch d.key(m) {
		case "id":
			ok = d.str(m+1, &dst.ID)
		case "slug":
			ok = d.str(m+1, &dst.Slug)
		default:
			ok = d.extra(workspaceRefInfo, m, &dst.Extra)
		}
		if !ok {
			return false
		}
	}
	return true
}

func (d *requestDecoder) mission(i int32, dst **contracts.MissionContext) bool {
	t := d.t
	switch t.Nodes[i].Kind {
	case wire.Null:
		*dst = nil
		return true
	case wire.Object:
	default:
		return false
	}
	mc := &contracts.MissionContext{}
	for m := i + 1; m < t.Nodes[i].Next; m = t.Nodes[m+1].Next {
		var ok bool
		switch d.key(m) {
		case "id":
			ok = d.str(m+1, &mc.ID)
		case "name":
			ok = d.str(m+1, &mc.Name)
		case "metadata":
			if ok = t.Nodes[m+1].Kind == wire.Object; ok {
				mc.Metadata = d.raw(m + 1)
			}
		default:
			ok = d.extra(missionInfo, m, &mc.Extra)
		}
		if !ok {
			return false
		}
	}
	if mc.Metadata == nil {
		mc.Metadata = json.RawMessage("{}")
	}
	*dst = mc
	return true
}

// verified decodes a client-supplied workspace_authorization with its own
// UnmarshalJSON: the dispatcher discards it, so it is rare and not worth a
// second decoder.
func (d *requestDecoder) verified(i int32, dst **contracts.VerifiedWorkspaceContext) bool {
	switch d.t.Nodes[i].Kind {
	case wire.Null:
		*dst = nil
		return true
	case wire.Object:
		vc := &contracts.VerifiedWorkspaceContext{}
		if contracts.Unmarshal(d.raw(i), vc) != nil {
			return false
		}
		*dst = vc
		return true
	default:
		return false
	}
}
