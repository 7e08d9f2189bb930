package contracts

import (
	"unicode/utf8"

	"github.com/supervaize/supervaizer-go/internal/wire"
)

// duplicateKey returns the location of the first key that appears twice in
// the same object of raw (keys compared after unescaping, so "\u0061ction"
// repeats "action"). Decoders disagree on which occurrence wins — encoding/json
// and the schema validator keep the last, a proxy may read the first — so the
// SDK refuses such documents instead of guessing. It runs only on the
// reference path: the fast path takes only documents without repeated keys
// ([wire.Tape.Plain]).
//
// A document with invalid UTF-8, which the tape does not take, is read as
// encoding/json reads it: each such byte is U+FFFD (so "\xff" and "\xfe"
// are the same key).
func duplicateKey(raw []byte) (loc []string, found bool) {
	t := wire.Get()
	defer wire.Put(t)
	if !utf8.Valid(raw) {
		raw = replaceInvalidUTF8(raw)
	}
	if !t.Parse(raw) {
		return nil, false // not JSON: the caller reports it
	}
	return t.RepeatedKeyPath()
}

// replaceInvalidUTF8 returns a copy of raw with each byte that does not
// belong to a valid UTF-8 sequence replaced by U+FFFD, as encoding/json
// decodes such bytes in a string.
func replaceInvalidUTF8(raw []byte) []byte {
	out := make([]byte, 0, len(raw)+16)
	for i := 0; i < len(raw); {
		r, size := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, raw[i:i+size]...)
		}
		i += size
	}
	return out
}
