package resource

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/supervaize/supervaizer-go/contracts"
)

// call is the request context of one resource or dataset call, whatever the
// transport.
type call struct {
	ws                               *contracts.VerifiedWorkspaceContext
	agentSlug, requestID             string
	missionID, jobID, caseID, stepID string
	mission                          *contracts.MissionContext
}

// callFromRequest reads the context of an action request. Its
// WorkspaceAuthorization is the verified context the dispatcher injected.
func callFromRequest(req *contracts.ActionRequest) call {
	return call{
		ws: req.WorkspaceAuthorization, agentSlug: req.AgentSlug, requestID: req.RequestID,
		missionID: req.MissionID, jobID: req.JobID, caseID: req.CaseID, stepID: req.StepID,
		mission: req.Mission,
	}
}

// contextKeys are the requires_context keys the SDK can check, with the test
// of their presence. Keys name context Studio sends; dotted and snake forms
// are synonyms.
var contextKeys = map[string]func(rc *Context) bool{
	"workspace.id":        func(rc *Context) bool { return rc.Workspace.WorkspaceID != "" },
	"workspace_id":        func(rc *Context) bool { return rc.Workspace.WorkspaceID != "" },
	"workspace.slug":      func(rc *Context) bool { return nonEmpty(rc.Workspace.WorkspaceSlug) },
	"workspace_slug":      func(rc *Context) bool { return nonEmpty(rc.Workspace.WorkspaceSlug) },
	"agent_workspace_ref": func(rc *Context) bool { return nonEmpty(rc.Workspace.AgentWorkspaceRef) },
	"mission.id":          func(rc *Context) bool { return rc.MissionID != "" },
	"mission_id":          func(rc *Context) bool { return rc.MissionID != "" },
	"mission.metadata":    func(rc *Context) bool { return rc.Mission != nil },
	"job.id":              func(rc *Context) bool { return rc.JobID != "" },
	"job_id":              func(rc *Context) bool { return rc.JobID != "" },
	"case.id":             func(rc *Context) bool { return rc.CaseID != "" },
	"case_id":             func(rc *Context) bool { return rc.CaseID != "" },
	"step.id":             func(rc *Context) bool { return rc.StepID != "" },
	"step_id":             func(rc *Context) bool { return rc.StepID != "" },
}

func nonEmpty(s *string) bool { return s != nil && *s != "" }

// checkRequiredContext refuses requires_context keys the SDK cannot check:
// a key it cannot see would either never or always be "present".
func checkRequiredContext(keys []string) error {
	for _, k := range keys {
		if _, ok := contextKeys[k]; !ok {
			known := slices.Sorted(maps.Keys(contextKeys))
			return fmt.Errorf("requires_context key %q is not one the SDK can check (known keys: %s)", k, strings.Join(known, ", "))
		}
	}
	return nil
}

// resolveContext builds the Context of a call: the scope key from the
// verified workspace context and the declared scope, then the checks of the
// scope and of requires_context. A missing piece is an *opError naming it.
func resolveContext(id, op, level string, requires []string, c call) (Context, *opError) {
	rc := Context{
		Resource: id, Operation: op, Workspace: c.ws, AgentSlug: c.agentSlug, RequestID: c.requestID,
		MissionID: c.missionID, JobID: c.jobID, CaseID: c.caseID, StepID: c.stepID, Mission: c.mission,
	}
	if c.ws == nil {
		return rc, missingContext("workspace_authorization", "no verified workspace context")
	}
	if c.ws.WorkspaceID == "" {
		return rc, missingContext("workspace.id", "the verified workspace context has no workspace id")
	}
	if level == "" {
		level = contracts.ScopeWorkspace
	}
	rc.Scope = ScopeKey{Level: level, Workspace: c.ws.WorkspaceID}
	if nonEmpty(c.ws.AgentWorkspaceRef) {
		rc.Scope.Workspace, rc.Scope.ByRef = *c.ws.AgentWorkspaceRef, true
	}
	switch level {
	case contracts.ScopeMission:
		if c.missionID == "" {
			return rc, missingContext("mission_id", fmt.Sprintf("%q is mission-scoped", id))
		}
		rc.Scope.Mission = c.missionID
	case contracts.ScopeJob:
		if c.jobID == "" {
			return rc, missingContext("job_id", fmt.Sprintf("%q is job-scoped", id))
		}
		rc.Scope.Job = c.jobID
	}
	for _, k := range requires {
		if present, ok := contextKeys[k]; !ok || !present(&rc) {
			return rc, missingContext(k, fmt.Sprintf("%q requires it (requires_context)", id))
		}
	}
	return rc, nil
}

func missingContext(key, why string) *opError {
	msg := "missing context: " + key + " (" + why + ")"
	return &opError{Status: http.StatusBadRequest, Detail: msg,
		Errs: []contracts.ResultError{{Code: contracts.ErrorMissingContext, Message: msg, Field: key}}}
}

// asOpError maps a handler error to a refusal: an *opError as is,
// [ErrNotFound] to not_found, an *[RefusalError] to its code. Any other error is a
// failure (false).
func asOpError(err error) (*opError, bool) {
	var oe *opError
	if errors.As(err, &oe) {
		return oe, true
	}
	if errors.Is(err, ErrNotFound) {
		return &opError{Status: http.StatusNotFound, Detail: "Item not found",
			Errs: []contracts.ResultError{{Code: contracts.ErrorNotFound, Message: "item not found"}}}, true
	}
	var re *RefusalError
	if errors.As(err, &re) {
		status := re.Status
		if status < 400 || status > 599 {
			status = http.StatusUnprocessableEntity
		}
		code := re.Code
		if strings.TrimSpace(code) == "" {
			code = contracts.ErrorInvalidInput
		}
		return &opError{Status: status, Detail: re.Message,
			Errs: []contracts.ResultError{{Code: code, Message: re.Message, Field: re.Field}}}, true
	}
	return nil, false
}
