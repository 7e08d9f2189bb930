// Package answer declares, with one Go type, what a model must answer, and
// checks that it did: the typed JSON envelope through which an agent's work
// crosses from the model to the code (spec item 83).
//
// The type is the one source of truth. It embeds [Envelope] (status, summary,
// artifacts, notes for the next agent) and adds its own fields; every field
// carries its JSON name, an `ask` tag (the sentence the prompt shows) and the
// `sv` rules of the SDK's typed inputs. From it derive:
//
//   - [Contract]: the ask, the text that ends a prompt;
//   - [Parse]: the check, tolerant in what it extracts (prose around the
//     object, a code fence, the last complete object wins), strict in what it
//     accepts (the compiled rules of the SDK's typed inputs; a field is
//     required unless it is a pointer or tagged omitempty/omitzero, unknown
//     fields are refused), then the type's own Check method if it has one,
//     with errors naming each field and rule;
//   - [Correction]: the re-ask after a failed parse, the exact violation then
//     the contract;
//   - [Handoff]: a previous envelope as prompt text for the next agent;
//   - [Schema]: the JSON Schema in the strict form providers accept for
//     constrained decoding;
//   - [Ask]: the bounded repair loop over a [Model] function the author
//     supplies (the SDK has no model client).
//
// The package is named for what it handles, a model's answer, and reads at
// the call site: answer.Parse[Plan](text), answer.Contract[Plan](). (The
// root package's envelope.go already holds the result constructors, so
// "envelope" would have named two different things.)
//
// A valid answer that declares status "fail" is returned with an error
// wrapping [ErrFailed]: an agent that announces its own failure is not a
// successful phase, and is not asked again.
package answer
