package slug

import (
	"encoding/binary"
	"math/bits"

	"github.com/google/uuid"
)

// legacyIDAlphabet is the base-57 alphabet of the legacy agent id (shortuuid's default
// alphabet: digits and letters without 0, 1, I, O and l).
const legacyIDAlphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// LegacyAgentIDLen is the length of every id returned by LegacyAgentID: 22 base-57 digits
// hold any 128-bit value (57^22 > 2^128).
const LegacyAgentIDLen = 22

// LegacyAgentID returns the legacy agent id derived from an agent name (a base-57 UUIDv5),
// the `id` of the agent registration payload, which is not the v2 agent.id.
//
// It is the UUIDv5 of name (its bytes, normally UTF-8) in the DNS namespace, or in the URL
// namespace when name starts with "http://" or "https://" in any ASCII case, read as a 128-bit
// integer and written in base 57 with the alphabet
// "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", most significant digit first,
// left-padded with '2' (the zero digit) to LegacyAgentIDLen characters. For "Research Agent" it
// is "imussvG8U97vC93sU6egrt". Renaming an agent changes its id.
func LegacyAgentID(name string) string {
	ns := uuid.NameSpaceDNS
	if hasPrefixFoldASCII(name, "http://") || hasPrefixFoldASCII(name, "https://") {
		ns = uuid.NameSpaceURL
	}
	u := uuid.NewSHA1(ns, []byte(name))
	return encodeBase57(binary.BigEndian.Uint64(u[:8]), binary.BigEndian.Uint64(u[8:]))
}

// encodeBase57 writes the 128-bit value hi:lo in base 57 with legacyIDAlphabet, most
// significant digit first, left-padded with the zero digit '2' to LegacyAgentIDLen characters.
func encodeBase57(hi, lo uint64) string {
	const base = uint64(len(legacyIDAlphabet))
	var out [LegacyAgentIDLen]byte
	for i := len(out) - 1; i >= 0; i-- {
		// Divide the 128-bit value hi:lo by base; the remainder is the next digit.
		var rem uint64
		hi, rem = bits.Div64(0, hi, base)
		lo, rem = bits.Div64(rem, lo, base)
		out[i] = legacyIDAlphabet[rem]
	}
	return string(out[:])
}

// hasPrefixFoldASCII reports whether s starts with the lowercase ASCII prefix, ignoring the
// case of ASCII letters only. Python's str.lower() maps no non-ASCII character to an ASCII
// letter of "http" or "https", so this matches name.lower().startswith(prefix), unlike
// strings.EqualFold, which would also accept U+017F LATIN SMALL LETTER LONG S for 's'.
func hasPrefixFoldASCII(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}
