// Package sse implements the Server-Sent Events stream served at GET /a2a/events.
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
// Every published event gets the next id and is written as
//
//	id: <n>
//	event: <name>
//	data: <json>
//	<blank line>
//
// Each stream starts with a supervaizer.connected event and, after Heartbeat without any
// event, gets a supervaizer.heartbeat event; neither carries an id.
//
// Publish never waits for a subscriber. Each subscriber has a queue bounded in events
// (QueueSize, default 100) and in memory (QueueBytes, default 4 MiB); when it is full the
// oldest queued event is dropped, so a slow client loses old events but never slows the
// publisher or the other clients. Each write to a stream has a deadline (WriteTimeout,
// default 30 s): a client that stops reading is disconnected and the events its stream
// holds are released. At most MaxStreams streams (default 1,000) are open at once; beyond
// it a new stream is answered 503 with Retry-After.
//
// # Replay
//
// The broker keeps the most recent events within two bounds: ReplaySize events (default
// 1,024) and ReplayBytes of event memory (default 16 MiB), evicting the oldest first; an
// event larger than ReplayBytes on its own is delivered live but not kept. A client that
// reconnects with the header Last-Event-ID: <n> first receives, in order, the retained
// events whose id is greater than n, then the live stream: nothing up to n, nothing twice.
// Events already evicted from the replay buffer are lost.
//
// Ids come from an [IDSource]. The default, [BootSequence], counts up from the boot time in
// milliseconds shifted into the high bits, so ids are consecutive within a process and
// increase across restarts: a Last-Event-ID from an earlier boot replays everything the new
// process retains.
//
// # Cross-instance fan-out
//
// Code that emits events depends on the small [Publisher] interface rather than on
// [*Broker]. A multi-instance deployment plugs a Publisher that numbers each event from a
// shared sequence, stores it for replay and forwards it to every instance (for example
// PostgreSQL's event table, sequence and LISTEN/NOTIFY); each instance hands the events it
// receives to its local [Broker.Deliver] with their shared ids, and the local broker keeps
// serving streams, queues and replay unchanged. [Broker.LastID] tells the fan-out where a
// local broker stands. On such a broker (Options.Shared), a client that resumes with an id
// the broker has not reached within ResumeGrace (default 3 s) comes from no instance of
// the log: its id is unknown, and it receives every live event (open questions item 67).
package sse
