package supervaizer

import (
	"bytes"
	"fmt"

	"github.com/supervaize/supervaizer-go/internal/jsonrpc"
)

// Dry runs leave no trace, and A2UI versions are pinned (spec item 79).
//
// A dry-run result is the result of an action the registration declares
// dry_run, or any result carrying a dry_run outcome. It publishes no effect,
// updates no task view and so counts in no health figure; one carrying
// job_state is invalid (-32603, the reason logged). A surface result whose
// a2ui_version differs from its agent's registration is invalid (-32603,
// both versions logged).

var keyDryRun = []byte(`"dry_run"`)

// declaresDryRun reports whether the registration of the agent slug declares
// the action id dry_run.
func (s *Server) declaresDryRun(slug, id string) bool {
	a := s.bySlug[slug]
	if a == nil || a.reg == nil {
		return false
	}
	d := a.reg.Capabilities.Action(id)
	return d != nil && d.DryRun
}

// dryRunProblem returns why res, the result of req, is an invalid dry-run
// result, or nil.
func (s *Server) dryRunProblem(req *ActionRequest, res *ActionResult) error {
	if res.JobState == nil || (res.DryRun == nil && !s.declaresDryRun(req.AgentSlug, req.Action)) {
		return nil
	}
	return fmt.Errorf("invalid result: a dry-run result carries job_state (action %q is a dry run: it leaves no job behind)", req.Action)
}

// isDryRun reports whether raw, the result of req as sent (fresh or
// replayed), is a dry-run result.
func (s *Server) isDryRun(req *ActionRequest, raw []byte) bool {
	if s.declaresDryRun(req.AgentSlug, req.Action) {
		return true
	}
	if !bytes.Contains(raw, keyDryRun) {
		return false // most results: no parse
	}
	v, ok := jsonrpc.Member(raw, "dry_run")
	return ok && !bytes.Equal(v, []byte("null"))
}

// surfaceVersionProblem returns why res, a surface result of the agent
// slug, breaks the agent's pinned a2ui_version, or nil. A result without
// a2ui_version pins nothing.
func (s *Server) surfaceVersionProblem(slug string, res *SurfaceResult) error {
	a := s.bySlug[slug]
	if a == nil || a.reg == nil || res.A2UIVersion == nil || *res.A2UIVersion == a.reg.Versions.A2UIVersion {
		return nil
	}
	return fmt.Errorf("invalid result: a2ui_version %q differs from the registration's a2ui_version %q", *res.A2UIVersion, a.reg.Versions.A2UIVersion)
}
