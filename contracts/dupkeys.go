package contracts

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// duplicateKey returns the location of the first key that appears twice in
// the same object of raw (keys compared after unescaping, so "\u0061ction"
// repeats "action"). Decoders disagree on which occurrence wins — encoding/json
// and the schema validator keep the last, a proxy may read the first — so the
// SDK refuses such documents instead of guessing. It runs only on the slow
// path: the fast path's parser already refuses duplicates.
func duplicateKey(raw []byte) (loc []string, found bool) {
	type frame struct {
		object  bool
		keys    map[string]struct{}
		wantKey bool   // object: the next string token is a key
		at      string // the key or index of the current member
		index   int    // array: the next element's index
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []*frame
	path := func() []string {
		out := make([]string, 0, len(stack))
		for _, f := range stack {
			out = append(out, f.at)
		}
		return out
	}
	// value marks that a complete value was read in the current frame.
	value := func() {
		if len(stack) == 0 {
			return
		}
		top := stack[len(stack)-1]
		if top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, false // not JSON: the caller reports it
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
			if !top.object {
				top.at = strconv.Itoa(top.index)
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &frame{object: true, keys: map[string]struct{}{}, wantKey: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				value()
			}
		case string:
			if top != nil && top.object && top.wantKey {
				if _, dup := top.keys[t]; dup {
					top.at = t
					return path(), true
				}
				top.keys[t] = struct{}{}
				top.at, top.wantKey = t, false
				continue
			}
			value()
		default:
			value()
		}
		if len(stack) == 0 && !dec.More() {
			return nil, false
		}
	}
}
