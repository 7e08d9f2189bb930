package contracts

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// This file encodes an ActionResult without reflection, producing exactly the
// bytes json.Marshal writes for it (the MarshalJSON methods of result.go, then
// encoding/json's compaction and HTML escaping). Typed sub-documents it does
// not know (job_state, setup_plan, draft, dry_run) and values of unusual types
// inside free-form maps are handed to json.Marshal, which writes the same bytes
// they would have in place. Anything else unusual (a value json.Marshal
// refuses, a map nested absurdly deep) makes it give up; the caller then uses
// json.Marshal for the whole result. resultenc_test.go compares both encoders
// over the corpus and under fuzzing.

// maxEncodeDepth bounds the nesting of free-form values encoded here; deeper
// values (or cycles) are left to json.Marshal, which reports cycles.
const maxEncodeDepth = 256

var (
	actionResultInfo = infoOf(reflect.TypeFor[ActionResult]())
	effectInfo       = infoOf(reflect.TypeFor[Effect]())
	replaySafetyInfo = infoOf(reflect.TypeFor[ReplaySafety]())
	resultErrorInfo  = infoOf(reflect.TypeFor[ResultError]())
)

// marshalModel returns json.Marshal(value), encoding action results here.
func marshalModel(m Model, value any) ([]byte, error) {
	if m == ModelActionResult {
		var r *ActionResult
		switch v := value.(type) {
		case *ActionResult:
			r = v
		case ActionResult:
			r = &v
		}
		if r != nil {
			if b, ok := appendActionResult(make([]byte, 0, 256), r); ok {
				return b, nil
			}
		}
	}
	return json.Marshal(value)
}

// resultEncoder appends to b; ok turns false at the first value it cannot
// encode exactly.
type resultEncoder struct {
	b  []byte
	ok bool
}

// appendActionResult appends the JSON of r as json.Marshal(r) writes it; ok
// is false when the caller must use json.Marshal instead.
func appendActionResult(dst []byte, r *ActionResult) ([]byte, bool) {
	e := resultEncoder{b: dst, ok: true}
	e.b = append(e.b, `{"status":`...)
	e.str(r.Status)
	e.b = append(e.b, `,"effects":[`...)
	for i := range r.Effects {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.effect(&r.Effects[i])
	}
	e.b = append(e.b, ']')
	if r.JobState != nil {
		e.key("job_state")
		e.marshal(r.JobState)
	}
	if r.ReplaySafety != nil {
		e.key("replay_safety")
		e.replaySafety(r.ReplaySafety)
	}
	if r.SetupPlan != nil {
		e.key("setup_plan")
		e.marshal(r.SetupPlan)
	}
	if r.Draft != nil {
		e.key("draft")
		e.marshal(r.Draft)
	}
	if r.DryRun != nil {
		e.key("dry_run")
		e.marshal(r.DryRun)
	}
	if len(r.Errors) > 0 {
		e.key("errors")
		e.b = append(e.b, '[')
		for i := range r.Errors {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.resultError(&r.Errors[i])
		}
		e.b = append(e.b, ']')
	}
	e.optStr("external_ref", r.ExternalRef)
	e.optStr("external_version", r.ExternalVersion)
	e.optStr("sync_cursor", r.SyncCursor)
	e.optStr("observed_at", r.ObservedAt)
	e.extra(actionResultInfo, r.Extra)
	e.b = append(e.b, '}')
	return e.b, e.ok
}

func (e *resultEncoder) effect(f *Effect) {
	e.b = append(e.b, `{"type":`...)
	e.str(f.Type)
	e.optStr("job_id", f.JobID)
	e.optStr("case_id", f.CaseID)
	e.optStr("step_id", f.StepID)
	e.optStr("resource", f.Resource)
	e.optStr("dataset", f.Dataset)
	e.optStr("artifact_id", f.ArtifactID)
	e.optStr("status", f.Status)
	e.optStr("message", f.Message)
	if f.Count != nil {
		e.key("count")
		e.b = strconv.AppendInt(e.b, int64(*f.Count), 10)
	}
	e.optMap("item", f.Item)
	e.optMap("summary", f.Summary)
	e.optMap("case", f.Case)
	e.optMap("data", f.Data)
	e.optMaps("items", f.Items)
	e.optMaps("rows", f.Rows)
	e.optMaps("errors", f.Errors)
	e.optMaps("gaps", f.Gaps)
	e.extra(effectInfo, f.Extra)
	e.b = append(e.b, '}')
}

func (e *resultEncoder) replaySafety(r *ReplaySafety) {
	e.b = append(e.b, `{"dedupe_keys":[`...)
	for i, k := range r.DedupeKeys {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.str(k)
	}
	e.b = append(e.b, `],"stable_external_ids_required":`...)
	e.b = strconv.AppendBool(e.b, r.StableExternalIDsRequired)
	e.b = append(e.b, `,"strictly_idempotent_response":`...)
	e.b = strconv.AppendBool(e.b, r.StrictlyIdempotentResponse)
	e.b = append(e.b, `,"convergent":`...)
	e.b = strconv.AppendBool(e.b, r.Convergent)
	e.extra(replaySafetyInfo, r.Extra)
	e.b = append(e.b, '}')
}

func (e *resultEncoder) resultError(r *ResultError) {
	e.b = append(e.b, `{"code":`...)
	e.str(r.Code)
	e.optStr("message", r.Message)
	e.optStr("field", r.Field)
	e.extra(resultErrorInfo, r.Extra)
	e.b = append(e.b, '}')
}

// key appends ,"name": (names are plain ASCII that needs no escaping).
func (e *resultEncoder) key(name string) {
	e.b = append(e.b, ',', '"')
	e.b = append(e.b, name...)
	e.b = append(e.b, '"', ':')
}

func (e *resultEncoder) optStr(name, v string) {
	if v != "" {
		e.key(name)
		e.str(v)
	}
}

func (e *resultEncoder) optMap(name string, m map[string]any) {
	if len(m) > 0 {
		e.key(name)
		e.object(m, 1)
	}
}

func (e *resultEncoder) optMaps(name string, ms []map[string]any) {
	if len(ms) == 0 {
		return
	}
	e.key(name)
	e.b = append(e.b, '[')
	for i, m := range ms {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.object(m, 1)
	}
	e.b = append(e.b, ']')
}

// marshal appends json.Marshal(v).
func (e *resultEncoder) marshal(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		e.ok = false
		return
	}
	e.b = append(e.b, b...)
}

// extra appends the undeclared keys of an open model as marshalResult and
// the encoder's compaction do: nulls dropped, keys sorted, values compacted
// and HTML-escaped.
func (e *resultEncoder) extra(ti *typeInfo, extra Extra) {
	if len(extra) == 0 {
		return
	}
	keys := make([]string, 0, len(extra))
	for k, v := range extra {
		if _, declared := ti.declared[k]; !declared && !isNull(v) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := extra[k]
		var compact, escaped bytes.Buffer
		if json.Compact(&compact, v) != nil { // also refuses empty and invalid JSON
			e.ok = false
			return
		}
		e.b = append(e.b, ',')
		e.str(k)
		e.b = append(e.b, ':')
		json.HTMLEscape(&escaped, compact.Bytes())
		e.b = append(e.b, escaped.Bytes()...)
	}
}

// value appends a free-form value as encoding/json writes it.
func (e *resultEncoder) value(v any, depth int) {
	switch v := v.(type) {
	case nil:
		e.b = append(e.b, "null"...)
	case string:
		e.str(v)
	case bool:
		e.b = strconv.AppendBool(e.b, v)
	case float64:
		e.float(v, 64)
	case float32:
		e.float(float64(v), 32)
	case int:
		e.b = strconv.AppendInt(e.b, int64(v), 10)
	case int64:
		e.b = strconv.AppendInt(e.b, v, 10)
	case int32:
		e.b = strconv.AppendInt(e.b, int64(v), 10)
	case map[string]any:
		e.object(v, depth+1)
	case []any:
		if v == nil {
			e.b = append(e.b, "null"...)
			return
		}
		if depth >= maxEncodeDepth {
			e.ok = false
			return
		}
		e.b = append(e.b, '[')
		for i, x := range v {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.value(x, depth+1)
		}
		e.b = append(e.b, ']')
	default:
		e.marshal(v)
	}
}

// object appends a map with its keys sorted, as encoding/json does.
func (e *resultEncoder) object(m map[string]any, depth int) {
	if m == nil {
		e.b = append(e.b, "null"...)
		return
	}
	if depth >= maxEncodeDepth {
		e.ok = false
		return
	}
	var small [8]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.b = append(e.b, '{')
	for i, k := range keys {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.str(k)
		e.b = append(e.b, ':')
		e.value(m[k], depth)
		if !e.ok {
			return
		}
	}
	e.b = append(e.b, '}')
}

// float appends f as encoding/json's floatEncoder does.
func (e *resultEncoder) float(f float64, bits int) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		e.ok = false
		return
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b := strconv.AppendFloat(e.b, f, format, -1, bits)
	if format == 'e' { // clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	e.b = b
}

const hexDigits = "0123456789abcdef"

// str appends s as a JSON string the way encoding/json does with HTML
// escaping: <, > and & as \u003c, \u003e and \u0026, U+2028 and U+2029
// escaped, invalid UTF-8 as \ufffd.
func (e *resultEncoder) str(s string) {
	b := append(e.b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	e.b = append(b, '"')
}
