package preview

import (
	"encoding/json"
	"net/http"
)

// jobView is the last job_state the controller returned for a job started or
// synced from the preview.
type jobView struct {
	Agent string
	Job   struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Display *struct {
			EntityLabel        string `json:"entity_label"`
			StateLabel         string `json:"state_label"`
			PrimaryActionLabel string `json:"primary_action_label"`
		} `json:"display"`
	} `json:"job"`
	Cases []struct {
		ID     string `json:"id"`
		Lane   string `json:"lane"`
		Title  string `json:"title"`
		Status string `json:"status"`
		Steps  []struct {
			ID       string `json:"id"`
			Title    string `json:"title"`
			Status   string `json:"status"`
			Activity string `json:"activity"`
			Awaiting *struct {
				Reason  string  `json:"reason"`
				Surface string  `json:"surface"`
				Action  string  `json:"action"`
				Fields  []field `json:"fields"`
			} `json:"awaiting"`
			Outputs []json.RawMessage `json:"outputs"`
		} `json:"steps"`
	} `json:"cases"`
	Raw json.RawMessage `json:"-"`
}

// recordJob keeps the job_state of an action result, and remembers a job
// its job.started effect names even without a job_state (job.sync then
// fetches it).
func (h *Handler) recordJob(agent string, result json.RawMessage) {
	var res actionResult
	if json.Unmarshal(result, &res) != nil {
		return
	}
	if len(res.JobState) > 0 && string(res.JobState) != "null" {
		j := &jobView{Agent: agent}
		if json.Unmarshal(res.JobState, j) == nil && j.Job.ID != "" {
			j.Raw = res.JobState
			h.keepJob(j, true)
		}
	}
	for _, e := range res.Effects {
		var eff struct {
			Type  string `json:"type"`
			JobID string `json:"job_id"`
			Data  struct {
				Status string `json:"status"`
			} `json:"data"`
		}
		if json.Unmarshal(e, &eff) == nil && eff.Type == "job.started" && eff.JobID != "" {
			j := &jobView{Agent: agent}
			j.Job.ID, j.Job.Status = eff.JobID, eff.Data.Status
			h.keepJob(j, false)
		}
	}
}

// keepJob stores j; replace says whether it replaces a known job.
func (h *Handler) keepJob(j *jobView, replace bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.jobs[j.Job.ID]; ok {
		if replace {
			h.jobs[j.Job.ID] = j
		}
		return
	}
	if len(h.order) >= maxJobs {
		delete(h.jobs, h.order[0])
		h.order = h.order[1:]
	}
	h.order = append(h.order, j.Job.ID)
	h.jobs[j.Job.ID] = j
}

// laneGroup is the cases of one lane, in the registration's lane order.
type laneGroup struct {
	ID    string
	Label string
	Cases []int // indexes into jobView.Cases
}

// Lanes groups the job's cases by lane: the declared lanes first, then any
// other lane a case names.
func (h *Handler) lanes(j *jobView) []laneGroup {
	var groups []laneGroup
	index := map[string]int{}
	if a := h.bySlug[j.Agent]; a != nil {
		for _, l := range a.reg.Capabilities.CaseLanes {
			index[l.ID] = len(groups)
			groups = append(groups, laneGroup{ID: l.ID, Label: l.Label})
		}
	}
	for i, c := range j.Cases {
		g, ok := index[c.Lane]
		if !ok {
			g = len(groups)
			index[c.Lane] = g
			groups = append(groups, laneGroup{ID: c.Lane, Label: c.Lane})
		}
		groups[g].Cases = append(groups[g].Cases, i)
	}
	return groups
}

// jobEntry is one job of the jobs page.
type jobEntry struct {
	*jobView
	Lanes         []laneGroup
	DetailSurface string // the agent's step-detail surface, if declared
}

func (h *Handler) serveJobs(w http.ResponseWriter, _ *http.Request) {
	h.mu.Lock()
	var entries []jobEntry
	for i := len(h.order) - 1; i >= 0; i-- { // newest first
		j := h.jobs[h.order[i]]
		e := jobEntry{jobView: j, Lanes: h.lanes(j)}
		if a := h.bySlug[j.Agent]; a != nil {
			if _, ok := a.reg.surface("case.step.detail"); ok {
				e.DetailSurface = "case.step.detail"
			}
		}
		entries = append(entries, e)
	}
	h.mu.Unlock()
	h.render(w, "jobs", page{Title: "Jobs", Agents: h.agents, Body: entries})
}
