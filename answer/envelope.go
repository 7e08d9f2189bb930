package answer

import "errors"

// Status is what an answer declares of its phase: [Success] or [Fail].
type Status string

// The two statuses an answer may declare.
const (
	Success Status = "success"
	Fail    Status = "fail"
)

// Envelope is the base of every answer type: what each agent owes the code.
// Only Status is required; an agent may be terse, never silent.
type Envelope struct {
	Status            Status   `json:"status" sv:"enum=success|fail" ask:"\"success\" when you did what was asked, \"fail\" when you could not"`
	Summary           string   `json:"summary,omitempty" ask:"one sentence: what you did or found"`
	Artifacts         []string `json:"artifacts,omitempty" ask:"the paths of the files you wrote for the next agent"`
	NotesForNextAgent string   `json:"notes_for_next_agent,omitempty" ask:"what the next agent must know"`
}

func (e Envelope) envelope() Envelope { return e }

// Enveloped is satisfied by Envelope and by every struct type that embeds it:
// the types [Parse], [Contract] and the rest of the package work with.
type Enveloped interface {
	envelope() Envelope
}

// ErrFailed is wrapped by the error of a valid answer that declares status
// "fail"; the error's text ends with the answer's summary.
var ErrFailed = errors.New(`answer: the model declared status "fail"`)
