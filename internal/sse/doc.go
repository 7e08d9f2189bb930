// Package sse implements the Server-Sent Events stream served at GET /a2a/events
// (controller spec §11, open questions item 22).
//
// A [Broker] is both the publishing side and the [net/http.Handler] of the stream:
//
//	b := sse.NewBroker(sse.Options{Logger: logger})
//	mux.Handle("GET /a2a/events", b)
//	b.Publish(sse.EventEffect, payload) // after each successful action.invoke
//	_ = b.Shutdown(ctx)                 // before http.Server.Shutdown
//
// # Delivery
//
// Every published event gets the next id (1, 2, 3, …) and is written as
//
//	id: <n>
//	event: <name>
//	data: <json>
//	<blank line>
//
// Each stream starts with a supervaizer.connected event and, after Heartbeat without any
// event, gets a supervaizer.heartbeat event; neither carries an id.
//
// Publish never waits for a subscriber. Each subscriber has a bounded queue (QueueSize,
// default 100); when it is full the oldest queued event is dropped, so a slow client loses
// old events but never slows the publisher or the other clients.
//
// # Replay
//
// The broker keeps the last ReplaySize events. A client that reconnects with the header
// Last-Event-ID: <n> first receives, in order, the retained events whose id is greater than
// n, then the live stream: nothing up to n, nothing twice. Events already evicted from the
// replay buffer are lost. Ids are kept in memory only and start again at 1 when the process
// restarts.
//
// # Cross-instance fan-out
//
// Code that emits events depends on the small [Publisher] interface rather than on
// [*Broker]. A multi-instance deployment can plug a Publisher that forwards each event to
// the other instances (through a message bus) and hands the events it receives to each
// instance's local Broker.Publish; the ids then come from that Publisher's sequence and
// the local broker keeps serving streams, queues and replay unchanged.
package sse
