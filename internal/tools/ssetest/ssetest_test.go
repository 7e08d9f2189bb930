package ssetest

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name, stream string
		want         []Event
	}{
		{"LF", "id: 1\nevent: e\ndata: {}\n\n", []Event{{ID: "1", Name: "e", Data: "{}"}}},
		{"CRLF", "id: 2\r\nevent: e\r\ndata: x\r\n\r\n", []Event{{ID: "2", Name: "e", Data: "x"}}},
		{"comments and blank lines skipped", ": ping\n\n\nevent: e\ndata:x\n\n", []Event{{Name: "e", Data: "x"}}},
		{"data lines joined", "data: a\ndata: b\n\n", []Event{{Data: "a\nb"}}},
		{"two events", "event: a\n\nevent: b\n\n", []Event{{Name: "a"}, {Name: "b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bufio.NewReader(strings.NewReader(tt.stream))
			for _, want := range tt.want {
				got, err := Read(r)
				require.NoError(t, err)
				assert.Equal(t, want, got)
			}
			_, err := Read(r)
			assert.ErrorIs(t, err, io.EOF, "nothing after the last event")
		})
	}
	_, err := Read(bufio.NewReader(strings.NewReader("event: cut")))
	assert.ErrorIs(t, err, io.EOF, "an incomplete event is not returned")
}
