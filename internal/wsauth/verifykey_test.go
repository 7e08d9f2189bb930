package wsauth

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// groupOrder is L, the order of the Ed25519 base point.
var groupOrder, _ = new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)

// scalarBytes encodes n as 32 little-endian bytes (n < 2^256).
func scalarBytes(n *big.Int) []byte {
	be := n.FillBytes(make([]byte, 32))
	le := make([]byte, 32)
	for i, b := range be {
		le[31-i] = b
	}
	return le
}

// scalarInt decodes 32 little-endian bytes.
func scalarInt(le []byte) *big.Int {
	be := make([]byte, len(le))
	for i, b := range le {
		be[len(le)-1-i] = b
	}
	return new(big.Int).SetBytes(be)
}

// pointEncodings are public key and R encodings that implementations are known
// to treat differently: the eight small-order points, non-canonical encodings
// (y ≥ p, and x = 0 with the sign bit set), points off the curve, and an
// ordinary point.
var pointEncodings = func() map[string][]byte {
	m := map[string][]byte{}
	for name, h := range map[string]string{
		"identity":                 "0100000000000000000000000000000000000000000000000000000000000000",
		"identity, sign bit":       "0100000000000000000000000000000000000000000000000000000000000080",
		"identity, y = p + 1":      "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"identity, y = p + 1 sign": "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
		"order 2":                  "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"order 2, sign bit":        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
		"order 4":                  "0000000000000000000000000000000000000000000000000000000000000000",
		"order 4, sign bit":        "0000000000000000000000000000000000000000000000000000000000000080",
		"order 4, y = p":           "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"order 4, y = p sign":      "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
		"order 8 a":                "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
		"order 8 a, sign bit":      "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
		"order 8 b":                "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
		"order 8 b, sign bit":      "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
		"y = 2 (off the curve)":    "0200000000000000000000000000000000000000000000000000000000000000",
		"all ones":                 "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	} {
		b, err := hex.DecodeString(h)
		if err != nil {
			panic(err)
		}
		m[name] = b
	}
	m["main key"] = mainKey.pub
	m["other key"] = otherKey.pub
	return m
}()

// signingInput is the header and payload of a valid token: the message of
// the signature tests.
var signingInput = func() string {
	h, err := json.Marshal(validHeader())
	if err != nil {
		panic(err)
	}
	c, err := json.Marshal(validClaims())
	if err != nil {
		panic(err)
	}
	return b64(h) + "." + b64(c)
}()

// verifySignature verifies the token signingInput.sig with pub as the
// trusted key, through the verifier (jwt/v5's parser and EdDSA method)
// without its cache, and returns its error.
func verifySignature(t *testing.T, pub, sig []byte) *Error {
	t.Helper()
	v := newPEMVerifier(t, WithCacheSize(0))
	v.pemKey = newVerifyKey(pub)
	_, err := v.Verify(context.Background(), testRequest(signingInput+"."+b64(sig)))
	if err == nil {
		return nil
	}
	var e *Error
	require.ErrorAs(t, err, &e)
	return e
}

// assertSameVerdict checks that the verifier agrees with
// crypto/ed25519.Verify on (pub, signingInput, sig) and returns the verdict.
func assertSameVerdict(t *testing.T, pub, sig []byte) bool {
	t.Helper()
	msg := []byte(signingInput)
	want := ed25519.Verify(pub, msg, sig)
	e := verifySignature(t, pub, sig)
	if want {
		assert.Nil(t, e, "crypto/ed25519 accepts pub=%x sig=%x", pub, sig)
	} else if assert.NotNil(t, e, "crypto/ed25519 rejects pub=%x sig=%x", pub, sig) {
		assert.Equal(t, CodeBadSignature, e.Code)
	}
	return want
}

// TestVerifyKeyEdgeVectors compares the verifier with crypto/ed25519 on every pair of edge encodings as public key and R, with S
// at the edges of [0, L] and beyond.
func TestVerifyKeyEdgeVectors(t *testing.T) {
	t.Parallel()
	msg := []byte(signingInput)
	sValues := map[string][]byte{
		"0":       make([]byte, 32),
		"1":       scalarBytes(big.NewInt(1)),
		"L - 1":   scalarBytes(new(big.Int).Sub(groupOrder, big.NewInt(1))),
		"L":       scalarBytes(groupOrder),
		"L + 1":   scalarBytes(new(big.Int).Add(groupOrder, big.NewInt(1))),
		"2^255-1": scalarBytes(new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(1))),
	}
	accepted := 0
	for aName, a := range pointEncodings {
		for rName, r := range pointEncodings {
			for sName, s := range sValues {
				sig := append(append([]byte{}, r...), s...)
				if assertSameVerdict(t, a, sig) {
					accepted++
					t.Logf("accepted: A=%s R=%s S=%s", aName, rName, sName)
				}
			}
		}
	}
	// A = R = identity with S = 0 verifies under the cofactorless equation
	// (SB − hA = O, encoded as R); so must it here.
	assert.Positive(t, accepted)
	require.True(t, ed25519.Verify(pointEncodings["identity"], msg, append(append([]byte{}, pointEncodings["identity"]...), make([]byte, 32)...)))
}

// TestVerifyKeyKnownSignatures checks valid signatures, their malleated
// forms and malformed lengths against crypto/ed25519.
func TestVerifyKeyKnownSignatures(t *testing.T) {
	t.Parallel()
	sig := ed25519.Sign(mainKey.priv, []byte(signingInput))
	sPlusL := new(big.Int).Add(scalarInt(sig[32:]), groupOrder)
	malleated := append(append([]byte{}, sig[:32]...), scalarBytes(sPlusL)...)
	tests := []struct {
		name string
		pub  []byte
		sig  []byte
		want bool
	}{
		{"valid", mainKey.pub, sig, true},
		{"other key", otherKey.pub, sig, false},
		{"S + L", mainKey.pub, malleated, false},
		{"truncated", mainKey.pub, sig[:63], false},
		{"extended", mainKey.pub, append(append([]byte{}, sig...), 0), false},
		{"empty", mainKey.pub, nil, false},
		{"R bit flipped", mainKey.pub, flipBit(sig, 3), false},
		{"S bit flipped", mainKey.pub, flipBit(sig, 300), false},
		{"sign bit of R flipped", mainKey.pub, flipBit(sig, 255), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, assertSameVerdict(t, tt.pub, tt.sig))
		})
	}
	e := verifySignature(t, mainKey.pub[:31], sig)
	require.NotNil(t, e)
	assert.Equal(t, CodeInvalidKey, e.Code, "a key of the wrong size is invalid_key")
}

// TestVerifyKeyUndecodableKeyFailsClosed: a 32-byte key that is not a curve
// point verifies nothing, with bad_signature.
func TestVerifyKeyUndecodableKeyFailsClosed(t *testing.T) {
	t.Parallel()
	e := verifySignature(t, pointEncodings["y = 2 (off the curve)"], make([]byte, 64))
	require.NotNil(t, e)
	assert.Equal(t, CodeBadSignature, e.Code)
}

func flipBit(b []byte, bit int) []byte {
	c := append([]byte{}, b...)
	c[bit/8] ^= 1 << (bit % 8)
	return c
}
