package answer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Model is the author's model call: it sends prompt and returns the model's
// text. The calls of one [Ask] belong to one conversation: a correction
// refers to the answer before it, so the function keeps the session (or the
// history) between them. The SDK has no model client; any client, or a
// scripted stand-in in tests, fits here.
type Model func(ctx context.Context, prompt string) (string, error)

// Correction returns the re-ask after err, an error of [Parse] or [Ask]: the
// exact violation, then the contract of T. Sent in the same conversation, it
// is all the model needs to answer again. It panics when T has no JSON
// Schema mapping.
func Correction[T Enveloped](err error) string {
	return correction(shapeOf[T](), err)
}

func correction(s *shape, err error) string {
	reason := "no answer"
	var ce *ContractError
	switch {
	case errors.As(err, &ce):
		reason = ce.reason()
	case err != nil:
		reason = err.Error()
	}
	return "Your last answer did not pass validation: " + reason + ".\n" +
		"Answer again with only the JSON object asked for.\n\n" + s.contract
}

// Handoff returns prev, the envelope a previous agent (or code) returned, as
// prompt text for the next agent: a heading, then prev as indented JSON.
// What crosses from one agent to the next is what the first declared, never
// its conversation. It fails only when prev cannot be encoded (a NaN).
func Handoff(prev Enveloped) (string, error) {
	var b bytes.Buffer
	b.WriteString("### previous_envelope\n\nThe envelope the previous agent returned:\n")
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(prev); err != nil {
		return "", fmt.Errorf("answer: the previous envelope: %w", err)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// Ask asks model for a T and repairs what it answers, at most tries times
// (tries below 1 count as 1): it sends prompt followed by the [Contract] of
// T, parses the answer, and after a violation sends the [Correction] naming
// it. It returns the first valid answer; a valid answer declaring status
// "fail" with an error wrapping [ErrFailed], without asking again; the
// model's own error at once; and, when no try gave a valid answer, an error
// wrapping the last *[ContractError]. It panics when T has no JSON Schema
// mapping.
func Ask[T Enveloped](ctx context.Context, model Model, prompt string, tries int) (T, error) {
	s := shapeOf[T]()
	tries = max(tries, 1)
	next := s.contract
	if prompt != "" {
		next = prompt + "\n\n" + s.contract
	}
	var zero T
	var last *ContractError
	for range tries {
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		text, err := model(ctx, next)
		if err != nil {
			return zero, fmt.Errorf("answer: the model: %w", err)
		}
		v, err := parse[T](s, text)
		if !errors.As(err, &last) {
			return v, err // valid, or valid and failed
		}
		next = correction(s, err)
	}
	return zero, &exhausted{tries, last}
}

// exhausted is the error of an Ask whose every try broke the contract.
type exhausted struct {
	tries int
	last  *ContractError
}

func (e *exhausted) Error() string {
	return fmt.Sprintf("answer: no valid answer in %d tries; the last: %s", e.tries, e.last.reason())
}

func (e *exhausted) Unwrap() error { return e.last }
