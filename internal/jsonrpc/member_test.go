package jsonrpc

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMember(t *testing.T) {
	for _, tc := range []struct {
		name, obj, key, want string
		ok                   bool
	}{
		{"first", `{"status":"ok","effects":[]}`, "status", `"ok"`, true},
		{"nested brackets and strings", `{"status":"ok","effects":[{"type":"a]}\"","data":{"x":[1,{"y":"}"}]}}],"z":1}`, "effects",
			`[{"type":"a]}\"","data":{"x":[1,{"y":"}"}]}}]`, true},
		{"last member", `{"a":1,"effects":[] }`, "effects", `[]`, true},
		{"whitespace", " {\n \"a\" : 1 ,\t\"b\" :  true\n}\n", "b", `true`, true},
		{"escaped key", `{"eff\u0065cts":[1]}`, "effects", `[1]`, true},
		{"duplicate: last wins", `{"a":1,"a":2}`, "a", `2`, true},
		{"nested key is not top-level", `{"x":{"effects":[]}}`, "effects", ``, false},
		{"absent", `{"a":1}`, "effects", ``, false},
		{"empty object", `{}`, "a", ``, false},
		{"not an object", `[{"a":1}]`, "a", ``, false},
		{"scalar", `"a"`, "a", ``, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.True(t, json.Valid([]byte(tc.obj)))
			got, ok := Member([]byte(tc.obj), tc.key)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, string(got))
			assert.Equal(t, len(got), cap(got), "capacity clipped")
		})
	}
}

func TestAppendHTMLString(t *testing.T) {
	for _, s := range []string{"", "plain", "<a href='x'>&amp;</a>", "\u2028\u2029", "\x00\x1f\b\f\n\r\t\"\\", "\xff\xfe", "é 😀 <"} {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(AppendHTMLString([]byte("prefix"), s))[len("prefix"):], "%q", s)
	}
}

// FuzzMember checks Member against encoding/json on valid objects.
func FuzzMember(f *testing.F) {
	f.Add([]byte(`{"status":"ok","effects":[{"type":"job.started","data":{"k":"]}"}}]}`), "effects")
	f.Add([]byte(`{"a":1,"a":[2],"b\u0041":"\\\""}`), "bA")
	f.Fuzz(func(t *testing.T, obj []byte, key string) {
		// encoding/json reads invalid UTF-8 as U+FFFD; Member compares bytes.
		var m map[string]json.RawMessage
		if !utf8.Valid(obj) || !utf8.ValidString(key) || json.Unmarshal(obj, &m) != nil || m == nil {
			return
		}
		want, wantOK := m[key]
		got, ok := Member(obj, key)
		require.Equal(t, wantOK, ok, "key %q in %q", key, obj)
		if ok {
			require.JSONEq(t, string(want), string(got))
		}
	})
}

// FuzzAppendHTMLString checks AppendHTMLString against encoding/json.
func FuzzAppendHTMLString(f *testing.F) {
	f.Add("<a>&\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendHTMLString(nil, s)))
	})
}
