package resource

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// inputReader reads the keys of an SDK-defined action input. Keys are
// matched exactly (never case-insensitively); unknown keys are ignored.
// Problems are collected and answered together with -32602.
type inputReader struct {
	m     map[string]json.RawMessage
	probs []contracts.Problem
}

func readInput(raw json.RawMessage) *inputReader {
	in := &inputReader{}
	if len(bytes.TrimSpace(raw)) == 0 {
		in.m = map[string]json.RawMessage{}
		return in
	}
	if err := json.Unmarshal(raw, &in.m); err != nil || in.m == nil {
		in.m = map[string]json.RawMessage{}
		in.fail("", "object", "must be a JSON object")
	}
	return in
}

func (in *inputReader) fail(key, rule, msg string) {
	loc, path := []any{"input"}, "/input"
	if key != "" {
		loc, path = append(loc, key), path+"/"+wire.PointerToken(key)
	}
	in.probs = append(in.probs, contracts.Problem{Loc: loc, Msg: msg, Type: rule, Path: path})
}

// failed reports whether problems were found: the call is then answered
// with -32602 and runs no handler.
func (in *inputReader) failed() bool { return len(in.probs) > 0 }

// present returns the raw value of key, absent for a missing key or null.
func (in *inputReader) present(key string) (json.RawMessage, bool) {
	raw, ok := in.m[key]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return nil, false
	}
	return raw, true
}

func (in *inputReader) str(key string, required bool) string {
	raw, ok := in.present(key)
	if !ok {
		if required {
			in.fail(key, "required", "missing property")
		}
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		in.fail(key, "type", "must be a string")
		return ""
	}
	if required && strings.TrimSpace(s) == "" {
		in.fail(key, "nonblank", "must not be blank")
	}
	return s
}

func (in *inputReader) object(key string, required bool) json.RawMessage {
	raw, ok := in.present(key)
	if !ok {
		if required {
			in.fail(key, "required", "missing property")
		}
		return nil
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		in.fail(key, "type", "must be an object")
		return nil
	}
	return raw
}

// objectValue decodes an optional object, numbers kept as json.Number.
func (in *inputReader) objectValue(key string) map[string]any {
	raw := in.object(key, false)
	if raw == nil {
		return nil
	}
	m, err := decodeJSONObject(raw)
	if err != nil {
		in.fail(key, "type", "must be an object")
		return nil
	}
	return m
}

// integer reads an optional integer in [min, max].
func (in *inputReader) integer(key string, def, minimum, maximum int) int {
	raw, ok := in.present(key)
	if !ok {
		return def
	}
	var n json.Number // encoding/json also reads a quoted number into it: refuse strings first
	if raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		in.fail(key, "type", "must be an integer")
		return def
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		in.fail(key, "type", "must be an integer")
		return def
	}
	if v < int64(minimum) || v > int64(maximum) {
		in.fail(key, "range", fmt.Sprintf("must be between %d and %d", minimum, maximum))
		return def
	}
	return int(v)
}

// page reads limit and offset.
func (in *inputReader) page() (limit, offset int) {
	return in.integer("limit", defaultPageLimit, 1, maxPageLimit), in.integer("offset", 0, 0, maxOffset)
}

// listQuery reads the input of a list operation:
// {"limit"?: int, "offset"?: int, "search"?: string, "filters"?: object}.
func (in *inputReader) listQuery() ListQuery {
	limit, offset := in.page()
	return ListQuery{Limit: limit, Offset: offset, Search: in.str("search", false), Filters: in.objectValue("filters")}
}

// importInput reads the input of an import action:
//
//	{"format"?: "csv", "content": string, "encoding"?: "text"|"base64", "fields"?: object}
//
// content is the file itself (encoding "text", the default) or its base64
// (standard alphabet, padding optional); fields holds the values of the
// ResourceImport document's contextual fields.
func (in *inputReader) importInput() importFile {
	f := importFile{format: in.str("format", false), fields: in.objectValue("fields")}
	content := in.str("content", false)
	if _, ok := in.present("content"); !ok {
		in.fail("content", "required", "missing property")
	}
	switch enc := in.str("encoding", false); enc {
	case "", "text":
		f.data = []byte(content)
	case a2ui.EncodingBase64:
		b, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			if b, err = base64.RawStdEncoding.DecodeString(content); err != nil {
				in.fail("content", "base64", "is not valid base64")
			}
		}
		f.data = b
	default:
		in.fail("encoding", "enum", `must be "text" or "base64"`)
	}
	return f
}
