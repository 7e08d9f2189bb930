package jsonrpc

import (
	"bytes"
	"encoding/json"
)

// scanner walks a body that is already known to be valid JSON, so it only
// finds value boundaries and never reports syntax errors.
type scanner struct {
	data []byte
	pos  int
}

// skipSpace advances past JSON whitespace.
func (s *scanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// scanString advances past the string literal at pos and returns it,
// quotes included, with its capacity clipped.
func (s *scanner) scanString() []byte {
	start := s.pos
	i := start + 1
	for {
		i += bytes.IndexByte(s.data[i:], '"')
		// The quote ends the string unless an odd number of backslashes precede it.
		backslashes := 0
		for k := i - 1; s.data[k] == '\\'; k-- {
			backslashes++
		}
		i++
		if backslashes%2 == 0 {
			break
		}
	}
	s.pos = i
	return s.data[start:i:i]
}

// skipValue advances past the value at pos.
func (s *scanner) skipValue() {
	switch s.data[s.pos] {
	case '"':
		s.scanString()
	case '{', '[':
		depth := 0
		for {
			switch s.data[s.pos] {
			case '"':
				s.scanString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.pos++
					return
				}
			}
			s.pos++
		}
	default: // number, true, false or null
		for s.pos < len(s.data) {
			switch s.data[s.pos] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			s.pos++
		}
	}
}

// unquote returns the content of the valid string literal lit. Without
// escapes it is a subslice of lit; otherwise it is decoded into a new slice
// (a lone surrogate escape becomes U+FFFD, as in encoding/json).
func unquote(lit []byte) []byte {
	inner := lit[1 : len(lit)-1 : len(lit)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		// Unreachable for a valid literal; keep the raw content rather than fail.
		return inner
	}
	return []byte(s)
}

// keySet records object keys to detect duplicates. The first few keys are
// compared linearly without allocating; more keys go to a map so that a body
// with many keys stays linear.
type keySet struct {
	n     int
	small [8][]byte
	big   map[string]struct{}
}

// add records key and reports whether it was already present.
func (k *keySet) add(key []byte) (duplicate bool) {
	if k.big == nil {
		for _, prev := range k.small[:k.n] {
			if bytes.Equal(prev, key) {
				return true
			}
		}
		if k.n < len(k.small) {
			k.small[k.n] = key
			k.n++
			return false
		}
		k.big = make(map[string]struct{}, 4*len(k.small))
		for _, prev := range k.small {
			k.big[string(prev)] = struct{}{}
		}
	}
	if _, ok := k.big[string(key)]; ok {
		return true
	}
	k.big[string(key)] = struct{}{}
	return false
}

// normalizeID returns the normalized form of the valid JSON value v used as
// an id (see [Request.ID]), or the problem that makes it invalid.
func normalizeID(v []byte) ([]byte, *Detail) {
	switch c := v[0]; {
	case c == '"':
		return v, nil
	case c == 'n':
		return nil, nil
	case c == '-' || ('0' <= c && c <= '9'):
		return normalizeNumber(v)
	default: // true, false, array or object
		d := keyDetail(keyID, "must be a string, an integer or null", DetailTypeTypeError)
		return nil, &d
	}
}

// normalizeNumber returns the integer literal equal to the valid JSON number
// lit, or the problem when lit is fractional or expands beyond MaxIDDigits.
func normalizeNumber(lit []byte) ([]byte, *Detail) {
	neg := lit[0] == '-'
	p := 0
	if neg {
		p++
	}
	intPart := lit[p:skipDigits(lit, p)]
	p += len(intPart)
	var frac []byte
	if p < len(lit) && lit[p] == '.' {
		p++
		frac = lit[p:skipDigits(lit, p)]
		p += len(frac)
	}
	if p == len(lit) && frac == nil { // plain integer: kept as received
		if neg && string(intPart) == "0" {
			return []byte("0"), nil
		}
		return lit, nil
	}

	var exp int64
	if p < len(lit) { // 'e' or 'E'
		p++
		expNeg := lit[p] == '-'
		if lit[p] == '-' || lit[p] == '+' {
			p++
		}
		for _, c := range lit[p:] {
			// Saturate: beyond 2^40 the value is fractional or too large anyway.
			if exp < 1<<40 {
				exp = exp*10 + int64(c-'0')
			}
		}
		if expNeg {
			exp = -exp
		}
	}

	// lit = mantissa × 10^(exp - len(frac)), mantissa = intPart followed by frac.
	mantissa := make([]byte, 0, len(intPart)+len(frac))
	mantissa = append(append(mantissa, intPart...), frac...)
	mantissa = bytes.TrimLeft(mantissa, "0")
	if len(mantissa) == 0 {
		return []byte("0"), nil
	}
	significant := bytes.TrimRight(mantissa, "0")
	scale := exp - int64(len(frac)) + int64(len(mantissa)-len(significant))
	if scale < 0 {
		d := keyDetail(keyID, "must be an integer, not a fractional number", DetailTypeTypeError)
		return nil, &d
	}
	if int64(len(significant))+scale > MaxIDDigits {
		d := keyDetail(keyID, "integer is too large", DetailTypeValueError)
		return nil, &d
	}
	out := make([]byte, 0, 1+len(significant)+int(scale))
	if neg {
		out = append(out, '-')
	}
	out = append(out, significant...)
	for range scale {
		out = append(out, '0')
	}
	return out, nil
}

// skipDigits returns the index of the first non-digit in b at or after i.
func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
