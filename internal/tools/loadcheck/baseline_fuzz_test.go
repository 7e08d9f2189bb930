package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/loadcheck/fixture"
)

// FuzzSignatureVerifies holds the verifying baseline's token check to a
// plain reading of a compact JWS: "Bearer ", exactly three segments, the
// third the base64url (unpadded) of a 64-byte signature that the key
// verifies over the first two. Any header, a mutated real token included,
// gets the same answer from both, and nothing panics.
func FuzzSignatureVerifies(f *testing.F) {
	key, err := parseVerifyKey([]byte(fixture.PublicKeyPEM()))
	require.NoError(f, err)
	good := mustToken(f)
	for _, seed := range []string{"Bearer " + good, good, "Bearer " + good + ".", "Bearer " + good[:len(good)-2],
		"Bearer ..", "Bearer a.b.c", "bearer " + good, "Bearer " + strings.Replace(good, ".", "..", 1), ""} {
		f.Add(seed)
	}
	reference := func(header string) bool {
		if !strings.HasPrefix(header, "Bearer ") {
			return false
		}
		parts := strings.Split(header[len("Bearer "):], ".")
		if len(parts) != 3 {
			return false
		}
		sig, err := base64.RawURLEncoding.DecodeString(parts[2])
		if err != nil || len(sig) != ed25519.SignatureSize {
			return false
		}
		return ed25519.Verify(key, []byte(parts[0]+"."+parts[1]), sig)
	}
	assert.True(f, signatureVerifies(key, "Bearer "+good), "the seed token verifies")
	f.Fuzz(func(t *testing.T, header string) {
		if got, want := signatureVerifies(key, header), reference(header); got != want {
			t.Fatalf("signatureVerifies(%q) = %v, the plain reading says %v", header, got, want)
		}
	})
}
