package contracts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Extra holds the keys of an open model that its Go type does not declare.
// They survive a decode/encode round trip unchanged and are written after the
// declared keys, in key order. A declared key never comes from Extra.
type Extra map[string]json.RawMessage

// typeInfo is what the open-model codec needs to know about a struct type.
type typeInfo struct {
	declared map[string]struct{} // json keys of the declared fields
	folded   map[string]string   // case-folded key -> declared key
	nilSlice []int               // fields whose nil slice is written as []
	nilMap   []int               // fields whose nil map is written as {}
}

var typeInfos sync.Map // reflect.Type -> *typeInfo

func infoOf(t reflect.Type) *typeInfo {
	if ti, ok := typeInfos.Load(t); ok {
		return ti.(*typeInfo)
	}
	ti := &typeInfo{declared: map[string]struct{}{}, folded: map[string]string{}}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		ti.declared[name] = struct{}{}
		ti.folded[foldKey(name)] = name
		omit := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		if !omit && f.Type.Kind() == reflect.Slice && f.Type != rawMessageType {
			ti.nilSlice = append(ti.nilSlice, i)
		}
		if !omit && f.Type.Kind() == reflect.Map && f.Tag.Get("sv") != "" {
			ti.nilMap = append(ti.nilMap, i)
		}
	}
	actual, _ := typeInfos.LoadOrStore(t, ti)
	return actual.(*typeInfo)
}

// marshalResult is marshalOpen for the models that only travel inside action
// results, which drop every null: extra keys holding null are dropped too.
func marshalResult(v any, extra Extra) ([]byte, error) {
	for _, val := range extra {
		if isNull(val) {
			extra = maps.Clone(extra)
			maps.DeleteFunc(extra, func(_ string, val json.RawMessage) bool { return isNull(val) })
			break
		}
	}
	return marshalOpen(v, extra)
}

func isNull(val json.RawMessage) bool { return string(bytes.TrimSpace(val)) == "null" }

// marshalOpen encodes v, a pointer to a method-less alias of a contract struct,
// writing nil always-emitted slices as [] and appending the extra keys.
func marshalOpen(v any, extra Extra) ([]byte, error) {
	rv := reflect.ValueOf(v).Elem()
	ti := infoOf(rv.Type())
	for _, i := range ti.nilSlice {
		if f := rv.Field(i); f.IsNil() {
			f.Set(reflect.MakeSlice(f.Type(), 0, 0))
		}
	}
	for _, i := range ti.nilMap {
		if f := rv.Field(i); f.IsNil() {
			f.Set(reflect.MakeMap(f.Type()))
		}
	}
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if _, declared := ti.declared[k]; !declared {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return b, nil
	}
	slices.Sort(keys)
	var buf bytes.Buffer
	buf.Grow(len(b) + 32*len(keys))
	buf.Write(b[:len(b)-1]) // drop the closing brace
	first := len(b) == 2    // "{}"
	for _, k := range keys {
		val := extra[k]
		if len(val) == 0 || !json.Valid(val) {
			return nil, fmt.Errorf("contracts: extra key %q does not hold valid JSON", k)
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(val)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// unmarshalOpen decodes data into v, a pointer to a method-less alias of a
// contract struct, and returns the undeclared keys. A key that differs from a
// declared key only in letter case is refused: encoding/json would match it
// case-insensitively and let it override the real key.
func unmarshalOpen(data []byte, v any) (Extra, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("contracts: expected a JSON object, got null")
	}
	ti := infoOf(reflect.TypeOf(v).Elem())
	var extra Extra
	var folded *foldedKeyError
	for k, val := range raw {
		if _, ok := ti.declared[k]; ok {
			continue
		}
		if real, ok := ti.folded[foldKey(k)]; ok {
			if folded == nil || k < folded.key { // report the same key on every run
				folded = &foldedKeyError{key: k, declared: real}
			}
			continue
		}
		if extra == nil {
			extra = Extra{}
		}
		extra[k] = val
	}
	if folded != nil {
		return nil, folded
	}
	if err := json.Unmarshal(data, v); err != nil {
		return nil, err
	}
	return extra, nil
}

// foldedKeyError reports a key that differs from a declared key only in letter case.
type foldedKeyError struct{ key, declared string }

func (e *foldedKeyError) Error() string { return "contracts: " + e.message() }

func (e *foldedKeyError) message() string {
	return fmt.Sprintf("key %q differs from %q only in letter case", e.key, e.declared)
}

// foldKey folds a key the way encoding/json matches object keys to struct
// fields (the folding of bytes.EqualFold): two keys fold alike exactly when
// encoding/json would read them into the same field. strings.ToLower is not
// enough: the long s (U+017F) matches "s" and the Kelvin sign (U+212A) "k".
func foldKey(k string) string {
	var b strings.Builder
	b.Grow(len(k))
	for _, r := range k {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteByte(byte(r))
			continue
		}
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// foldRune returns the smallest rune of r's case-folding orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
