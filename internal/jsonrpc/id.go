package jsonrpc

import (
	"bytes"

	"github.com/supervaize/supervaizer-go/internal/wire"
)

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
	intPart := lit[p:wire.SkipDigits(lit, p)]
	p += len(intPart)
	var frac []byte
	if p < len(lit) && lit[p] == '.' {
		p++
		frac = lit[p:wire.SkipDigits(lit, p)]
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
