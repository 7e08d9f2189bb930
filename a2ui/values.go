package a2ui

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/supervaize/supervaizer-go/contracts"
)

// Codes of a [FieldError]. They are stable: agents may map them to their own
// messages.
const (
	CodeRequired  = "required"   // a required active field has no value
	CodeType      = "type"       // the value has the wrong JSON type or format
	CodeMinLength = "min_length" // text shorter than validation.min_length
	CodeMaxLength = "max_length" // text longer than validation.max_length
	CodePattern   = "pattern"    // text does not match validation.pattern
	CodeMin       = "min"        // number below validation.min
	CodeMax       = "max"        // number above validation.max
	CodeMinItems  = "min_items"  // fewer items than validation.min_items
	CodeMaxItems  = "max_items"  // more items than validation.max_items
	CodeOption    = "option"     // a value that is not one of the field's options
	CodeFile      = "file"       // a malformed or refused file value
)

// FieldError is one problem of a submitted value. Field is the path of the
// value: a field id ("goal"), an item of a list ("sources[1].url") or of a
// multi_select ("tags[0]"). Message is generic, or the field's
// validation.message when a validation rule failed; it never quotes the value.
type FieldError struct {
	Field   string `json:"field"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error returns "field: message".
func (e FieldError) Error() string { return e.Field + ": " + e.Message }

// ValidateValues checks submitted values against their field definitions
// and returns one FieldError per problem, in field order; nil
// means the values are valid. Values come from decoded JSON (numbers as
// float64 or json.Number) or from Go values of the same shapes.
//
// A field is active unless its depends_on parent is inactive or the parent's
// value, as a string (JSON scalars without quotes, strings unchanged), is not
// listed. An inactive field is never required and its value is ignored. An
// active field without value (absent, null, "" or an empty array) is reported
// when required and otherwise skipped. A value is then checked against the
// field type (an empty or unknown type is a string), its validation rules and,
// for a file, the file value shape of the protocol (inline content must be
// base64; the size, max_bytes and accept are checked). A pattern Go's RE2
// cannot compile is skipped (Studio evaluates it); a pattern that compiles is
// an unanchored search. Keys without a field definition are ignored.
func ValidateValues(fields []Field, values map[string]any) []FieldError {
	var c valueChecker
	c.fields(fields, values, "")
	return c.errs
}

type valueChecker struct{ errs []FieldError }

func (c *valueChecker) add(path, code, msg string) {
	c.errs = append(c.errs, FieldError{Field: path, Code: code, Message: msg})
}

// rule reports a failed validation rule, with the field's own message if any.
func (c *valueChecker) rule(f *Field, path, code, msg string) {
	if f.Validation != nil && f.Validation.Message != nil {
		msg = *f.Validation.Message
	}
	c.add(path, code, msg)
}

func (c *valueChecker) fields(fields []Field, values map[string]any, prefix string) {
	act := activity{fields: fields, values: values}
	for i := range fields {
		f := &fields[i]
		if !act.active(i) {
			continue
		}
		path := f.ID
		if prefix != "" {
			path = prefix + "." + f.ID
		}
		v := values[f.ID]
		if isEmpty(v) {
			if f.Required {
				c.add(path, CodeRequired, "is required")
			}
			continue
		}
		c.value(f, v, path)
	}
}

// activity evaluates depends_on chains among sibling fields.
type activity struct {
	fields []Field
	values map[string]any
	state  []uint8 // 0 unknown, 1 visiting, 2 active, 3 inactive
}

func (a *activity) active(i int) bool {
	if a.fields[i].DependsOn == nil {
		return true
	}
	if a.state == nil {
		a.state = make([]uint8, len(a.fields))
	}
	switch a.state[i] {
	case 1: // a depends_on cycle: never active
		return false
	case 2:
		return true
	case 3:
		return false
	}
	a.state[i] = 1
	d := a.fields[i].DependsOn
	ok := true
	for j := range a.fields {
		if a.fields[j].ID == d.Field {
			ok = j != i && a.active(j)
			break
		}
	}
	if ok {
		s, scalar := stringify(a.values[d.Field])
		ok = scalar && contains(d.In, s)
	}
	a.state[i] = 3
	if ok {
		a.state[i] = 2
	}
	return ok
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// stringify converts a JSON scalar the way a JavaScript client does:
// strings unchanged, true/false, numbers in their
// shortest form. It reports false for null, arrays and objects.
func stringify(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	}
	if f, ok := number(v); ok {
		b, err := json.Marshal(f) // encoding/json formats float64 like ECMAScript
		return string(b), err == nil
	}
	return "", false
}

func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	}
	if a, ok := array(v); ok {
		return len(a) == 0
	}
	return false
}

func (c *valueChecker) value(f *Field, v any, path string) {
	typ := f.Type
	rules := f.Validation
	if rules == nil {
		rules = &contracts.FieldValidation{}
	}
	switch typ {
	case contracts.FieldBoolean:
		if _, ok := v.(bool); !ok {
			c.add(path, CodeType, "must be true or false")
		}
	case contracts.FieldInteger, contracts.FieldNumber:
		x, ok := number(v)
		switch {
		case !ok:
			c.add(path, CodeType, "must be a number")
			return
		case typ == contracts.FieldInteger && x != math.Trunc(x):
			c.add(path, CodeType, "must be an integer")
			return
		}
		if rules.Min != nil && x < *rules.Min {
			c.rule(f, path, CodeMin, "must be at least "+formatNumber(*rules.Min))
		}
		if rules.Max != nil && x > *rules.Max {
			c.rule(f, path, CodeMax, "must be at most "+formatNumber(*rules.Max))
		}
	case contracts.FieldDate:
		s, ok := v.(string)
		if _, err := time.Parse(time.DateOnly, s); !ok || len(s) != len(time.DateOnly) || err != nil {
			c.add(path, CodeType, "must be a date (YYYY-MM-DD)")
		}
	case contracts.FieldResourceRef:
		if _, ok := v.(string); !ok {
			c.add(path, CodeType, "must be a string")
		}
	case contracts.FieldSelect:
		c.choice(f, v, path)
	case contracts.FieldMultiSelect:
		items, ok := array(v)
		if !ok {
			c.add(path, CodeType, "must be a list of choices")
			return
		}
		for i, item := range items {
			c.choice(f, item, path+"["+strconv.Itoa(i)+"]")
		}
		c.count(f, len(items), path)
	case contracts.FieldList:
		items, ok := array(v)
		if !ok {
			c.add(path, CodeType, "must be a list of items")
			return
		}
		for i, item := range items {
			at := path + "[" + strconv.Itoa(i) + "]"
			obj, ok := object(item)
			if !ok {
				c.add(at, CodeType, "must be an object keyed by item field id")
				continue
			}
			c.fields(f.ItemFields, obj, at)
		}
		c.count(f, len(items), path)
	case contracts.FieldFile:
		if msg := checkFile(f, v); msg != "" {
			c.add(path, CodeFile, msg)
		}
	default: // string, text and unknown types
		s, ok := v.(string)
		if !ok {
			c.add(path, CodeType, "must be a string")
			return
		}
		n := -1
		length := func() int {
			if n < 0 {
				n = utf8.RuneCountInString(s)
			}
			return n
		}
		if rules.MinLength != nil && length() < *rules.MinLength {
			c.rule(f, path, CodeMinLength, "must be at least "+strconv.Itoa(*rules.MinLength)+" characters long")
		}
		if rules.MaxLength != nil && length() > *rules.MaxLength {
			c.rule(f, path, CodeMaxLength, "must be at most "+strconv.Itoa(*rules.MaxLength)+" characters long")
		}
		if rules.Pattern != nil {
			if re := compilePattern(*rules.Pattern); re != nil && !re.MatchString(s) {
				c.rule(f, path, CodePattern, "does not have the expected format")
			}
		}
	}
}

// choice checks one value of a select or multi_select field. A field without
// options (its choices come from options_source) accepts any scalar.
func (c *valueChecker) choice(f *Field, v any, path string) {
	if _, ok := stringify(v); !ok {
		c.add(path, CodeType, "must be a choice value")
		return
	}
	if len(f.Options) == 0 {
		return
	}
	for _, o := range f.Options {
		if optionEqual(o.Value, v) {
			return
		}
	}
	c.add(path, CodeOption, "is not one of the choices")
}

func (c *valueChecker) count(f *Field, n int, path string) {
	if f.Validation == nil {
		return
	}
	if m := f.Validation.MinItems; m != nil && n < *m {
		c.rule(f, path, CodeMinItems, "must have at least "+strconv.Itoa(*m)+" items")
	}
	if m := f.Validation.MaxItems; m != nil && n > *m {
		c.rule(f, path, CodeMaxItems, "must have at most "+strconv.Itoa(*m)+" items")
	}
}

// optionEqual compares an option value (raw JSON) with a submitted scalar:
// strings and booleans by value, numbers numerically.
func optionEqual(raw json.RawMessage, v any) bool {
	if s, ok := v.(string); ok && len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 && bytes.IndexByte(inner, '"') < 0 {
			return string(inner) == s // a plain string option: no need to decode it
		}
	}
	var o any
	if json.Unmarshal(raw, &o) != nil {
		return false
	}
	switch o := o.(type) {
	case string:
		s, ok := v.(string)
		return ok && s == o
	case bool:
		b, ok := v.(bool)
		return ok && b == o
	case float64:
		x, ok := number(v)
		return ok && x == o
	}
	return false
}

func formatNumber(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// number returns the value of a finite JSON number given as any Go number
// (named numeric types included, as encoding/json writes them as numbers) or
// json.Number.
func number(v any) (float64, bool) {
	var x float64
	if n, ok := v.(json.Number); ok {
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return 0, false
		}
		x = f
	} else {
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			x = float64(rv.Int())
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			x = float64(rv.Uint())
		case reflect.Float32, reflect.Float64:
			x = rv.Float()
		default:
			return 0, false
		}
	}
	return x, !math.IsInf(x, 0) && !math.IsNaN(x)
}

// array returns the elements of a JSON array given as []any or any other Go slice.
func array(v any) ([]any, bool) {
	if a, ok := v.([]any); ok {
		return a, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice || rv.Type().Elem().Kind() == reflect.Uint8 { // bytes are not a JSON array
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// object returns a JSON object given as map[string]any or any other Go map
// with string keys.
func object(v any) (map[string]any, bool) {
	if m, ok := v.(map[string]any); ok {
		return m, m != nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String || rv.IsNil() {
		return nil, false
	}
	out := make(map[string]any, rv.Len())
	for it := rv.MapRange(); it.Next(); {
		out[it.Key().String()] = it.Value().Interface()
	}
	return out, true
}

// maxCachedPatterns bounds the cache of compiled patterns.
const maxCachedPatterns = 256

var (
	patternCache sync.Map // pattern -> *regexp.Regexp, nil when RE2 rejects it
	patternCount atomic.Int64
)

// compilePattern returns the compiled pattern, or nil when Go's RE2 cannot
// compile it (the pattern is then Studio's to evaluate).
func compilePattern(p string) *regexp.Regexp {
	if re, ok := patternCache.Load(p); ok {
		return re.(*regexp.Regexp)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		re = nil
	}
	if patternCount.Load() < maxCachedPatterns {
		if _, loaded := patternCache.LoadOrStore(p, re); !loaded {
			patternCount.Add(1)
		}
	}
	return re
}
