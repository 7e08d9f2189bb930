package wsauth

import "crypto/ed25519"

// verifyKey is a trusted Ed25519 public key.
type verifyKey struct {
	raw ed25519.PublicKey
}

// newVerifyKey wraps raw; raw must not be modified afterwards.
func newVerifyKey(raw ed25519.PublicKey) *verifyKey { return &verifyKey{raw: raw} }

// equal reports whether k and o hold the same public key.
func (k *verifyKey) equal(o *verifyKey) bool { return k.raw.Equal(o.raw) }

// verify is step 8: the Ed25519 signature sig of msg, checked with
// crypto/ed25519. A key that is not 32 bytes is invalid_key, any other
// failure (a key that is not a curve point included) bad_signature.
func (k *verifyKey) verify(msg string, sig []byte) *Error {
	if len(k.raw) != ed25519.PublicKeySize {
		return fail(CodeInvalidKey)
	}
	if !ed25519.Verify(k.raw, []byte(msg), sig) {
		return fail(CodeBadSignature)
	}
	return nil
}
