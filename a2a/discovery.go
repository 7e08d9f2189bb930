package a2a

import (
	"encoding/json"
	"time"
)

// SchemaVersion is the schema_version of the discovery documents.
const SchemaVersion = "a2a_2023_v1"

// Health statuses.
const (
	// StatusOperational is the controller-level status of [Health].
	StatusOperational = "operational"
	// StatusAvailable means the agent has no jobs, or jobs that are neither
	// mostly failed nor in progress.
	StatusAvailable = "available"
	// StatusUnavailable means every tracked job failed.
	StatusUnavailable = "unavailable"
	// StatusDegraded means more than half of the tracked jobs failed.
	StatusDegraded = "degraded"
	// StatusBusy means at least one job is in progress (and at most half failed).
	StatusBusy = "busy"
)

// TimestampLayout is the time layout of [Health.Timestamp]: UTC with
// microseconds and a numeric offset, e.g. 2026-10-11T08:00:00.000000+00:00.
const TimestampLayout = "2006-01-02T15:04:05.000000-07:00"

// AgentsList is the discovery document served at [AgentsListPath].
type AgentsList struct {
	// SchemaVersion is [SchemaVersion].
	SchemaVersion string `json:"schema_version"`
	// Agents lists every agent of the controller.
	Agents []AgentSummary `json:"agents"`
}

// AgentSummary is one entry of [AgentsList].
type AgentSummary struct {
	// Name is the agent's name.
	Name string `json:"name"`
	// Description is the agent's description.
	Description string `json:"description"`
	// Developer is the agent's developer, else its author, else [DefaultDeveloper].
	Developer string `json:"developer"`
	// Version is the agent's version.
	Version string `json:"version"`
	// AgentCardURL is the absolute URL of the versioned card route ([VersionedCardPath]).
	AgentCardURL string `json:"agent_card_url"`
}

// NewAgentSummary builds the discovery entry of the agent described by in,
// with the same validation and normalization as [NewAgentCard] for Name,
// Description, Version, Slug, Developer and BaseURL; the other fields of in
// are ignored.
func NewAgentSummary(in CardInput) (AgentSummary, error) {
	id, err := checkIdentity(in)
	if err != nil {
		return AgentSummary{}, err
	}
	if err := checkText("description", in.Description); err != nil {
		return AgentSummary{}, err
	}
	return AgentSummary{
		Name:         in.Name,
		Description:  in.Description,
		Developer:    id.developer,
		Version:      in.Version,
		AgentCardURL: id.base + VersionedCardPath(id.version, id.slug),
	}, nil
}

// NewAgentsList returns the discovery list of the given agents, in order.
func NewAgentsList(agents ...AgentSummary) *AgentsList {
	return &AgentsList{SchemaVersion: SchemaVersion, Agents: append([]AgentSummary{}, agents...)}
}

// MarshalJSON encodes the list; nil Agents is encoded as [].
func (l AgentsList) MarshalJSON() ([]byte, error) {
	type wire AgentsList
	w := wire(l)
	w.Agents = orEmpty(w.Agents)
	return json.Marshal(w)
}

// Health is the document served at [HealthPath].
type Health struct {
	// SchemaVersion is [SchemaVersion].
	SchemaVersion string `json:"schema_version"`
	// Status is [StatusOperational].
	Status string `json:"status"`
	// Timestamp is the time of the report in [TimestampLayout].
	Timestamp string `json:"timestamp"`
	// Agents maps each agent's legacy id to its health.
	Agents map[string]AgentHealth `json:"agents"`
}

// AgentHealth is the health of one agent.
type AgentHealth struct {
	// AgentID is the legacy agent id.
	AgentID string `json:"agent_id"`
	// AgentServerID is the Studio agent id; "" (not linked) is encoded as null.
	AgentServerID string `json:"agent_server_id"`
	// Name is the agent's name.
	Name string `json:"name"`
	// Status is one of the agent statuses; see [AgentStatus].
	Status string `json:"status"`
	// Version is the agent's version.
	Version string `json:"version"`
	// Statistics are the job counters the status derives from.
	Statistics JobStatistics `json:"statistics"`
}

// MarshalJSON encodes the agent health, with agent_server_id null when unset.
func (h AgentHealth) MarshalJSON() ([]byte, error) {
	var serverID *string
	if h.AgentServerID != "" {
		serverID = &h.AgentServerID
	}
	return json.Marshal(struct {
		AgentID       string        `json:"agent_id"`
		AgentServerID *string       `json:"agent_server_id"`
		Name          string        `json:"name"`
		Status        string        `json:"status"`
		Version       string        `json:"version"`
		Statistics    JobStatistics `json:"statistics"`
	}{h.AgentID, serverID, h.Name, h.Status, h.Version, h.Statistics})
}

// JobStatistics are the job counters of one agent.
type JobStatistics struct {
	// TotalJobs counts every tracked job.
	TotalJobs int `json:"total_jobs"`
	// CompletedJobs counts completed jobs.
	CompletedJobs int `json:"completed_jobs"`
	// FailedJobs counts failed jobs.
	FailedJobs int `json:"failed_jobs"`
	// InProgressJobs counts jobs in progress.
	InProgressJobs int `json:"in_progress_jobs"`
	// SuccessRate is a percentage; see [SuccessRate].
	SuccessRate float64 `json:"success_rate"`
}

// NewJobStatistics returns the statistics of the given job counts, with the
// success rate computed by [SuccessRate].
func NewJobStatistics(total, completed, failed, inProgress int) JobStatistics {
	return JobStatistics{
		TotalJobs:      total,
		CompletedJobs:  completed,
		FailedJobs:     failed,
		InProgressJobs: inProgress,
		SuccessRate:    SuccessRate(total, completed),
	}
}

// AgentStatus returns the agent status that s implies; see [AgentStatus].
func (s JobStatistics) AgentStatus() string {
	return AgentStatus(s.TotalJobs, s.CompletedJobs, s.FailedJobs, s.InProgressJobs)
}

// SuccessRate returns completed / total × 100, or 100 when total is not
// positive (no jobs).
//
// It is a float64 computed in the spec's order (divide, then multiply), so
// 2 of 3 gives 66.66666666666666, as Python's 2 / 3 * 100 does. A whole rate,
// such as the no-jobs 100, encodes as a JSON integer (100), as in the spec's
// example.
func SuccessRate(total, completed int) float64 {
	if total <= 0 {
		return 100
	}
	return float64(completed) / float64(total) * 100
}

// AgentStatus applies the status rule of the controller spec, in
// order: no jobs (total not positive) → [StatusAvailable]; all failed →
// [StatusUnavailable]; more than half failed → [StatusDegraded]; any in
// progress → [StatusBusy]; else [StatusAvailable]. completed does not affect
// the status; it is accepted so that the four counters travel together.
func AgentStatus(total, completed, failed, inProgress int) string {
	switch {
	case total <= 0:
		return StatusAvailable
	case failed >= total:
		return StatusUnavailable
	case failed > total/2: // integer division: failed > total/2 ⇔ 2×failed > total
		return StatusDegraded
	case inProgress > 0:
		return StatusBusy
	default:
		return StatusAvailable
	}
}

// NewHealth returns the health document at time now (converted to UTC), with
// the given agents keyed by their AgentID. A later agent with the same
// AgentID replaces an earlier one.
func NewHealth(now time.Time, agents ...AgentHealth) *Health {
	h := &Health{
		SchemaVersion: SchemaVersion,
		Status:        StatusOperational,
		Timestamp:     now.UTC().Format(TimestampLayout),
		Agents:        make(map[string]AgentHealth, len(agents)),
	}
	for _, a := range agents {
		h.Agents[a.AgentID] = a
	}
	return h
}

// MarshalJSON encodes the document; nil Agents is encoded as {}.
func (h Health) MarshalJSON() ([]byte, error) {
	type wire Health
	w := wire(h)
	if w.Agents == nil {
		w.Agents = map[string]AgentHealth{}
	}
	return json.Marshal(w)
}
