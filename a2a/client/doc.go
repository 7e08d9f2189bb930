// Package client is a safe A2A client: for an agent that delegates a task
// to another agent, or a supervisor that drives one (spec open-questions
// item 84). It speaks both A2A JSON-RPC bindings, 1.0 and 0.3, with the
// SDK's own wire types (packages a2a and a2atask), and trusts nothing the
// remote says beyond what it checks.
//
//	c, err := client.New(ctx, base, // such as https://research.example.com
//		client.WithHeader("X-API-Key", key))
//	if err != nil {
//		return err // no card, an invalid card, a refused address, ...
//	}
//	ans, err := c.Send(ctx, client.SendRequest{RequestID: requestID, Parts: parts})
//	var amb *client.AmbiguousError
//	if errors.As(err, &amb) {
//		return err // unknown outcome: read back (GetTask), never resend blindly
//	}
//
// What it guarantees:
//
//   - Discovery reads /.well-known/agent-card.json, then
//     /.well-known/agent.json, under one deadline for the whole walk. A card
//     needs a name and a skills array ([DecodeCard]); the binding is chosen
//     from it, A2A 1.0 JSON-RPC first ([Binding10], [Binding03]).
//   - HTTPS with certificate verification, which cannot be turned off;
//     plain HTTP only to a loopback host, with [AllowLoopback]. No redirect
//     is followed ([ErrRedirect]); no proxy is used.
//   - A dial guard on the address actually dialed (net.Dialer.Control, after
//     name resolution, so DNS rebinding cannot pass it): link-local and
//     cloud metadata addresses (169.254.169.254, fd00:ec2::254, ...) always
//     refused, loopback only with [AllowLoopback], private ranges only with
//     [AllowPrivateNetworks]. An endpoint given as a refused IP address is
//     refused before any connection ([ErrAddressRefused]).
//   - Every timeout finite and an option ([WithDiscoveryTimeout],
//     [WithCallTimeout], [WithDialTimeout]); a call's timeout covers the
//     reading of its whole answer, so an answer drip-fed past it is cut.
//   - Every answer capped, 1 MiB by default ([WithMaxResponseBytes]);
//     artifacts bounded ([WithMaxArtifacts]); a file part's URL is returned
//     as a reference ([a2atask.File]) and never fetched.
//   - Remote error texts are never surfaced: an [*Error] carries the
//     JSON-RPC code (or HTTP status) and a fixed message for it.
//   - Capabilities are tentative until the remote accepts a call; a
//     method-not-found answer marks the operation unavailable for the
//     client's life ([Client.Capability], [ErrUnavailable]).
//   - Sends are non-blocking, their messageId is the caller's request id,
//     and nothing is ever resent: an unknown outcome is an
//     [*AmbiguousError]; [Client.GetTask] (history length 0) reads back.
//     A task's identity is result.id and its state result.status.state; a
//     completed task is an attempt's outcome, nothing more.
//   - The caller's W3C trace context travels with each call through the
//     transport of the observer given to [WithObserver] (the otel module's
//     injects traceparent and tracestate).
//
// A supervisor takes control of a campaign on a remote that serves the
// campaign-control extension ([CampaignControlURI], spec item 85):
// [Client.ClaimControl], [Client.ReadControl], [Client.RenewControl],
// [Client.ReleaseControl], [Client.Intervene], [Client.RequestStatus],
// [Client.SendControlled] and [Client.CancelControlled], each single-shot,
// each available only when the card advertises it (the mutations only with
// lease and policy enforcement), an unknown outcome resolved by reading
// back, never by a resend or a silent reacquire.
//
// docs/delegating.md walks through delegating safely.
package client
