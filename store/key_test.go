package store_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/store"
)

func TestKey(t *testing.T) {
	tests := []struct {
		name  string
		parts []string
		want  string
	}{
		{"one part", []string{"idempotency"}, "idempotency"},
		{"safe bytes kept", []string{"job.start", "research-agent", "setup_7f3c~1"}, "job.start/research-agent/setup_7f3c~1"},
		{"separator escaped", []string{"a/b", "c"}, "a%2Fb/c"},
		{"separator escaped in last part", []string{"a", "b/c"}, "a/b%2Fc"},
		{"escape character escaped", []string{"100%"}, "100%25"},
		{"an escape is not decoded", []string{"a%2Fb"}, "a%252Fb"},
		{"empty parts", []string{"", "x", ""}, "/x/"},
		{"one empty part", []string{""}, ""},
		{"space and controls", []string{"a b\t\x00"}, "a%20b%09%00"},
		{"non-ASCII", []string{"é", "\xff"}, "%C3%A9/%FF"},
		{"punctuation", []string{"a:b@c+d=e,f;g"}, "a%3Ab%40c%2Bd%3De%2Cf%3Bg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := store.Key(tt.parts[0], tt.parts[1:]...)
			assert.Equal(t, tt.want, got)
			parts, err := store.ParseKey(got)
			require.NoError(t, err)
			assert.Equal(t, tt.parts, parts)
		})
	}
}

func TestPrefix(t *testing.T) {
	assert.Empty(t, store.Prefix())
	assert.Equal(t, "a/", store.Prefix("a"))
	assert.Equal(t, "a%2Fb/c/", store.Prefix("a/b", "c"))
	assert.True(t, strings.HasPrefix(store.Key("a", "b", "c"), store.Prefix("a", "b")))
	assert.False(t, strings.HasPrefix(store.Key("a", "b"), store.Prefix("a", "b")), "a key is not under its own prefix")
	assert.False(t, strings.HasPrefix(store.Key("ab", "c"), store.Prefix("a")))
	assert.False(t, strings.HasPrefix(store.Key("a/b", "c"), store.Prefix("a")))
}

func TestParseKeyRejects(t *testing.T) {
	tests := []struct {
		name, key, wantMsg string
	}{
		{"unescaped space", "a b", `store: invalid key: unescaped byte 0x20 at offset 1`},
		{"unescaped byte in later part", "ok/a:b", `store: invalid key: unescaped byte 0x3A at offset 4`},
		{"unescaped byte after an escape", "x/%2F:", `store: invalid key: unescaped byte 0x3A at offset 5`},
		{"non-ASCII", "é", `store: invalid key: unescaped byte 0xC3 at offset 0`},
		{"truncated escape", "a/b%2", `store: invalid key: truncated escape "%2" at offset 3`},
		{"lone percent", "%", `store: invalid key: truncated escape "%" at offset 0`},
		{"lower-case hex", "a%2f", `store: invalid key: malformed escape "%2f" at offset 1`},
		{"not hex", "%G0", `store: invalid key: malformed escape "%G0" at offset 0`},
		{"needless escape", "%41", `store: invalid key: needless escape "%41" at offset 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts, err := store.ParseKey(tt.key)
			require.ErrorIs(t, err, store.ErrInvalidKey)
			assert.EqualError(t, err, tt.wantMsg)
			assert.Nil(t, parts)
		})
	}
}

// splitList turns fuzz input into a list of at least one part: the first
// byte is the delimiter, so every byte value can appear inside a part.
func splitList(data []byte) []string {
	if len(data) == 0 {
		return []string{""}
	}
	var parts []string
	for p := range bytes.SplitSeq(data[1:], data[:1]) {
		parts = append(parts, string(p))
	}
	return parts
}

func key(parts []string) string { return store.Key(parts[0], parts[1:]...) }

// FuzzKey checks that Key never maps two lists of parts to one key, that
// ParseKey inverts it, and that Prefix selects exactly the keys that extend
// its parts.
func FuzzKey(f *testing.F) {
	f.Add([]byte("/a/b/c"), []byte("/a/b%2Fc"))
	f.Add([]byte("|a/b|c"), []byte("|a|b/c"))
	f.Add([]byte("|a"), []byte("|a|"))
	f.Add([]byte("|"), []byte(""))
	f.Add([]byte("|a%2Fb|c"), []byte("|a/b|c"))
	f.Add([]byte(",x,\xff\x00"), []byte(",x"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		pa, pb := splitList(a), splitList(b)
		ka, kb := key(pa), key(pb)
		assert.Equal(t, slices.Equal(pa, pb), ka == kb, "parts %q and %q, keys %q and %q", pa, pb, ka, kb)

		got, err := store.ParseKey(ka)
		require.NoError(t, err)
		require.Equal(t, pa, got)

		extends := len(pb) > len(pa) && slices.Equal(pb[:len(pa)], pa)
		assert.Equal(t, extends, strings.HasPrefix(kb, store.Prefix(pa...)),
			"Prefix(%q) = %q, Key(%q) = %q", pa, store.Prefix(pa...), pb, kb)

		for i := range len(ka) {
			c := ka[i]
			assert.True(t, c > ' ' && c < 0x7f, "byte %q of %q is not printable ASCII", c, ka)
		}
	})
}

// FuzzParseKey checks that ParseKey never panics and accepts only what Key
// produces.
func FuzzParseKey(f *testing.F) {
	for _, seed := range []string{"", "a/b", "a%2Fb/c", "%", "%2", "%2f", "%41", "a//b", "%FF%00", "é"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts, err := store.ParseKey(s)
		if err != nil {
			assert.ErrorIs(t, err, store.ErrInvalidKey)
			return
		}
		require.NotEmpty(t, parts)
		assert.Equal(t, s, key(parts), "ParseKey(%q) = %q", s, parts)
	})
}
