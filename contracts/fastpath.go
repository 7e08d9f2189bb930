package contracts

import (
	"encoding/json"
	"reflect"
	"unsafe"

	"github.com/supervaize/supervaizer-go/internal/fold"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// This file fills the request models (ActionRequest, SurfaceRequest) straight
// from the tape of a document the schema accepted, instead of decoding the
// bytes again with encoding/json (twice: unmarshalOpen reads each open object
// into a map first). It reproduces exactly what UnmarshalJSON produces, and
// gives up (the caller then uses UnmarshalJSON) on anything it does not
// handle: a key that differs from a declared key only in letter case, or a
// value of a type the schema should have refused. The differential tests
// (fastpath_test.go) compare both decoders over the corpus and under fuzzing.

// requestDecoder decodes the values of one document.
type requestDecoder struct {
	t   *wire.Tape
	s   string // the document as one string: unescaped strings are substrings of it
	own []byte // a private copy of the document: raw values are subslices of it
}

// newRequestDecoder reads t. Raw values (the input, extra keys) and strings
// are views of a private copy of the document, or of t.Src itself when
// aliasSrc is set (the caller owns t.Src and never changes it: the body the
// dispatcher read, so that the request is decoded without copying it).
func newRequestDecoder(t *wire.Tape, aliasSrc bool) *requestDecoder {
	d := &requestDecoder{t: t, own: t.Src}
	if !aliasSrc {
		d.own = append([]byte(nil), t.Src...)
	}
	d.s = unsafe.String(unsafe.SliceData(d.own), len(d.own)) // d.own never changes
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
func (d *requestDecoder) extra(ti *typeInfo, m int32, dst *Extra) bool {
	k := d.key(m)
	if _, folded := ti.folded[fold.Key(k)]; folded {
		return false
	}
	if *dst == nil {
		*dst = Extra{}
	}
	(*dst)[k] = d.raw(m + 1)
	return true
}

// requestFields points at the fields of an ActionRequest or SurfaceRequest;
// action and idempotencyKey are nil for a SurfaceRequest.
type requestFields struct {
	info                                     *typeInfo
	requestID, missionID, agentSlug, surface *string
	action, idempotencyKey                   *string
	draftSessionID, jobID, caseID, stepID    *string
	actor                                    *Actor
	workspace                                *WorkspaceRef
	input                                    *json.RawMessage
	mission                                  **MissionContext
	auth                                     **VerifiedWorkspaceContext
	extra                                    *Extra
}

var (
	actionRequestInfo  = infoOf(reflect.TypeFor[ActionRequest]())
	surfaceRequestInfo = infoOf(reflect.TypeFor[SurfaceRequest]())
	actorInfo          = infoOf(reflect.TypeFor[Actor]())
	workspaceRefInfo   = infoOf(reflect.TypeFor[WorkspaceRef]())
	missionInfo        = infoOf(reflect.TypeFor[MissionContext]())
)

func (r *ActionRequest) fields() requestFields {
	return requestFields{
		info: actionRequestInfo, requestID: &r.RequestID, missionID: &r.MissionID, agentSlug: &r.AgentSlug,
		surface: &r.Surface, action: &r.Action, idempotencyKey: &r.IdempotencyKey,
		draftSessionID: &r.DraftSessionID, jobID: &r.JobID, caseID: &r.CaseID, stepID: &r.StepID,
		actor: &r.Actor, workspace: &r.Workspace, input: &r.Input, mission: &r.Mission,
		auth: &r.WorkspaceAuthorization, extra: &r.Extra,
	}
}

func (r *SurfaceRequest) fields() requestFields {
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

func (d *requestDecoder) actor(i int32, dst *Actor) bool {
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

func (d *requestDecoder) workspace(i int32, dst *WorkspaceRef) bool {
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

func (d *requestDecoder) mission(i int32, dst **MissionContext) bool {
	t := d.t
	switch t.Nodes[i].Kind {
	case wire.Null:
		*dst = nil
		return true
	case wire.Object:
	default:
		return false
	}
	mc := &MissionContext{}
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
func (d *requestDecoder) verified(i int32, dst **VerifiedWorkspaceContext) bool {
	switch d.t.Nodes[i].Kind {
	case wire.Null:
		*dst = nil
		return true
	case wire.Object:
		vc := &VerifiedWorkspaceContext{}
		if json.Unmarshal(d.raw(i), vc) != nil {
			return false
		}
		*dst = vc
		return true
	default:
		return false
	}
}

// fastValid reports whether the compiled validator is sure that raw is a
// valid document of m. false means "ask the reference validator".
func (v *Validator) fastValid(m Model, raw []byte) bool {
	if v.fast[m] == nil {
		return false
	}
	t := wire.Get()
	defer wire.Put(t)
	return t.Parse(raw) && v.fastValidTape(m, t)
}

// fastValidTape is fastValid on t, the tape of the document.
func (v *Validator) fastValidTape(m Model, t *wire.Tape) bool {
	fs := v.fast[m]
	if fs == nil || !t.Plain() {
		return false
	}
	valid, sure := fs.check(t)
	return valid && sure
}

// decodeFast validates raw with the compiled validator and decodes it into
// dst, a pointer to the Go type of m, from the tape when m is a request model.
// dst is only written when err is nil. handled is false when the fast path cannot
// decide; the caller then takes the reference path (which also produces the
// problems of an invalid document).
func (v *Validator) decodeFast(m Model, raw []byte, dst any) (handled bool, err error) {
	if v.fast[m] == nil {
		return false, nil
	}
	t := wire.Get()
	defer wire.Put(t)
	if !t.Parse(raw) || !t.Plain() {
		return false, nil
	}
	return v.decodeTape(m, t, 0, false, dst)
}

// DecodeAt is [Validator.Decode] of the value at node of t, a document the
// SDK's dispatcher parsed once (package internal/wire): the value is
// validated and decoded from the tape, without parsing its bytes again. The
// decoded value's strings and raw fields (such as ActionRequest.Input) alias
// t.Src, which the caller must own and never change.
func (v *Validator) DecodeAt(m Model, t *wire.Tape, node int32, dst any) error {
	if err := v.checkDst(m, dst); err != nil {
		return err
	}
	if v.fast[m] != nil && t.Plain() {
		if handled, err := v.decodeTape(m, t, node, true, dst); handled {
			return err
		}
	}
	val, err := v.decodeReference(m, t.Raw(node))
	if err != nil {
		return err
	}
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(val).Elem())
	return nil
}

// decodeTape is decodeFast on the plain tape t, at node.
func (v *Validator) decodeTape(m Model, t *wire.Tape, node int32, aliasSrc bool, dst any) (handled bool, err error) {
	if valid, sure := v.fast[m].checkAt(t, node); !valid || !sure {
		return false, nil
	}
	// The schema passed: only decoding and the Go rules remain.
	c := checks{v: v}
	switch dst := dst.(type) {
	case *ActionRequest:
		var r ActionRequest
		if t.Nodes[node].Kind == wire.Object && newRequestDecoder(t, aliasSrc).request(node, r.fields()) {
			if r.check(&c, path{}); len(c.problems) > 0 {
				return true, &ValidationError{Model: m, Problems: c.problems}
			}
			*dst = r
			return true, nil
		}
	case *SurfaceRequest:
		var r SurfaceRequest
		if t.Nodes[node].Kind == wire.Object && newRequestDecoder(t, aliasSrc).request(node, r.fields()) {
			if r.check(&c, path{}); len(c.problems) > 0 {
				return true, &ValidationError{Model: m, Problems: c.problems}
			}
			*dst = r
			return true, nil
		}
	}
	val, err := v.decodeChecked(m, t.Raw(node))
	if err != nil {
		return true, err
	}
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(val).Elem())
	return true, nil
}
