// Package callstate carries what a handler reports during one call (its
// token usage, its partial text) from package conversation, which the
// handler calls, to the pipeline of package supervaizer, which owns the
// call. The pipeline puts a [Recorder] in the handler's context under [Key].
package callstate

import "context"

// Key is the context key of the call's [Recorder].
type Key struct{}

// Recorder receives what a handler reports during its call.
type Recorder interface {
	// AddUsage adds token counts to the call's sum.
	AddUsage(input, output, cacheCreation, cacheRead int64)
	// Emit hands a chunk of partial text to the call's stream; it reports
	// false when the call is not streamed (the chunk is dropped).
	Emit(text string) bool
}

// From returns the call's recorder, nil outside a call.
func From(ctx context.Context) Recorder {
	if ctx == nil {
		return nil
	}
	r, _ := ctx.Value(Key{}).(Recorder)
	return r
}

// PolicyKey is the context key of the campaign policy a call runs under
// (a campaign.Policy): the pipeline of package supervaizer puts it in the
// handler's context, campaign.PolicyFrom reads it.
type PolicyKey struct{}
