// Package wire holds the SDK's one JSON tape: a document parsed once into a
// flat list of nodes that point into its bytes. Everything that reads JSON on
// the request path reads the tape: the JSON-RPC envelope
// (internal/jsonrpc), the request models and the agent's input (the
// compiled validator and the request decoder of internal/validate), and the
// duplicate-key check. The reference path of package contracts, which
// imports nothing of the SDK, reads with encoding/json and
// santhosh-tekuri/jsonschema instead. The payload of a workspace token is
// the one exception: golang-jwt's parser checks it with encoding/json
// first, and package wsauth then reads it in one pass, without a tape,
// unless it holds an escape sequence.
//
// Parse accepts exactly the documents encoding/json accepts (json.Valid)
// that are also valid UTF-8: a body it refuses is a parse error. What a
// document holds that the fast paths do not judge (a key given twice, a key
// with an escape sequence, deep nesting) is recorded on the tape (see
// [Tape.Plain]); the caller then asks the reference validator.
package wire

import (
	"bytes"
	"encoding/json"
	"math/big"
	"sync"
	"unicode/utf8"
)

// Kind is the kind of a JSON value.
type Kind uint8

// JSON value kinds.
const (
	Null Kind = iota
	False
	True
	Number
	String
	Object
	Array
)

// MaxDepth is the deepest nesting of arrays and objects Parse accepts, as
// encoding/json.
const MaxDepth = 10000

// PlainDepth is the deepest nesting of a plain document (see [Tape.Plain]).
const PlainDepth = 256

// maxBytes bounds the documents Parse takes (offsets are int32).
const maxBytes = 1 << 30

// maxScanKeys is the size of an object up to which repeated keys are found by
// comparing every pair; larger objects use a map.
const maxScanKeys = 16

// Node is one value on the tape. An object's children are its members, key
// then value; an array's children are its elements.
type Node struct {
	Start, End int32 // the value's bytes: Src[Start:End], quotes included for strings
	Next       int32 // index of the node after this value and its children
	N          int32 // members of an object, elements of an array
	Kind       Kind
	Esc        bool // a string with at least one escape sequence
	PlainInt   bool // a number written without fraction or exponent
}

// Tape is a parsed document. It is not safe for concurrent use; get one
// with [Get] and give it back with [Put] when done.
type Tape struct {
	Src   []byte
	Nodes []Node
	// Depth is the deepest nesting of arrays and objects (0 for a scalar).
	Depth int
	// Repeated records that some object has a key twice (compared after
	// unescaping); EscapedKey that some key has an escape sequence.
	Repeated, EscapedKey bool

	keys map[string]struct{} // scratch for repeated keys in large objects
	open int                 // nesting of the containers a builder has open
}

var tapes = sync.Pool{New: func() any { return &Tape{Nodes: make([]Node, 0, 64)} }}

// Get returns an empty tape from the pool.
func Get() *Tape { return tapes.Get().(*Tape) }

// Put gives t back to the pool; t must not be used afterwards.
func Put(t *Tape) {
	if cap(t.Nodes) > 1<<16 { // do not keep a huge tape alive
		return
	}
	t.Src = nil
	t.Nodes = t.Nodes[:0]
	tapes.Put(t)
}

// Parse reads src into t. It returns false when src is not one valid JSON
// value in valid UTF-8 (or is larger than 1 GiB); t is then unusable.
func (t *Tape) Parse(src []byte) bool {
	t.Src = src
	t.Nodes = t.Nodes[:0]
	t.Depth, t.Repeated, t.EscapedKey = 0, false, false
	if len(src) > maxBytes || !utf8.Valid(src) {
		return false
	}
	p := parser{t: t, nodes: t.Nodes, s: src}
	p.space()
	ok := p.value(0)
	t.Nodes = p.nodes
	if !ok {
		return false
	}
	p.space()
	return p.i == len(src)
}

// A writer that knows the structure of what it writes (the encoder of
// internal/encode) builds the tape as it writes instead of parsing its
// output afterwards: Begin, then Open and Close around each array and object,
// AddKey for each key, Leaf for each string or null, ParseValue for any other
// value it writes (parsed in place, as Parse would), and Finish. Offsets are
// relative to the start of the document; src is the document written so far.
// The tape built is the one Parse builds from the finished document (tested
// over the contracts corpus and under fuzzing).

// Begin empties t for a builder.
func (t *Tape) Begin() {
	t.Src = nil
	t.Nodes = t.Nodes[:0]
	t.Depth, t.Repeated, t.EscapedKey, t.open = 0, false, false, 0
}

// Open adds an array or object starting at offset at; Close ends it.
func (t *Tape) Open(kind Kind, at int) int32 {
	t.open++
	t.Depth = max(t.Depth, t.open)
	t.Nodes = append(t.Nodes, Node{Kind: kind, Start: int32(at)})
	return int32(len(t.Nodes) - 1)
}

// Close ends the container at idx, which has n members or elements: src is
// the document up to and including its closing byte.
func (t *Tape) Close(idx int32, src []byte, n int32) {
	nd := t.closeNode(idx, src, n)
	if nd.Kind == Object && n > 1 && !t.Repeated {
		t.Src = src
		t.RepeatedKeys(idx, func(int32) bool { t.Repeated = true; return false })
	}
}

// CloseDistinct is Close for an object whose writer knows that no key
// repeats an earlier one (the fields of a struct, then keys that are none of
// them): the keys are not compared.
func (t *Tape) CloseDistinct(idx int32, src []byte, n int32) { t.closeNode(idx, src, n) }

func (t *Tape) closeNode(idx int32, src []byte, n int32) *Node {
	t.open--
	nd := &t.Nodes[idx]
	nd.End, nd.Next, nd.N = int32(len(src)), int32(len(t.Nodes)), n
	return nd
}

// Leaf adds a string (quotes included; esc when it has an escape sequence) or
// a null at src[start:end].
func (t *Tape) Leaf(kind Kind, start, end int, esc bool) {
	t.Nodes = append(t.Nodes, Node{Kind: kind, Start: int32(start), End: int32(end), Next: int32(len(t.Nodes) + 1), Esc: esc})
}

// Scalar adds a number (plainInt when written without fraction or
// exponent), true or false at src[start:end], as Parse would have.
func (t *Tape) Scalar(kind Kind, start, end int, plainInt bool) {
	t.Nodes = append(t.Nodes, Node{Kind: kind, Start: int32(start), End: int32(end), Next: int32(len(t.Nodes) + 1), PlainInt: plainInt})
}

// AddKey adds an object key, a string literal at src[start:end].
func (t *Tape) AddKey(start, end int, esc bool) {
	t.Leaf(String, start, end, esc)
	t.EscapedKey = t.EscapedKey || esc
}

// ParseValue adds the one JSON value src[at:] holds, parsed as Parse parses
// it. It returns false when src[at:] is not exactly one valid value in valid
// UTF-8; t is then unusable.
func (t *Tape) ParseValue(src []byte, at int) bool {
	if len(src) > maxBytes || !utf8.Valid(src[at:]) {
		return false
	}
	t.Src = src
	p := parser{t: t, nodes: t.Nodes, s: src, i: at}
	ok := p.value(t.open)
	t.Nodes = p.nodes
	return ok && p.i == len(src)
}

// Finish ends a built tape: src is the whole document.
func (t *Tape) Finish(src []byte) { t.Src = src }

// Plain reports whether the document is one the fast paths judge: no
// repeated key, no key with an escape sequence (encoding/json and the
// reference validator may read either differently from a proxy), nesting
// of at most PlainDepth.
func (t *Tape) Plain() bool {
	return !t.Repeated && !t.EscapedKey && t.Depth <= PlainDepth
}

type parser struct {
	t     *Tape
	nodes []Node // t.Nodes while parsing (t.Nodes is set from it when needed)
	s     []byte
	i     int
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value reads the value at p.i; depth is the nesting of its container.
func (p *parser) value(depth int) bool {
	if p.i >= len(p.s) {
		return false
	}
	switch c := p.s[p.i]; c {
	case '{', '[':
		if depth++; depth > MaxDepth {
			return false
		}
		p.t.Depth = max(p.t.Depth, depth)
		if c == '{' {
			return p.container(depth, Object, '}')
		}
		return p.container(depth, Array, ']')
	case '"':
		return p.string()
	case 't':
		return p.literal("true", True)
	case 'f':
		return p.literal("false", False)
	case 'n':
		return p.literal("null", Null)
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return p.number()
		}
		return false
	}
}

func (p *parser) push(kind Kind) int {
	p.nodes = append(p.nodes, Node{Kind: kind, Start: int32(p.i)})
	return len(p.nodes) - 1
}

func (p *parser) close(idx int, n int32) {
	nd := &p.nodes[idx]
	nd.End = int32(p.i)
	nd.Next = int32(len(p.nodes))
	nd.N = n
}

func (p *parser) literal(lit string, kind Kind) bool {
	if !bytes.HasPrefix(p.s[p.i:], []byte(lit)) {
		return false
	}
	idx := p.push(kind)
	p.i += len(lit)
	p.close(idx, 0)
	return true
}

func (p *parser) number() bool {
	idx := p.push(Number)
	s := p.s
	if s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(s) && s[p.i] == '0':
		p.i++
	case p.i < len(s) && '1' <= s[p.i] && s[p.i] <= '9':
		p.i = SkipDigits(s, p.i)
	default:
		return false
	}
	plain := true
	if p.i < len(s) && s[p.i] == '.' {
		plain = false
		j := SkipDigits(s, p.i+1)
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
		j := SkipDigits(s, p.i)
		if j == p.i {
			return false
		}
		p.i = j
	}
	p.close(idx, 0)
	p.nodes[idx].PlainInt = plain
	return true
}

// SkipDigits returns the index of the first non-digit in s at or after i.
func SkipDigits(s []byte, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// string reads a string literal; control characters and unknown escapes are
// refused, as encoding/json does.
func (p *parser) string() bool {
	idx := p.push(String)
	s := p.s
	p.i++ // opening quote
	esc := false
	for p.i < len(s) {
		c := s[p.i]
		if plainStringByte[c] {
			p.i++
			continue
		}
		switch {
		case c == '"':
			p.i++
			p.close(idx, 0)
			p.nodes[idx].Esc = esc
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

// plainStringByte marks the bytes that stand for themselves inside a string
// literal: not a quote, a backslash or a control character.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// container reads an object (members "key": value) or an array (elements)
// up to its closing byte.
func (p *parser) container(depth int, kind Kind, closing byte) bool {
	idx := p.push(kind)
	p.i++
	p.space()
	var n int32
	if p.i < len(p.s) && p.s[p.i] == closing {
		p.i++
		p.close(idx, 0)
		return true
	}
	escaped := false // some key of this object has an escape sequence
	for {
		if kind == Object {
			k := int32(len(p.nodes))
			if !p.key() {
				return false
			}
			escaped = escaped || p.nodes[k].Esc
		}
		if !p.value(depth) {
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
		if p.s[p.i] != closing {
			return false
		}
		p.i++
		p.close(idx, n)
		if kind == Object && n > 1 && !p.t.Repeated {
			p.t.Nodes = p.nodes
			p.t.repeatedKeys(int32(idx), escaped, func(int32) bool { p.t.Repeated = true; return false })
		}
		return true
	}
}

// key reads an object key and its colon.
func (p *parser) key() bool {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return false
	}
	k := len(p.nodes)
	if !p.string() {
		return false
	}
	if p.nodes[k].Esc {
		p.t.EscapedKey = true
	}
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != ':' {
		return false
	}
	p.i++
	p.space()
	return true
}

// Key returns the raw bytes of the key node at m (without quotes, escapes
// not decoded).
func (t *Tape) Key(m int32) []byte {
	nd := t.Nodes[m]
	return t.Src[nd.Start+1 : nd.End-1]
}

// Raw returns the bytes of the value at i, capacity clipped.
func (t *Tape) Raw(i int32) []byte {
	nd := t.Nodes[i]
	return t.Src[nd.Start:nd.End:nd.End]
}

// Str returns the decoded bytes of the string at i: a view of the source
// when it has no escapes, else a decoded copy, as encoding/json decodes it
// (a lone surrogate escape becomes U+FFFD).
func (t *Tape) Str(i int32) []byte {
	nd := t.Nodes[i]
	if !nd.Esc {
		return t.Src[nd.Start+1 : nd.End-1 : nd.End-1]
	}
	var s string
	if json.Unmarshal(t.Src[nd.Start:nd.End], &s) != nil { // unreachable: Parse checked the literal
		return nil
	}
	return []byte(s)
}

// Rat returns the value of the number at i, or nil when math/big cannot
// represent it (an exponent too large).
func (t *Tape) Rat(i int32) *big.Rat {
	r, ok := new(big.Rat).SetString(string(t.Raw(i)))
	if !ok {
		return nil
	}
	return r
}

// SmallInt returns the value of a plain integer of at most 18 digits.
func (t *Tape) SmallInt(i int32) (int64, bool) {
	if !t.Nodes[i].PlainInt {
		return 0, false
	}
	b := t.Raw(i)
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

// IsInteger reports whether the number at i has an integral value, as
// JSON Schema's "integer" type reads it (2.0 and 1e3 are integers). ok is
// false when math/big cannot tell.
func (t *Tape) IsInteger(i int32) (integer, ok bool) {
	if t.Nodes[i].PlainInt {
		return true, true
	}
	r := t.Rat(i)
	if r == nil {
		return false, false
	}
	return r.IsInt(), true
}

// keyEqual reports whether the key at m is name, after unescaping.
func (t *Tape) keyEqual(m int32, name []byte) bool {
	if t.Nodes[m].Esc {
		return bytes.Equal(t.Str(m), name)
	}
	return bytes.Equal(t.Key(m), name)
}

// Member returns the value node of the key name (compared after
// unescaping) in the object at obj; with a repeated key, the last one, as
// encoding/json reads it.
func (t *Tape) Member(obj int32, name []byte) (int32, bool) {
	nd := t.Nodes[obj]
	if nd.Kind != Object {
		return 0, false
	}
	found := int32(-1)
	for m := obj + 1; m < nd.Next; m = t.Nodes[m+1].Next {
		if t.keyEqual(m, name) {
			found = m + 1
			if !t.Repeated {
				break
			}
		}
	}
	return found, found >= 0
}

// RepeatedKeys calls fn, in order, with each member (key node) of the
// object at obj whose key, after unescaping, equals the key of an earlier
// member; fn returns false to stop. This is the duplicate-key check of
// every tape; package contracts, which imports nothing of the SDK, reads
// keys with encoding/json's tokens on its reference path instead.
func (t *Tape) RepeatedKeys(obj int32, fn func(m int32) bool) {
	nd := t.Nodes[obj]
	if nd.N < 2 {
		return
	}
	escaped := false
	for m := obj + 1; m < nd.Next && !escaped; m = t.Nodes[m+1].Next {
		escaped = t.Nodes[m].Esc
	}
	t.repeatedKeys(obj, escaped, fn)
}

// repeatedKeys is RepeatedKeys; escaped tells whether some key of the
// object has an escape sequence.
func (t *Tape) repeatedKeys(obj int32, escaped bool, fn func(m int32) bool) {
	nd := t.Nodes[obj]
	if nd.N <= maxScanKeys && !escaped {
		var keys [maxScanKeys][]byte // views of the source, not copies
		k := 0
		for m := obj + 1; m < nd.Next; m = t.Nodes[m+1].Next {
			key := t.Key(m)
			repeated := false
			for _, prev := range keys[:k] {
				if bytes.Equal(prev, key) {
					repeated = true
					break
				}
			}
			if repeated {
				if !fn(m) {
					return
				}
				continue
			}
			keys[k] = key
			k++
		}
		return
	}
	if t.keys == nil {
		t.keys = make(map[string]struct{}, nd.N)
	}
	defer clear(t.keys)
	for m := obj + 1; m < nd.Next; m = t.Nodes[m+1].Next {
		key := t.Str(m)
		if _, dup := t.keys[string(key)]; dup {
			if !fn(m) {
				return
			}
			continue
		}
		t.keys[string(key)] = struct{}{}
	}
}

// Equal reports whether the values at i and j are equal as JSON Schema
// compares them (numbers by value, objects regardless of member order). ok
// is false when a number cannot be compared.
func (t *Tape) Equal(i, j int32) (eq, ok bool) {
	a, b := t.Nodes[i], t.Nodes[j]
	if a.Kind != b.Kind {
		return false, true
	}
	switch a.Kind {
	case Null, False, True:
		return true, true
	case String:
		return bytes.Equal(t.Str(i), t.Str(j)), true
	case Number:
		if bytes.Equal(t.Raw(i), t.Raw(j)) {
			return true, true
		}
		x, y := t.Rat(i), t.Rat(j)
		if x == nil || y == nil {
			return false, false
		}
		return x.Cmp(y) == 0, true
	case Array:
		if a.N != b.N {
			return false, true
		}
		for x, y := i+1, j+1; x < a.Next; x, y = t.Nodes[x].Next, t.Nodes[y].Next {
			if eq, ok := t.Equal(x, y); !eq || !ok {
				return eq, ok
			}
		}
		return true, true
	default: // object
		if a.N != b.N {
			return false, true
		}
		for m := i + 1; m < a.Next; m = t.Nodes[m+1].Next {
			v, found := t.Member(j, t.Str(m))
			if !found {
				return false, true
			}
			if eq, ok := t.Equal(m+1, v); !eq || !ok {
				return eq, ok
			}
		}
		return true, true
	}
}

// IsNumber reports whether s is exactly one JSON number literal.
func IsNumber(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	p := parser{t: &Tape{}, s: s}
	return p.number() && p.i == len(s)
}
