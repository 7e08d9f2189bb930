package contracts

import (
	"bytes"
	"encoding/json"
	"math/big"
	"sync"
	"unicode/utf8"
)

// This file holds the tape: a JSON document parsed once into a flat list of
// nodes that point into the source bytes. The compiled validator
// (compiled.go) and the request decoder (fastpath.go) read it instead of
// decoding the document into maps and interfaces, which is most of what a
// request used to cost.
//
// The tape only takes documents whose meaning is unambiguous. parse refuses
// (and the caller then uses the reference path: jsonschema on the decoded
// value, then encoding/json) a document that is not valid JSON, is not valid
// UTF-8 (encoding/json would replace the invalid bytes), nests deeper than
// maxTapeDepth, has an object key with an escape sequence, or has an object
// with two equal keys (encoding/json keeps the last one).

// JSON value kinds on the tape.
const (
	kindNull uint8 = iota
	kindFalse
	kindTrue
	kindNumber
	kindString
	kindObject
	kindArray
)

// maxTapeDepth bounds nesting; deeper documents take the reference path.
const maxTapeDepth = 256

// maxTapeBytes bounds the documents the tape takes (offsets are int32).
const maxTapeBytes = 1 << 30

// maxScanKeys is the size of an object up to which duplicate keys are found
// by comparing every pair; larger objects use a map.
const maxScanKeys = 16

// jnode is one value on the tape. An object's children are its members, key
// then value; an array's children are its elements.
type jnode struct {
	start, end int32 // the value's bytes: src[start:end], quotes included for strings
	next       int32 // index of the node after this value and its children
	n          int32 // members of an object, elements of an array
	kind       uint8
	esc        bool // a string with at least one escape sequence
	plainInt   bool // a number written without fraction or exponent
}

// tape is a parsed document. It is not safe for concurrent use; get one
// from tapes and put it back when done.
type tape struct {
	src   []byte
	nodes []jnode
	keys  map[string]struct{} // scratch for duplicate detection in large objects
}

var tapes = sync.Pool{New: func() any { return &tape{nodes: make([]jnode, 0, 64)} }}

func getTape() *tape { return tapes.Get().(*tape) }

func putTape(t *tape) {
	if cap(t.nodes) > 1<<16 { // do not keep a huge tape alive
		return
	}
	t.src = nil
	t.nodes = t.nodes[:0]
	tapes.Put(t)
}

// parse reads src into t. It returns false when src is not a document the
// tape takes (see the top of this file); t is then unusable.
func (t *tape) parse(src []byte) bool {
	t.src = src
	t.nodes = t.nodes[:0]
	if len(src) > maxTapeBytes || !utf8.Valid(src) {
		return false
	}
	p := tapeParser{t: t, s: src}
	p.space()
	if !p.value(0) {
		return false
	}
	p.space()
	return p.i == len(src)
}

type tapeParser struct {
	t *tape
	s []byte
	i int
}

func (p *tapeParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *tapeParser) value(depth int) bool {
	if p.i >= len(p.s) || depth > maxTapeDepth {
		return false
	}
	switch c := p.s[p.i]; c {
	case '{':
		return p.object(depth)
	case '[':
		return p.array(depth)
	case '"':
		return p.string()
	case 't':
		return p.literal("true", kindTrue)
	case 'f':
		return p.literal("false", kindFalse)
	case 'n':
		return p.literal("null", kindNull)
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return p.number()
		}
		return false
	}
}

func (p *tapeParser) push(kind uint8) int {
	p.t.nodes = append(p.t.nodes, jnode{kind: kind, start: int32(p.i)})
	return len(p.t.nodes) - 1
}

func (p *tapeParser) close(idx int, n int32) {
	nd := &p.t.nodes[idx]
	nd.end = int32(p.i)
	nd.next = int32(len(p.t.nodes))
	nd.n = n
}

func (p *tapeParser) literal(lit string, kind uint8) bool {
	if !bytes.HasPrefix(p.s[p.i:], []byte(lit)) {
		return false
	}
	idx := p.push(kind)
	p.i += len(lit)
	p.close(idx, 0)
	return true
}

func (p *tapeParser) number() bool {
	idx := p.push(kindNumber)
	s := p.s
	if s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(s) && s[p.i] == '0':
		p.i++
	case p.i < len(s) && '1' <= s[p.i] && s[p.i] <= '9':
		p.i = skipDigits(s, p.i)
	default:
		return false
	}
	plain := true
	if p.i < len(s) && s[p.i] == '.' {
		plain = false
		j := skipDigits(s, p.i+1)
		if j == p.i+1 {
			return false
		}
		p.i = j
	}
	if p.i < len(s) && (s[p.i] == 'e' || s[p.i] == 'E') {
		plain = false
		p.i++
		if p.i < len(s) && (s[p.i] == '+' || s[p.i] == '-') {
			p.i++
		}
		j := skipDigits(s, p.i)
		if j == p.i {
			return false
		}
		p.i = j
	}
	p.close(idx, 0)
	p.t.nodes[idx].plainInt = plain
	return true
}

func skipDigits(s []byte, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// string reads a string literal; control characters and unknown escapes are
// refused, as encoding/json does.
func (p *tapeParser) string() bool {
	idx := p.push(kindString)
	s := p.s
	p.i++ // opening quote
	esc := false
	for p.i < len(s) {
		c := s[p.i]
		switch {
		case c == '"':
			p.i++
			p.close(idx, 0)
			p.t.nodes[idx].esc = esc
			return true
		case c < 0x20:
			return false
		case c == '\\':
			esc = true
			if p.i+1 >= len(s) {
				return false
			}
			switch s[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(s) {
					return false
				}
				for _, h := range s[p.i+2 : p.i+6] {
					if !isHex(h) {
						return false
					}
				}
				p.i += 6
			default:
				return false
			}
		default:
			p.i++
		}
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (p *tapeParser) object(depth int) bool {
	idx := p.push(kindObject)
	p.i++
	p.space()
	var n int32
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		p.close(idx, 0)
		return true
	}
	for {
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return false
		}
		k := len(p.t.nodes)
		if !p.string() || p.t.nodes[k].esc {
			return false
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return false
		}
		p.i++
		p.space()
		if !p.value(depth + 1) {
			return false
		}
		n++
		p.space()
		if p.i >= len(p.s) {
			return false
		}
		if p.s[p.i] == ',' {
			p.i++
			p.space()
			continue
		}
		if p.s[p.i] != '}' {
			return false
		}
		p.i++
		p.close(idx, n)
		return !p.t.hasDuplicateKeys(idx)
	}
}

func (p *tapeParser) array(depth int) bool {
	idx := p.push(kindArray)
	p.i++
	p.space()
	var n int32
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		p.close(idx, 0)
		return true
	}
	for {
		if !p.value(depth + 1) {
			return false
		}
		n++
		p.space()
		if p.i >= len(p.s) {
			return false
		}
		if p.s[p.i] == ',' {
			p.i++
			p.space()
			continue
		}
		if p.s[p.i] != ']' {
			return false
		}
		p.i++
		p.close(idx, n)
		return true
	}
}

// hasDuplicateKeys reports whether the object at idx has two equal keys.
// Keys have no escapes (parse refuses them), so equal bytes are equal keys.
func (t *tape) hasDuplicateKeys(idx int) bool {
	nd := t.nodes[idx]
	if nd.n < 2 {
		return false
	}
	if nd.n <= maxScanKeys {
		var keys [maxScanKeys]int32
		k := 0
		for m := int32(idx + 1); m < nd.next; m = t.nodes[m+1].next {
			key := t.key(m)
			for _, prev := range keys[:k] {
				if bytes.Equal(t.key(prev), key) {
					return true
				}
			}
			keys[k] = m
			k++
		}
		return false
	}
	if t.keys == nil {
		t.keys = make(map[string]struct{}, nd.n)
	}
	defer clear(t.keys)
	for m := int32(idx + 1); m < nd.next; m = t.nodes[m+1].next {
		key := t.key(m)
		if _, dup := t.keys[string(key)]; dup {
			return true
		}
		t.keys[string(key)] = struct{}{}
	}
	return false
}

// key returns the bytes of the key node at i (without quotes).
func (t *tape) key(i int32) []byte {
	nd := t.nodes[i]
	return t.src[nd.start+1 : nd.end-1]
}

// raw returns the bytes of the value at i.
func (t *tape) raw(i int32) []byte {
	nd := t.nodes[i]
	return t.src[nd.start:nd.end]
}

// str returns the decoded bytes of the string at i: a view of the source
// when it has no escapes, else a decoded copy (encoding/json's unquoting).
func (t *tape) str(i int32) []byte {
	nd := t.nodes[i]
	if !nd.esc {
		return t.src[nd.start+1 : nd.end-1]
	}
	var s string
	if json.Unmarshal(t.src[nd.start:nd.end], &s) != nil { // unreachable: parse checked the literal
		return nil
	}
	return []byte(s)
}

// rat returns the value of the number at i, or nil when math/big cannot
// represent it (an exponent too large).
func (t *tape) rat(i int32) *big.Rat {
	r, ok := new(big.Rat).SetString(string(t.raw(i)))
	if !ok {
		return nil
	}
	return r
}

// smallInt returns the value of a plain integer of at most 18 digits.
func (t *tape) smallInt(i int32) (int64, bool) {
	if !t.nodes[i].plainInt {
		return 0, false
	}
	b := t.raw(i)
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// isInteger reports whether the number at i has an integral value, as
// JSON Schema's "integer" type reads it (2.0 and 1e3 are integers). ok is
// false when math/big cannot tell.
func (t *tape) isInteger(i int32) (integer, ok bool) {
	if t.nodes[i].plainInt {
		return true, true
	}
	r := t.rat(i)
	if r == nil {
		return false, false
	}
	return r.IsInt(), true
}

// member returns the value node of key name in the object at obj.
func (t *tape) member(obj int32, name []byte) (int32, bool) {
	nd := t.nodes[obj]
	for m := obj + 1; m < nd.next; m = t.nodes[m+1].next {
		if bytes.Equal(t.key(m), name) {
			return m + 1, true
		}
	}
	return 0, false
}

// equal reports whether the values at i and j are equal as JSON Schema
// compares them (numbers by value, objects regardless of member order). ok
// is false when a number cannot be compared.
func (t *tape) equal(i, j int32) (eq, ok bool) {
	a, b := t.nodes[i], t.nodes[j]
	if a.kind != b.kind {
		return false, true
	}
	switch a.kind {
	case kindNull, kindFalse, kindTrue:
		return true, true
	case kindString:
		return bytes.Equal(t.str(i), t.str(j)), true
	case kindNumber:
		if bytes.Equal(t.raw(i), t.raw(j)) {
			return true, true
		}
		x, y := t.rat(i), t.rat(j)
		if x == nil || y == nil {
			return false, false
		}
		return x.Cmp(y) == 0, true
	case kindArray:
		if a.n != b.n {
			return false, true
		}
		for x, y := i+1, j+1; x < a.next; x, y = t.nodes[x].next, t.nodes[y].next {
			if eq, ok := t.equal(x, y); !eq || !ok {
				return eq, ok
			}
		}
		return true, true
	default: // object
		if a.n != b.n {
			return false, true
		}
		for m := i + 1; m < a.next; m = t.nodes[m+1].next {
			v, found := t.member(j, t.key(m))
			if !found {
				return false, true
			}
			if eq, ok := t.equal(m+1, v); !eq || !ok {
				return eq, ok
			}
		}
		return true, true
	}
}
