package a2atask

import (
	"encoding/json"
	"time"
)

// The A2A methods served on POST /a2a.
const (
	MethodMessageSend      = "message/send"
	MethodMessageStream    = "message/stream"
	MethodTasksGet         = "tasks/get"
	MethodTasksCancel      = "tasks/cancel"
	MethodTasksResubscribe = "tasks/resubscribe"
	// MethodPushConfigPrefix starts every push notification method
	// (tasks/pushNotificationConfig/set, get, list, delete): each is answered
	// with [errcode.PushNotificationNotSupported].
	MethodPushConfigPrefix = "tasks/pushNotificationConfig/"
)

// The A2A 1.0 methods served on POST /a2a beside the 0.3 ones: the same
// calls, each mapped onto the same code path as its 0.3 equivalent (named in
// the comments); only their params and answers take the A2A 1.0
// protobuf-JSON shapes (docs/a2a.md, "Two bindings").
const (
	MethodSendMessage          = "SendMessage"          // message/send: answers {"task":…} or {"message":…}
	MethodSendStreamingMessage = "SendStreamingMessage" // message/stream
	MethodGetTask              = "GetTask"              // tasks/get
	MethodCancelTask           = "CancelTask"           // tasks/cancel
	MethodSubscribeToTask      = "SubscribeToTask"      // tasks/resubscribe; a terminal task is [errcode.UnsupportedOperation]
	// The push notification methods, each answered with
	// [errcode.PushNotificationNotSupported].
	MethodCreateTaskPushNotificationConfig = "CreateTaskPushNotificationConfig"
	MethodGetTaskPushNotificationConfig    = "GetTaskPushNotificationConfig"
	MethodListTaskPushNotificationConfigs  = "ListTaskPushNotificationConfigs"
	MethodDeleteTaskPushNotificationConfig = "DeleteTaskPushNotificationConfig"
	// Operations the agent does not offer, each answered with
	// [errcode.UnsupportedOperation]: the controller keeps no list of tasks (a
	// task is read by its id), and the card declares no extended card.
	MethodListTasks            = "ListTasks"
	MethodGetExtendedAgentCard = "GetExtendedAgentCard"
)

// The A2A protocol versions of the two bindings, as the A2A-Version header
// and the Agent Card's supportedInterfaces name them (major.minor).
const (
	ProtocolVersion03 = "0.3"
	ProtocolVersion10 = "1.0"
	// HeaderVersion is the request header in which an A2A client names the
	// protocol version it speaks. Absent, or naming 0.3 or 1.0 (any patch
	// version), the call is served; naming any other version, it is answered
	// with [errcode.VersionNotSupported].
	HeaderVersion = "A2A-Version"
)

// The params.metadata keys a client may set on message/send and
// message/stream (and on tasks/* for the first three) to choose what the
// mapped action.invoke request carries instead of the defaults.
const (
	MetaWorkspaceID = "supervaizer/workspace_id" // default: the token's workspace_id claim ("local" in local mode)
	MetaUserID      = "supervaizer/user_id"      // default: "a2a:" + the token's grant_id ("local" in local mode)
	MetaSurface     = "supervaizer/surface"      // default: the action's surface, else "job.start"
	MetaAgentSlug   = "supervaizer/agent_slug"   // default: the server's primary agent
)

// ArtifactJobState is the id and name of a task's one artifact: a data part
// holding the job's last validated job_state.
const ArtifactJobState = "job_state"

// DefaultBlockingTimeout bounds how long message/send with
// configuration.blocking, or SendMessage without
// configuration.returnImmediately, waits for a terminal or input-required
// state.
const DefaultBlockingTimeout = 60 * time.Second

// TaskState is the state of a task, derived from its job's status.
type TaskState string

// The task states a job maps to. Job statuses are the agent's free
// vocabulary; the conventional ones map as follows (letter case ignored):
//
//	pending, queued, submitted                  → submitted
//	running, active, working, in_progress       → working
//	awaiting, awaiting_input, input_required    → input-required
//	completed, complete, done, succeeded        → completed
//	failed, error                               → failed
//	stopped, cancelled, canceled                → canceled
//	anything else                               → unknown
//
// A job in a submitted or working state with a step awaiting a person
// (status "awaiting" with an awaiting object) is input-required as well.
const (
	StateSubmitted     TaskState = "submitted"
	StateWorking       TaskState = "working"
	StateInputRequired TaskState = "input-required"
	StateCompleted     TaskState = "completed"
	StateFailed        TaskState = "failed"
	StateCanceled      TaskState = "canceled"
	StateUnknown       TaskState = "unknown"
)

// ProtoName is the name of the state in the A2A 1.0 binding (the
// protobuf-JSON enum value): TASK_STATE_SUBMITTED, TASK_STATE_WORKING,
// TASK_STATE_INPUT_REQUIRED, TASK_STATE_COMPLETED, TASK_STATE_FAILED,
// TASK_STATE_CANCELED, and TASK_STATE_UNSPECIFIED for [StateUnknown] or any
// other value.
func (s TaskState) ProtoName() string {
	switch s {
	case StateSubmitted:
		return "TASK_STATE_SUBMITTED"
	case StateWorking:
		return "TASK_STATE_WORKING"
	case StateInputRequired:
		return "TASK_STATE_INPUT_REQUIRED"
	case StateCompleted:
		return "TASK_STATE_COMPLETED"
	case StateFailed:
		return "TASK_STATE_FAILED"
	case StateCanceled:
		return "TASK_STATE_CANCELED"
	}
	return "TASK_STATE_UNSPECIFIED"
}

// Terminal reports whether no further change is expected: completed,
// failed or canceled.
func (s TaskState) Terminal() bool {
	return s == StateCompleted || s == StateFailed || s == StateCanceled
}

// Final reports whether a stream ends at this state: a terminal state or
// input-required (the job waits for a person).
func (s TaskState) Final() bool { return s.Terminal() || s == StateInputRequired }

// Task is a job seen as an A2A task (kind "task").
type Task struct {
	Kind      string          `json:"kind"` // "task"
	ID        string          `json:"id"`   // the job id
	ContextID string          `json:"contextId"`
	Status    TaskStatus      `json:"status"`
	Artifacts []Artifact      `json:"artifacts,omitempty"`
	History   []Message       `json:"history"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// TaskStatus is a task's state and, when the job has a status text, an agent
// message holding it.
type TaskStatus struct {
	State   TaskState `json:"state"`
	Message *Message  `json:"message,omitempty"`
}

// Message is an A2A message (kind "message"). The answer to an action whose
// result carries no job_state is an agent message with one data part holding
// the v2 result.
type Message struct {
	Kind      string `json:"kind"` // "message"
	Role      string `json:"role"` // "user" or "agent"
	MessageID string `json:"messageId"`
	TaskID    string `json:"taskId,omitempty"`
	ContextID string `json:"contextId,omitempty"`
	Parts     []Part `json:"parts"`
}

// Part is one part of a message or an artifact: a text part (Kind "text",
// Text), a data part (Kind "data", Data) or, in what other agents answer, a
// file part (Kind "file", File). A controller never writes file parts.
type Part struct {
	Kind string          `json:"kind"`
	Text string          `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
	File *File           `json:"file,omitempty"`
}

// File is the file of a file part: a reference (URI) or inline content
// (Bytes, base64 as on the wire), with an optional name and media type. A
// client reading one treats the URI as a reference: fetching it is a
// decision of its own (package a2a/client never does).
type File struct {
	URI      string `json:"uri,omitempty"`
	Bytes    string `json:"bytes,omitempty"`
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// Artifact is an output of a task; a job's task has one, [ArtifactJobState].
type Artifact struct {
	ArtifactID string `json:"artifactId"`
	Name       string `json:"name,omitempty"`
	Parts      []Part `json:"parts"`
}

// StatusUpdateEvent is a streamed change of a task's state (kind
// "status-update"); Final marks the last event of the stream.
type StatusUpdateEvent struct {
	Kind      string     `json:"kind"` // "status-update"
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Status    TaskStatus `json:"status"`
	Final     bool       `json:"final"`
}

// ArtifactUpdateEvent is a streamed new job_state of a task (kind
// "artifact-update").
type ArtifactUpdateEvent struct {
	Kind      string   `json:"kind"` // "artifact-update"
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	LastChunk bool     `json:"lastChunk"`
}
