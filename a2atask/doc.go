// Package a2atask holds the A2A task vocabulary a Supervaizer controller
// speaks on POST /a2a beside the supervaizer/* methods: the standard A2A 0.3
// methods message/send, message/stream, tasks/get, tasks/cancel and
// tasks/resubscribe (spec open-questions item 65), and their A2A 1.0 twins
// SendMessage, SendStreamingMessage, GetTask, CancelTask and SubscribeToTask,
// which run the same calls with the A2A 1.0 protobuf-JSON shapes (a part is
// {"data":{…}}, a state TASK_STATE_*: [TaskState.ProtoName]).
//
// An A2A client calls an action with a message carrying exactly one data
// part, {"kind":"data","data":{"action":"job.start","input":{…}}}.
// The controller runs it as the supervaizer/action.invoke call it maps to
// (same API key, workspace token and scopes, input schema, idempotency record
// and result validation) and answers with a [Task] when the result carries a
// job_state, else with an agent [Message] whose data part holds the v2
// result. A job is a task: its id is the job id, its contextId the mission id,
// its state follows the job status ([TaskState]), and its one artifact,
// named [ArtifactJobState], holds the validated job_state.
//
// The types here are the JSON shapes of the 0.3 answers, for clients and
// tests that read them; the server writes them itself.
package a2atask
