package answer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/supervaize/supervaizer-go/answer"
)

// Scout is what a scout agent must answer: the base envelope and a field of
// its own. Its fields declare the ask and the check at once.
type Scout struct {
	answer.Envelope
	Files []string `json:"files" sv:"minItems=1" ask:"the files that make up the app"`
}

func ExampleEnvelope() {
	// The base envelope is an answer type on its own: only status is required.
	env, err := answer.Parse[answer.Envelope](`{"status": "success", "summary": "Listed the files."}`)
	fmt.Println(env.Status, env.Summary, err)
	// Output: success Listed the files. <nil>
}

func ExampleEnveloped() {
	// Scout embeds answer.Envelope, so it satisfies answer.Enveloped and every
	// function of the package takes it.
	var s answer.Enveloped = Scout{Envelope: answer.Envelope{Status: answer.Success}, Files: []string{"main.go"}}
	text, _ := answer.Handoff(s)
	fmt.Println(strings.Count(text, "main.go"))
	// Output: 1
}

func ExampleStatus() {
	s, _ := answer.Parse[Scout](`{"status": "success", "files": ["a.go"]}`)
	fmt.Println(s.Status == answer.Success, s.Status == answer.Fail)
	// Output: true false
}

func ExampleContract() {
	fmt.Println(answer.Contract[Scout]())
	// Output:
	// End your answer with one JSON object, not wrapped in a code fence, with these fields:
	// - "status" (required, string, one of "success", "fail"): "success" when you did what was asked, "fail" when you could not
	// - "summary" (optional, string): one sentence: what you did or found
	// - "artifacts" (optional, array of strings): the paths of the files you wrote for the next agent
	// - "notes_for_next_agent" (optional, string): what the next agent must know
	// - "files" (required, array of strings, at least 1 item): the files that make up the app
	// Give every required field. Leave out, or set to null, an optional field you have nothing for. Add no other field.
}

func ExampleParse() {
	text := "I looked around.\n```json\n{\"status\": \"success\", \"files\": [\"main.go\", \"go.mod\"]}\n```\nAnything else?"
	s, err := answer.Parse[Scout](text)
	fmt.Println(s.Files, err)

	_, err = answer.Parse[Scout](`{"status": "done"}`)
	fmt.Println(err)
	// Output:
	// [main.go go.mod] <nil>
	// answer: files: missing property (required); status: must be one of success, fail (enum)
}

func ExampleSchema() {
	schema, err := answer.Schema[answer.Envelope]()
	if err != nil {
		fmt.Println(err)
	}
	fmt.Println(string(schema))
	// Output:
	// {
	//   "additionalProperties": false,
	//   "properties": {
	//     "artifacts": {
	//       "anyOf": [
	//         {
	//           "items": {
	//             "type": "string"
	//           },
	//           "type": "array"
	//         },
	//         {
	//           "type": "null"
	//         }
	//       ],
	//       "description": "the paths of the files you wrote for the next agent"
	//     },
	//     "notes_for_next_agent": {
	//       "description": "what the next agent must know",
	//       "type": [
	//         "string",
	//         "null"
	//       ]
	//     },
	//     "status": {
	//       "description": "\"success\" when you did what was asked, \"fail\" when you could not",
	//       "enum": [
	//         "success",
	//         "fail"
	//       ],
	//       "type": "string"
	//     },
	//     "summary": {
	//       "description": "one sentence: what you did or found",
	//       "type": [
	//         "string",
	//         "null"
	//       ]
	//     }
	//   },
	//   "required": [
	//     "artifacts",
	//     "notes_for_next_agent",
	//     "status",
	//     "summary"
	//   ],
	//   "type": "object"
	// }
}

func ExampleCorrection() {
	_, err := answer.Parse[answer.Envelope](`{"status": "maybe"}`)
	fmt.Println(strings.SplitN(answer.Correction[answer.Envelope](err), "\n", 2)[0])
	// Output: Your last answer did not pass validation: status: must be one of success, fail (enum).
}

func ExampleHandoff() {
	scout := Scout{
		Envelope: answer.Envelope{Status: answer.Success, Summary: "Two files.", NotesForNextAgent: "Leave go.mod alone."},
		Files:    []string{"main.go", "go.mod"},
	}
	text, err := answer.Handoff(scout)
	if err != nil {
		fmt.Println(err)
	}
	fmt.Println(text)
	// Output:
	// ### previous_envelope
	//
	// The envelope the previous agent returned:
	// {
	//   "status": "success",
	//   "summary": "Two files.",
	//   "notes_for_next_agent": "Leave go.mod alone.",
	//   "files": [
	//     "main.go",
	//     "go.mod"
	//   ]
	// }
}

func ExampleAsk() {
	// A scripted stand-in for the author's model: its first answer forgets a
	// required field, its second is valid.
	answers := []string{`{"status": "success"}`, `{"status": "success", "files": ["main.go"]}`}
	var prompts []string
	model := func(_ context.Context, prompt string) (string, error) {
		prompts = append(prompts, prompt)
		return answers[len(prompts)-1], nil
	}
	s, err := answer.Ask[Scout](context.Background(), model, "Which files make up the app?", 3)
	fmt.Println(s.Files, err)
	fmt.Println(strings.SplitN(prompts[1], "\n", 2)[0])
	// Output:
	// [main.go] <nil>
	// Your last answer did not pass validation: files: missing property (required).
}

func ExampleModel() {
	// Any client fits: here, one that keeps the conversation's history, so
	// that a correction follows the answer it corrects.
	var history []string
	var model answer.Model = func(_ context.Context, prompt string) (string, error) {
		history = append(history, prompt)
		return `{"status": "success", "files": ["main.go"]}`, nil
	}
	_, err := answer.Ask[Scout](context.Background(), model, "List the files.", 2)
	fmt.Println(len(history), err)
	// Output: 1 <nil>
}

func ExampleErrFailed() {
	s, err := answer.Parse[Scout](`{"status": "fail", "summary": "The repository is empty.", "files": ["-"]}`)
	fmt.Println(errors.Is(err, answer.ErrFailed), s.Status)
	fmt.Println(err)
	// Output:
	// true fail
	// answer: the model declared status "fail": The repository is empty.
}

func ExampleContractError() {
	_, err := answer.Parse[Scout](`{"status": "success", "files": [], "extra": 1}`)
	var ce *answer.ContractError
	if errors.As(err, &ce) {
		for _, v := range ce.Violations {
			fmt.Printf("%q %s: %s\n", v.Field, v.Rule, v.Msg)
		}
	}
	// Output:
	// "" additionalProperties: unknown properties: extra
	// "files" minItems: fewer than 1 items
}

func ExampleContractError_Error() {
	_, err := answer.Parse[Scout]("no JSON here")
	fmt.Println(err.Error())
	// Output: answer: no complete JSON object in the answer (json)
}

func ExampleViolation() {
	_, err := answer.Parse[Scout](`{"status": "success", "files": "main.go"}`)
	var ce *answer.ContractError
	errors.As(err, &ce)
	fmt.Printf("%+v\n", ce.Violations[0])
	// Output: {Field:files Rule:type Msg:wrong type: got string, want array}
}

// Review is an answer type with a rule across fields: its Check method.
type Review struct {
	answer.Envelope
	Approved bool     `json:"approved" ask:"whether the change can ship"`
	Blockers []string `json:"blockers,omitempty" ask:"what must change first"`
}

// Check is the rule the schema cannot express: a refusal names its blockers.
func (r Review) Check() error {
	if !r.Approved && len(r.Blockers) == 0 {
		return errors.New("blockers: a review that does not approve lists at least one")
	}
	return nil
}

func ExampleParse_check() {
	_, err := answer.Parse[Review](`{"status": "success", "approved": false}`)
	fmt.Println(err)
	r, err := answer.Parse[Review](`{"status": "success", "approved": false, "blockers": ["no tests"]}`)
	fmt.Println(r.Blockers, err)
	// Output:
	// answer: blockers: a review that does not approve lists at least one (check)
	// [no tests] <nil>
}
