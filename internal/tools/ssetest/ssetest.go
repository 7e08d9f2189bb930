// Package ssetest reads Server-Sent Events in tests the way a browser's
// EventSource does, so that the tests of the event stream (internal/sse, the
// root package's /a2a/events) see what a client sees.
package ssetest

import (
	"bufio"
	"strings"
)

// Event is one event as a client sees it.
type Event struct {
	ID   string // "" when the event has no id line
	Name string
	Data string
}

// Read reads the next event from r: LF or CRLF line ends, comment lines
// ignored, data lines joined with LF. It returns the reader's error when the
// stream ends before an event is complete.
func Read(r *bufio.Reader) (Event, error) {
	var (
		ev   Event
		data []string
		seen bool
	)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return Event{}, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		switch {
		case line == "":
			if seen {
				ev.Data = strings.Join(data, "\n")
				return ev, nil
			}
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				ev.ID = value
			case "event":
				ev.Name = value
			case "data":
				data = append(data, value)
			}
			seen = true
		}
	}
}
