package wsauth

import "crypto/ed25519"

// verifyKey is a trusted Ed25519 public key. jwt/v5's EdDSA method checks
// signatures with it (crypto/ed25519): a key that is not 32 bytes is
// invalid_key, any other failure (a key that is not a curve point
// included) bad_signature.
type verifyKey struct {
	raw ed25519.PublicKey
	// jwt is raw as the key function hands it to jwt/v5's parser, boxed
	// once here instead of on every verification.
	jwt any
}

// newVerifyKey wraps raw; raw must not be modified afterwards.
func newVerifyKey(raw ed25519.PublicKey) *verifyKey { return &verifyKey{raw: raw, jwt: raw} }

// equal reports whether k and o hold the same public key.
func (k *verifyKey) equal(o *verifyKey) bool { return k.raw.Equal(o.raw) }
