package a2atask_test

import (
	"encoding/json"
	"fmt"

	"github.com/supervaize/supervaizer-go/a2atask"
)

// A client reads the answer to message/send: a job is a Task, its state
// derived from the job status, its job_state the one artifact.
func ExampleTask() {
	answer := []byte(`{"kind":"task","id":"job-7","contextId":"mission-3",
		"status":{"state":"input-required","message":{"kind":"message","role":"agent","messageId":"a2a-status-job-7-input-required",
			"taskId":"job-7","contextId":"mission-3","parts":[{"kind":"text","text":"Draft ready for review"}]}},
		"artifacts":[{"artifactId":"job_state","name":"job_state","parts":[{"kind":"data","data":{"job":{"id":"job-7","status":"awaiting"}}}]}],
		"history":[]}`)
	var task a2atask.Task
	if err := json.Unmarshal(answer, &task); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(task.ID, task.ContextID, task.Status.State)
	fmt.Println("terminal:", task.Status.State.Terminal(), "stream ends:", task.Status.State.Final())
	fmt.Println(task.Status.Message.Parts[0].Text)
	fmt.Println(task.Artifacts[0].Name, string(task.Artifacts[0].Parts[0].Data))
	// Output:
	// job-7 mission-3 input-required
	// terminal: false stream ends: true
	// Draft ready for review
	// job_state {"job":{"id":"job-7","status":"awaiting"}}
}
