package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/supervaize/supervaizer-go/a2atask"
	"github.com/supervaize/supervaizer-go/errcode"
)

// decodeResponse reads a JSON-RPC 2.0 response to the request with the
// given id: the result, or an [*Error] carrying only the error's code (its
// message and data are not even decoded). Anything else wraps
// [ErrInvalidAnswer].
func decodeResponse(body []byte, id int64) (json.RawMessage, error) {
	var w struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("%w: not a JSON-RPC response", ErrInvalidAnswer)
	}
	if w.JSONRPC != "2.0" {
		return nil, fmt.Errorf("%w: not JSON-RPC 2.0", ErrInvalidAnswer)
	}
	gotID := string(bytes.TrimSpace(w.ID))
	hasErr, hasResult := present(w.Error), present(w.Result)
	switch {
	case hasErr && hasResult:
		return nil, fmt.Errorf("%w: both a result and an error", ErrInvalidAnswer)
	case hasErr:
		if gotID != strconv.FormatInt(id, 10) && gotID != "null" && gotID != "" {
			return nil, fmt.Errorf("%w: the id is not the request's", ErrInvalidAnswer)
		}
		var e struct {
			Code json.Number `json:"code"`
		}
		if err := json.Unmarshal(w.Error, &e); err != nil {
			return nil, fmt.Errorf("%w: a malformed error object", ErrInvalidAnswer)
		}
		code, err := strconv.ParseInt(e.Code.String(), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: an error without an integer code", ErrInvalidAnswer)
		}
		return nil, &Error{Code: errcode.Code(code)}
	case hasResult:
		if gotID != strconv.FormatInt(id, 10) {
			return nil, fmt.Errorf("%w: the id is not the request's", ErrInvalidAnswer)
		}
		return w.Result, nil
	}
	return nil, fmt.Errorf("%w: neither a result nor an error", ErrInvalidAnswer)
}

// present reports whether a member was given and is not null.
func present(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// maxIDBytes bounds the identifiers the client sends and accepts (spec item
// 74).
const maxIDBytes = 256

// checkID returns an error naming field when s is not a bounded identifier:
// 1 to 256 bytes of UTF-8, no control characters, no U+2028 or U+2029.
func checkID(field, s string) error {
	if s == "" || len(s) > maxIDBytes || !utf8.ValidString(s) ||
		strings.ContainsFunc(s, func(r rune) bool {
			return r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' || (r >= 0x80 && r < 0xa0)
		}) {
		return fmt.Errorf("%s must be 1 to %d bytes of UTF-8 without control characters", field, maxIDBytes)
	}
	return nil
}

// knownStates are the A2A 0.3 task states the client passes on; any other
// value is [a2atask.StateUnknown].
var knownStates = map[a2atask.TaskState]bool{
	a2atask.StateSubmitted: true, a2atask.StateWorking: true, a2atask.StateInputRequired: true,
	a2atask.StateCompleted: true, a2atask.StateFailed: true, a2atask.StateCanceled: true,
	a2atask.StateUnknown: true, "rejected": true, "auth-required": true,
}

// state03 is the A2A 0.3 state of a 1.0 TASK_STATE_* name
// (TASK_STATE_INPUT_REQUIRED → input-required).
func state03(proto string) a2atask.TaskState {
	s, ok := strings.CutPrefix(proto, "TASK_STATE_")
	if !ok {
		return a2atask.StateUnknown
	}
	st := a2atask.TaskState(strings.ReplaceAll(strings.ToLower(s), "_", "-"))
	if st == "cancelled" {
		st = a2atask.StateCanceled
	}
	if !knownStates[st] {
		return a2atask.StateUnknown
	}
	return st
}

// The A2A 1.0 shapes the client reads: protobuf-JSON names, no kind, a
// part a oneof (text, data, url, raw).
type (
	task10 struct {
		ID        string          `json:"id"`
		ContextID string          `json:"contextId"`
		Status    status10        `json:"status"`
		Artifacts []artifact10    `json:"artifacts"`
		Metadata  json.RawMessage `json:"metadata"`
	}
	status10 struct {
		State   string     `json:"state"`
		Message *message10 `json:"message"`
	}
	message10 struct {
		MessageID string   `json:"messageId"`
		TaskID    string   `json:"taskId"`
		ContextID string   `json:"contextId"`
		Role      string   `json:"role"`
		Parts     []part10 `json:"parts"`
	}
	artifact10 struct {
		ArtifactID string   `json:"artifactId"`
		Name       string   `json:"name"`
		Parts      []part10 `json:"parts"`
	}
	part10 struct {
		Text      *string         `json:"text"`
		Data      json.RawMessage `json:"data"`
		URL       *string         `json:"url"`
		Raw       *string         `json:"raw"`
		MediaType string          `json:"mediaType"`
		Filename  string          `json:"filename"`
	}
)

func (p part10) part() (a2atask.Part, error) {
	n := 0
	var out a2atask.Part
	if p.Text != nil {
		n++
		out = a2atask.Part{Kind: "text", Text: *p.Text}
	}
	if present(p.Data) {
		n++
		out = a2atask.Part{Kind: "data", Data: p.Data}
	}
	if p.URL != nil {
		n++
		out = a2atask.Part{Kind: "file", File: &a2atask.File{URI: *p.URL, Name: p.Filename, MimeType: p.MediaType}}
	}
	if p.Raw != nil {
		n++
		out = a2atask.Part{Kind: "file", File: &a2atask.File{Bytes: *p.Raw, Name: p.Filename, MimeType: p.MediaType}}
	}
	if n != 1 {
		return a2atask.Part{}, fmt.Errorf("%w: a part is not exactly one of text, data, url and raw", ErrInvalidAnswer)
	}
	return out, nil
}

func parts10(in []part10) ([]a2atask.Part, error) {
	out := make([]a2atask.Part, 0, len(in))
	for _, p := range in {
		q, err := p.part()
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

func (m *message10) message() (*a2atask.Message, error) {
	parts, err := parts10(m.Parts)
	if err != nil {
		return nil, err
	}
	role := strings.ToLower(strings.TrimPrefix(m.Role, "ROLE_"))
	return &a2atask.Message{Kind: "message", Role: role, MessageID: m.MessageID, TaskID: m.TaskID, ContextID: m.ContextID, Parts: parts}, nil
}

func (t *task10) task() (*a2atask.Task, error) {
	out := &a2atask.Task{Kind: "task", ID: t.ID, ContextID: t.ContextID, Metadata: t.Metadata,
		Status: a2atask.TaskStatus{State: state03(t.Status.State)}}
	if t.Status.Message != nil {
		m, err := t.Status.Message.message()
		if err != nil {
			return nil, err
		}
		out.Status.Message = m
	}
	for _, a := range t.Artifacts {
		parts, err := parts10(a.Parts)
		if err != nil {
			return nil, err
		}
		out.Artifacts = append(out.Artifacts, a2atask.Artifact{ArtifactID: a.ArtifactID, Name: a.Name, Parts: parts})
	}
	return out, nil
}

// decodeTask reads a task in the binding's form and checks it: an id (a
// bounded identifier), a known state (else unknown), at most maxArtifacts
// artifacts, parts of a known kind. The history, which the client never
// asks for, is dropped. The result is in the A2A 0.3 form whatever the
// binding.
func decodeTask(raw json.RawMessage, b Binding, maxArtifacts int) (*a2atask.Task, error) {
	var t *a2atask.Task
	if b == Binding10 {
		var w task10
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, fmt.Errorf("%w: not an A2A 1.0 task", ErrInvalidAnswer)
		}
		var err error
		if t, err = w.task(); err != nil {
			return nil, err
		}
	} else {
		t = new(a2atask.Task)
		if err := json.Unmarshal(raw, t); err != nil || t.Kind != "task" {
			return nil, fmt.Errorf("%w: not an A2A 0.3 task", ErrInvalidAnswer)
		}
		if !knownStates[t.Status.State] {
			t.Status.State = a2atask.StateUnknown
		}
		if t.Status.Message != nil {
			if err := checkParts(t.Status.Message.Parts); err != nil {
				return nil, err
			}
		}
		for _, a := range t.Artifacts {
			if err := checkParts(a.Parts); err != nil {
				return nil, err
			}
		}
	}
	if err := checkID("the task id (result.id)", t.ID); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidAnswer, err)
	}
	if t.ContextID != "" {
		if err := checkID("the task's contextId", t.ContextID); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidAnswer, err)
		}
	}
	if len(t.Artifacts) > maxArtifacts {
		return nil, fmt.Errorf("%w: %d artifacts, the cap is %d", ErrTooLarge, len(t.Artifacts), maxArtifacts)
	}
	t.History = nil
	return t, nil
}

// decodeMessage reads an agent message of the 0.3 binding and checks its
// parts.
func decodeMessage(raw json.RawMessage) (*a2atask.Message, error) {
	m := new(a2atask.Message)
	if err := json.Unmarshal(raw, m); err != nil || m.Kind != "message" {
		return nil, fmt.Errorf("%w: not an A2A 0.3 message", ErrInvalidAnswer)
	}
	if err := checkParts(m.Parts); err != nil {
		return nil, err
	}
	return m, nil
}

// checkParts checks the 0.3 parts: text, data (present) or file (a URI or
// bytes).
func checkParts(parts []a2atask.Part) error {
	for _, p := range parts {
		switch {
		case p.Kind == "text":
		case p.Kind == "data" && present(p.Data):
		case p.Kind == "file" && p.File != nil && (p.File.URI != "") != (p.File.Bytes != ""):
		default:
			return fmt.Errorf("%w: a part is neither text, data nor a file", ErrInvalidAnswer)
		}
	}
	return nil
}

// decodeSendResult reads the answer of a send: a task or an agent message.
func decodeSendResult(raw json.RawMessage, b Binding, maxArtifacts int) (*Answer, error) {
	if b == Binding10 {
		var w struct {
			Task    json.RawMessage `json:"task"`
			Message *message10      `json:"message"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, fmt.Errorf("%w: not an A2A 1.0 send result", ErrInvalidAnswer)
		}
		switch {
		case present(w.Task) && w.Message == nil:
			t, err := decodeTask(w.Task, b, maxArtifacts)
			if err != nil {
				return nil, err
			}
			return &Answer{Task: t}, nil
		case w.Message != nil && !present(w.Task):
			m, err := w.Message.message()
			if err != nil {
				return nil, err
			}
			return &Answer{Message: m}, nil
		}
		return nil, fmt.Errorf("%w: a send result is a task or a message", ErrInvalidAnswer)
	}
	var k struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &k); err != nil {
		return nil, fmt.Errorf("%w: not an A2A 0.3 send result", ErrInvalidAnswer)
	}
	switch k.Kind {
	case "task":
		t, err := decodeTask(raw, b, maxArtifacts)
		if err != nil {
			return nil, err
		}
		return &Answer{Task: t}, nil
	case "message":
		m, err := decodeMessage(raw)
		if err != nil {
			return nil, err
		}
		return &Answer{Message: m}, nil
	}
	return nil, fmt.Errorf("%w: a send result is a task or a message", ErrInvalidAnswer)
}
