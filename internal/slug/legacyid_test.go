package slug

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLegacyAgentID(t *testing.T) {
	// Expected ids computed with Python's uuid.uuid5 and shortuuid's base-57 encoding.
	tests := []struct {
		name, in, want string
	}{
		{"spec example", "Research Agent", "imussvG8U97vC93sU6egrt"},
		{"Python reference fixture", "agentName", "LMKyPAS2Q8sKWBY34DS37a"},
		{"slug is not the name", "research-agent", "iHNMyzvQqGT8pTChYQYij6"},
		{"UTF-8 name", "L'Équipe 2", "nZrGudhnaJTHjwNyLSyyb4"},
		{"empty name", "", "G2XvSSebd6Tc4bHMenwxLy"},
		{"padded with the zero digit", "Agent 59", "2BpGYMS4EpUPyx3zKTwHtA"},
		{"URL namespace", "https://example.com/agent", "9jqPRYw5DYKwUjkHLWkDNm"},
		{"URL namespace, any ASCII case", "HTTPS://Example.com/Agent", "gGRv9y3pEjFzxVCm7JbqpA"},
		{"URL namespace, http", "Http://x", "7sQ5u3eEZpGZFUuY76qJkY"},
		{"not a URL prefix", "http:/x", "E9LF8yzETqRhaC8ZA4rPp5"},
		{"long s is not s", "httpſ://x", "LiGrTH6gjQ5FExYBjvEUA6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := LegacyAgentID(tt.in)
			assert.Equal(t, tt.want, got)
			assert.Len(t, got, LegacyAgentIDLen)
		})
	}
}

func TestEncodeBase57(t *testing.T) {
	tests := []struct {
		hi, lo uint64
		want   string
	}{
		{0, 0, "2222222222222222222222"},
		{0, 56, "222222222222222222222z"},
		{0, 57, "2222222222222222222232"},
		{0, math.MaxUint64, "22222222222txLqViLENDx"},
		{1, 0, "22222222222txLqViLENDy"},
		{math.MaxUint64, math.MaxUint64, "oZEq7ovRbLq6UnGMPwc8B5"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, encodeBase57(tt.hi, tt.lo), "%#x:%#x", tt.hi, tt.lo)
	}
}

func FuzzLegacyAgentID(f *testing.F) {
	for _, s := range []string{"Research Agent", "agentName", "", "https://x", "HTTP://", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		id := LegacyAgentID(name)
		if len(id) != LegacyAgentIDLen {
			t.Fatalf("LegacyAgentID(%q) = %q: length %d", name, id, len(id))
		}
		for _, c := range id {
			if !strings.ContainsRune(legacyIDAlphabet, c) {
				t.Fatalf("LegacyAgentID(%q) = %q: %q is not in the alphabet", name, id, c)
			}
		}
		if again := LegacyAgentID(name); again != id {
			t.Fatalf("LegacyAgentID(%q) is not deterministic: %q then %q", name, id, again)
		}
	})
}

func BenchmarkLegacyAgentID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		LegacyAgentID("Research Agent")
	}
}
