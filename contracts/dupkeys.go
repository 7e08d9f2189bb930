package contracts

import "github.com/supervaize/supervaizer-go/internal/wire"

// duplicateKey returns the location of the first key that appears twice in
// the same object of raw (keys compared after unescaping, so "\u0061ction"
// repeats "action"). Decoders disagree on which occurrence wins — encoding/json
// and the schema validator keep the last, a proxy may read the first — so the
// SDK refuses such documents instead of guessing. It runs only on the
// reference path: the fast path takes only documents without repeated keys
// ([wire.Tape.Plain]).
func duplicateKey(raw []byte) (loc []string, found bool) {
	t := wire.Get()
	defer wire.Put(t)
	if !t.Parse(raw) {
		return nil, false // not JSON: the caller reports it
	}
	return t.RepeatedKeyPath()
}
