package sse

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
)

// Event names used on the stream.
const (
	// EventConnected is the first event of every stream; its data is {"status":"connected"}.
	EventConnected = "supervaizer.connected"
	// EventHeartbeat is sent after Heartbeat without any event; its data is {"status":"ok"}.
	EventHeartbeat = "supervaizer.heartbeat"
	// EventEffect carries the effects of one supervaizer/action.invoke call.
	EventEffect = "supervaizer.effect"
)

// Fixed frames. They carry no id line: the spec makes ids optional on these events and a
// client's Last-Event-ID must only ever name a replayable event.
var (
	connectedFrame = []byte("event: " + EventConnected + "\ndata: {\"status\":\"connected\"}\n\n")
	heartbeatFrame = []byte("event: " + EventHeartbeat + "\ndata: {\"status\":\"ok\"}\n\n")
	frameEnd       = []byte("\n\n")
)

// event is one published event, shared read-only by the replay buffer and every
// subscriber queue. Its wire form is head, then data, then frameEnd.
type event struct {
	id   uint64
	name string // the event's name: streams of a topic receive the events of their name
	head []byte // "id: <id>\nevent: <name>\ndata: "
	data []byte // the payload, with line breaks turned into "\ndata: "

	inline [64]byte // holds head when it fits: one allocation per event
}

// allocEvent allocates the event of name and data, without its id: the broker allocates
// outside its lock, then numbers the event under it with setID, which allocates nothing.
func allocEvent(name string, data []byte) *event {
	e := &event{name: name, data: data}
	e.head = e.inline[:0]
	if n := len("id: \nevent: \ndata: ") + 20 + len(name); n > len(e.inline) {
		e.head = make([]byte, 0, n)
	}
	return e
}

// setID numbers the event and formats its head in the space allocEvent reserved.
func (e *event) setID(id uint64, name string) {
	e.id = id
	head := e.head[:0]
	head = append(head, "id: "...)
	head = strconv.AppendUint(head, id, 10)
	head = append(head, "\nevent: "...)
	head = append(head, name...)
	head = append(head, "\ndata: "...)
	e.head = head
}

// eventOverhead approximates the memory of an event besides its payload and head: the
// struct itself and the allocator's rounding. reflect gives the struct's size without
// importing unsafe; it is computed once.
var eventOverhead = int(reflect.TypeFor[event]().Size()) + 16

// size is the memory the event holds, as allocated: the payload's capacity (a caller's
// slack included), the head when it does not fit inline, and the struct.
func (e *event) size() int {
	n := cap(e.data) + eventOverhead
	if cap(e.head) > len(e.inline) {
		n += cap(e.head)
	}
	return n
}

// singleLine replaces the line breaks of an event name with spaces: a name cannot span
// lines, and a line break would let it inject fields. Other bytes are kept as they are.
func singleLine(name string) string {
	if !strings.ContainsAny(name, "\r\n") {
		return name
	}
	b := []byte(name)
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

// splitDataLines turns every line break (CRLF, LF or CR) of data into "\ndata: ", so that
// a payload spanning several lines is sent as several data lines, which clients join back
// with LF. data without line breaks is returned unchanged.
func splitDataLines(data []byte) []byte {
	if !bytes.ContainsAny(data, "\r\n") {
		return data
	}
	out := make([]byte, 0, len(data)+16)
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			out = append(out, "\ndata: "...)
		case '\n':
			out = append(out, "\ndata: "...)
		default:
			out = append(out, c)
		}
	}
	return out
}

// ParseLastEventID parses the value of a Last-Event-ID request header: a decimal uint64,
// surrounding white space ignored. ok is false for anything else (empty, signed, not
// decimal, out of range), in which case the stream starts without replay.
func ParseLastEventID(s string) (id uint64, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return id, true
}
