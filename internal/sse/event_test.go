package sse

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLastEventID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		want   uint64
		wantOK bool
	}{
		{"0", 0, true},
		{"42", 42, true},
		{" 42 ", 42, true},
		{"\t42\r\n", 42, true},
		{"007", 7, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"", 0, false},
		{"   ", 0, false},
		{"18446744073709551616", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1_000", 0, false},
		{"0x10", 0, false},
		{"1e3", 0, false},
		{"4 2", 0, false},
		{"٣", 0, false}, // a digit, but not ASCII
		{"abc", 0, false},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			t.Parallel()
			got, ok := ParseLastEventID(tt.in)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func FuzzParseLastEventID(f *testing.F) {
	for _, s := range []string{"", "0", "42", " 7 ", "007", "18446744073709551615",
		"18446744073709551616", "-1", "+1", "1e3", "٣", "0x1", "1_0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := ParseLastEventID(s)
		trimmed := strings.TrimSpace(s)
		digits := trimmed != "" && strings.Trim(trimmed, "0123456789") == ""
		if !ok {
			assert.Zero(t, id)
			if digits { // only an out-of-range number may be refused
				_, err := strconv.ParseUint(trimmed, 10, 64)
				assert.Error(t, err)
			}
			return
		}
		require.True(t, digits, "accepted %q", s)
		want := strings.TrimLeft(trimmed, "0")
		if want == "" {
			want = "0"
		}
		assert.Equal(t, want, strconv.FormatUint(id, 10))
	})
}

func TestEventFrame(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, evName, data, want string
	}{
		{"one line", EventEffect, `{"a":1}`, "id: 7\nevent: supervaizer.effect\ndata: {\"a\":1}\n\n"},
		{"empty data", "e", "", "id: 7\nevent: e\ndata: \n\n"},
		{"LF", "e", "{\n}", "id: 7\nevent: e\ndata: {\ndata: }\n\n"},
		{"CRLF", "e", "{\r\n}", "id: 7\nevent: e\ndata: {\ndata: }\n\n"},
		{"CR", "e", "{\r}", "id: 7\nevent: e\ndata: {\ndata: }\n\n"},
		{"trailing LF", "e", "{}\n", "id: 7\nevent: e\ndata: {}\ndata: \n\n"},
		{"name with line breaks", "a\r\nid: 1\nb", "{}", "id: 7\nevent: a  id: 1 b\ndata: {}\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, frame(7, tt.evName, []byte(tt.data)))
		})
	}
}

// FuzzEventFrame checks that any name and data survive the trip through the wire format
// and a client's parser, up to the documented changes (line breaks in the name become
// spaces, line breaks in the data become LF).
func FuzzEventFrame(f *testing.F) {
	f.Add(uint64(1), EventEffect, []byte(`{"effects":[]}`))
	f.Add(uint64(2), "a\nb", []byte("x\r\ny\rz\n"))
	f.Add(uint64(1<<64-1), "", []byte(""))
	f.Add(uint64(3), ": comment", []byte(":\n\n\ndata: x"))
	f.Fuzz(func(t *testing.T, id uint64, name string, data []byte) {
		ev, err := readEvent(bufio.NewReader(strings.NewReader(frame(id, name, data))))
		require.NoError(t, err)
		assert.Equal(t, strconv.FormatUint(id, 10), ev.ID)
		// The client strips one leading space after "event:"; we write exactly one.
		assert.Equal(t, strings.NewReplacer("\r", " ", "\n", " ").Replace(name), ev.Name)
		wantData := bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
		assert.Equal(t, string(wantData), ev.Data)
	})
}

// frame returns the wire form of one published event.
func frame(id uint64, name string, data []byte) string {
	e := allocEvent(singleLine(name), splitDataLines(data))
	e.setID(id, singleLine(name))
	return string(e.head) + string(e.data) + string(frameEnd)
}

// TestSetID: numbering an event writes its id line before the name (that it
// does not allocate is TestLimitSetIDDoesNotAllocate's, in limits_test.go).
func TestSetID(t *testing.T) {
	for _, name := range []string{EventEffect, strings.Repeat("n", 200)} {
		e := allocEvent(name, []byte(`{}`))
		e.setID(18446744073709551615, name)
		assert.Equal(t, "id: 18446744073709551615\nevent: "+name+"\ndata: ", string(e.head))
	}
}
