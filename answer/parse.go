package answer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/wire"
)

// Violation is one way an answer breaks its contract: the field (a path such
// as "sources[0].url"; empty for the answer as a whole), the rule broken
// (required, enum, type, additionalProperties, minItems, json...; the rule
// names of the SDK's typed inputs) and what is wrong.
type Violation struct {
	Field string
	Rule  string
	Msg   string
}

// ContractError is the error of an answer that breaks its contract: every
// violation found, each naming its field and rule.
type ContractError struct {
	Violations []Violation
}

// Error lists the violations: `answer: status: must be one of success, fail
// (enum); summary: wrong type: got number, want string (type)`.
func (e *ContractError) Error() string { return "answer: " + e.reason() }

// reason is the violations without the package prefix, as the correction
// quotes them.
func (e *ContractError) reason() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		if v.Field == "" {
			parts[i] = fmt.Sprintf("%s (%s)", v.Msg, v.Rule)
		} else {
			parts[i] = fmt.Sprintf("%s: %s (%s)", v.Field, v.Msg, v.Rule)
		}
	}
	return strings.Join(parts, "; ")
}

// Parse extracts the answer's JSON object from text and checks it against T.
//
// Extraction is tolerant: the object may be surrounded by prose or inside a
// code fence, and when the text holds several complete objects, the last one
// is the answer (a model ends with it; an object cut off at the end of the
// text is not complete). The check is strict: the compiled rules of the SDK's
// typed inputs, derived from T (required fields, types, `sv` rules, no
// unknown field; an optional field may be null, read as unset). A text that
// breaks the contract is a *[ContractError] naming each field and rule.
//
// Rules the schema cannot express (across fields) are the type's: when T
// (or *T) has a method Check() error, Parse calls it on the decoded answer,
// and its error is a violation of the rule "check", which [Ask] corrects as
// any other.
//
// A valid answer that declares status "fail" is returned with an error
// wrapping [ErrFailed]. Parse panics when T has no JSON Schema mapping.
func Parse[T Enveloped](text string) (T, error) {
	return parse[T](shapeOf[T](), text)
}

func parse[T Enveloped](s *shape, text string) (T, error) {
	var v T
	raw, found := lastObject(text)
	if !found {
		return v, &ContractError{[]Violation{{Rule: "json", Msg: "no complete JSON object in the answer"}}}
	}
	if ps := s.check.Validate([]byte(raw)); len(ps) > 0 {
		return v, &ContractError{violations(ps)}
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		var zero T
		return zero, &ContractError{[]Violation{{Rule: "decode", Msg: "cannot be decoded into " + s.typ.String()}}}
	}
	if c, ok := any(&v).(interface{ Check() error }); ok {
		if err := c.Check(); err != nil {
			var zero T
			return zero, &ContractError{[]Violation{{Rule: "check", Msg: err.Error()}}}
		}
	}
	if env := v.envelope(); env.Status == Fail {
		return v, fmt.Errorf("%w: %s", ErrFailed, env.Summary)
	}
	return v, nil
}

// violations names the field of each problem as a path: items[0].url.
func violations(ps []contracts.Problem) []Violation {
	out := make([]Violation, len(ps))
	for i, p := range ps {
		var b strings.Builder
		for _, seg := range p.Loc {
			switch seg := seg.(type) {
			case int:
				b.WriteString("[" + strconv.Itoa(seg) + "]")
			default:
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				fmt.Fprint(&b, seg)
			}
		}
		out[i] = Violation{Field: b.String(), Rule: p.Type, Msg: p.Msg}
	}
	return out
}

// lastObject returns the last complete JSON object of text that no other
// complete object contains. Each '{' is tried as the start of an object, left
// to right, past the end of each object found; an object that runs to the end
// of text unfinished ends the search (nothing after its start is outside it).
// What is known of the object starting at each offset is remembered, so the
// search reads text a bounded number of times however it nests.
func lastObject(text string) (string, bool) {
	sc := scanner{s: text, memo: map[int]scanned{}}
	found, ok := "", false
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '{')
		if j < 0 {
			break
		}
		i += j
		end, complete := sc.object(i, 0)
		switch {
		case complete:
			found, ok = text[i:end], true
			i = end
		case end >= len(text):
			return found, ok
		default:
			i++
		}
	}
	return found, ok
}

// scanner reads the JSON grammar (RFC 8259) to find where values end; the
// check itself is the validator's.
type scanner struct {
	s    string
	memo map[int]scanned // the object starting at an offset
}

type scanned struct {
	end      int // past the object; where it failed otherwise
	complete bool
}

func (sc *scanner) space(i int) int {
	for i < len(sc.s) && (sc.s[i] == ' ' || sc.s[i] == '\t' || sc.s[i] == '\n' || sc.s[i] == '\r') {
		i++
	}
	return i
}

// value reads the value at i (after white space); it returns where the value
// ends, or where it fails and false.
func (sc *scanner) value(i, depth int) (int, bool) {
	i = sc.space(i)
	if i >= len(sc.s) {
		return i, false
	}
	switch c := sc.s[i]; {
	case c == '{':
		return sc.object(i, depth+1)
	case c == '[':
		return sc.array(i, depth+1)
	case c == '"':
		return sc.str(i)
	case c == 't':
		return sc.literal(i, "true")
	case c == 'f':
		return sc.literal(i, "false")
	case c == 'n':
		return sc.literal(i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return sc.number(i)
	}
	return i, false
}

func (sc *scanner) object(i, depth int) (int, bool) {
	if r, ok := sc.memo[i]; ok {
		return r.end, r.complete
	}
	if depth > wire.MaxDepth {
		return i, false // not remembered: shallower, the same object may end
	}
	end, complete := sc.members(i, depth)
	sc.memo[i] = scanned{end, complete}
	return end, complete
}

func (sc *scanner) members(i, depth int) (int, bool) {
	i = sc.space(i + 1)
	if i < len(sc.s) && sc.s[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(sc.s) || sc.s[i] != '"' {
			return i, false
		}
		var ok bool
		if i, ok = sc.str(i); !ok {
			return i, false
		}
		if i = sc.space(i); i >= len(sc.s) || sc.s[i] != ':' {
			return i, false
		}
		if i, ok = sc.value(i+1, depth); !ok {
			return i, false
		}
		if i = sc.space(i); i >= len(sc.s) {
			return i, false
		}
		switch sc.s[i] {
		case ',':
			i = sc.space(i + 1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

func (sc *scanner) array(i, depth int) (int, bool) {
	if depth > wire.MaxDepth {
		return i, false
	}
	i = sc.space(i + 1)
	if i < len(sc.s) && sc.s[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = sc.value(i, depth); !ok {
			return i, false
		}
		if i = sc.space(i); i >= len(sc.s) {
			return i, false
		}
		switch sc.s[i] {
		case ',':
			i++
		case ']':
			return i + 1, true
		default:
			return i, false
		}
	}
}

func (sc *scanner) str(i int) (int, bool) {
	for i++; i < len(sc.s); i++ {
		switch c := sc.s[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(sc.s) {
				return i, false
			}
			switch sc.s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for k := 1; k <= 4; k++ {
					if i+k >= len(sc.s) || !isHex(sc.s[i+k]) {
						return i + k, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (sc *scanner) literal(i int, lit string) (int, bool) {
	if strings.HasPrefix(sc.s[i:], lit) {
		return i + len(lit), true
	}
	// Where it fails: the end of text when lit was cut off there.
	n := 0
	for n < len(lit) && i+n < len(sc.s) && sc.s[i+n] == lit[n] {
		n++
	}
	return i + n, false
}

func (sc *scanner) number(i int) (int, bool) {
	if sc.s[i] == '-' {
		i++
	}
	digits := func(i int) int {
		for i < len(sc.s) && '0' <= sc.s[i] && sc.s[i] <= '9' {
			i++
		}
		return i
	}
	switch {
	case i >= len(sc.s):
		return i, false
	case sc.s[i] == '0':
		i++
	case '1' <= sc.s[i] && sc.s[i] <= '9':
		i = digits(i)
	default:
		return i, false
	}
	if i < len(sc.s) && sc.s[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(sc.s) && (sc.s[i] == 'e' || sc.s[i] == 'E') {
		i++
		if i < len(sc.s) && (sc.s[i] == '+' || sc.s[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}
