package contracts

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// duplicateKey returns the location of the first key (in document order)
// that repeats an earlier key of its object in raw (keys compared after
// unescaping, so "\u0061ction" repeats "action"). Decoders disagree on which
// occurrence wins — encoding/json and the schema validator keep the last, a
// proxy may read the first — so the SDK refuses such documents instead of
// guessing.
//
// Keys are read by encoding/json's token decoder, so a document with invalid
// UTF-8 is read as encoding/json reads it: each such byte is U+FFFD (so
// "\xff" and "\xfe" are the same key). found is false as well when raw is not
// JSON: the caller reports that.
func duplicateKey(raw []byte) (loc []string, found bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	loc, found, err := repeatedIn(d, nil)
	if err != nil || !found {
		return nil, false
	}
	return loc, true
}

// repeatedIn reads one value from d; loc is the location of that value.
func repeatedIn(d *json.Decoder, loc []string) (_ []string, found bool, _ error) {
	tok, err := d.Token()
	if err != nil {
		return nil, false, err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]struct{}{}
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return nil, false, err
			}
			k, _ := kt.(string)
			if _, dup := seen[k]; dup {
				return append(loc, k), true, nil
			}
			seen[k] = struct{}{}
			if at, found, err := repeatedIn(d, append(loc[:len(loc):len(loc)], k)); found || err != nil {
				return at, found, err
			}
		}
	case json.Delim('['):
		for i := 0; d.More(); i++ {
			if at, found, err := repeatedIn(d, append(loc[:len(loc):len(loc)], strconv.Itoa(i))); found || err != nil {
				return at, found, err
			}
		}
	default:
		return nil, false, nil
	}
	_, err = d.Token() // the closing delimiter
	return nil, false, err
}
