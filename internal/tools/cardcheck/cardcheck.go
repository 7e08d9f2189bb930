// Package cardcheck checks that an encoded Agent Card has the shape the A2A
// protocol gives its AgentCard object in versions 0.2.6 and 0.3.0: every
// required member present, and every member the protocol defines of the type
// it defines (strings, booleans, arrays, objects, maps, enumerations and the
// security scheme union discriminated by "type"). Members the protocol does not
// define are allowed, as they are by the protocol.
//
// The shapes are written here from the protocol's definitions; they are not
// read from the published JSON Schemas. Tests call [Validators], which returns
// these checks and, in a build with the conformance tag, validation against the
// published schemas as well (see the conformance target of the Makefile).
package cardcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Versions are the A2A protocol versions whose AgentCard shape [Check] knows.
var Versions = []string{"0.2.6", "0.3.0"}

// Validator checks one encoded card.
type Validator struct {
	// Name says what the card is checked against, e.g. "A2A 0.3.0 structure".
	Name string
	// Validate returns an error naming every problem, or nil.
	Validate func(card []byte) error
}

// Validators returns the structural check of every version in [Versions]
// and, in a build with the conformance tag, one validator per published A2A
// JSON Schema, read from the folder schemas (the tests pass the value of
// [EnvSchemas], which the conformance target of the Makefile sets). That
// build fails with an error when the schemas cannot be read; without the tag
// schemas is not read.
func Validators(schemas string) ([]Validator, error) {
	out := make([]Validator, 0, 2*len(Versions))
	for _, v := range Versions {
		out = append(out, Validator{Name: "A2A " + v + " structure", Validate: func(card []byte) error { return Check(v, card) }})
	}
	published, err := publishedValidators(schemas)
	if err != nil {
		return nil, err
	}
	return append(out, published...), nil
}

// publishedValidators is replaced in a build with the conformance tag.
var publishedValidators = func(string) ([]Validator, error) { return nil, nil }

// EnvSchemas names the variable the tests read the folder of the published
// A2A JSON Schemas (a2a-<version>.schema.json) from, for [Validators]: it is
// required in a build with the conformance tag.
const EnvSchemas = "SUPERVAIZER_A2A_SCHEMAS"

// Check reports whether card is a JSON object with the shape of an A2A
// AgentCard of the given protocol version. The error lists every problem with
// its JSON path, e.g. "$.skills[0].tags: want an array, got null".
func Check(version string, card []byte) error {
	if !slices.Contains(Versions, version) {
		return fmt.Errorf("cardcheck: unknown A2A version %q (known: %s)", version, strings.Join(Versions, ", "))
	}
	dec := json.NewDecoder(bytes.NewReader(card))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("cardcheck: the card is not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("cardcheck: the card has data after its JSON value")
	}
	var p problems
	agentCard(version).check(&p, "$", doc)
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("not an A2A %s AgentCard:\n%s", version, strings.Join(p, "\n"))
}

// problems collects the problems found, one line each.
type problems []string

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, path+": "+fmt.Sprintf(format, args...))
}

// shape checks one decoded JSON value (json.Number for numbers).
type shape interface {
	check(p *problems, path string, v any)
}

// str is a JSON string, optionally limited to a set of values.
type str struct{ oneOf []string }

func (s str) check(p *problems, path string, v any) {
	got, ok := v.(string)
	if !ok {
		p.add(path, "want a string, got %s", kind(v))
		return
	}
	if len(s.oneOf) > 0 && !slices.Contains(s.oneOf, got) {
		p.add(path, "want one of %q, got %q", s.oneOf, got)
	}
}

// boolean is a JSON true or false.
type boolean struct{}

func (boolean) check(p *problems, path string, v any) {
	if _, ok := v.(bool); !ok {
		p.add(path, "want a boolean, got %s", kind(v))
	}
}

// array is a JSON array whose items all have the same shape.
type array struct{ of shape }

func (a array) check(p *problems, path string, v any) {
	items, ok := v.([]any)
	if !ok {
		p.add(path, "want an array, got %s", kind(v))
		return
	}
	for i, item := range items {
		a.of.check(p, fmt.Sprintf("%s[%d]", path, i), item)
	}
}

// dict is a JSON object whose member values all have the same shape; a nil
// shape allows any value.
type dict struct{ of shape }

func (d dict) check(p *problems, path string, v any) {
	members, ok := v.(map[string]any)
	if !ok {
		p.add(path, "want an object, got %s", kind(v))
		return
	}
	if d.of == nil {
		return
	}
	for _, name := range sortedKeys(members) {
		d.of.check(p, path+"."+name, members[name])
	}
}

// member is one member an object defines.
type member struct {
	name     string
	required bool
	shape    shape
}

func req(name string, s shape) member { return member{name: name, required: true, shape: s} }
func opt(name string, s shape) member { return member{name: name, shape: s} }

// object is a JSON object with defined members; other members are allowed.
type object []member

func (o object) check(p *problems, path string, v any) {
	members, ok := v.(map[string]any)
	if !ok {
		p.add(path, "want an object, got %s", kind(v))
		return
	}
	for _, m := range o {
		value, present := members[m.name]
		switch {
		case present:
			m.shape.check(p, path+"."+m.name, value)
		case m.required:
			p.add(path+"."+m.name, "required member is missing")
		}
	}
}

// union is an object whose member "type" names which of several shapes it has.
type union map[string]object

func (u union) check(p *problems, path string, v any) {
	members, ok := v.(map[string]any)
	if !ok {
		p.add(path, "want an object, got %s", kind(v))
		return
	}
	names := sortedKeys(u)
	raw, present := members["type"]
	if !present {
		p.add(path+".type", "required member is missing")
		return
	}
	t, ok := raw.(string)
	if !ok {
		p.add(path+".type", "want one of %q, got %s", names, kind(raw))
		return
	}
	alt, ok := u[t]
	if !ok {
		p.add(path+".type", "want one of %q, got %q", names, t)
		return
	}
	alt.check(p, path, v)
}

// agentCard is the AgentCard object of the given A2A version.
func agentCard(version string) object {
	v030 := version == "0.3.0"
	strs := array{of: str{}}
	security := array{of: dict{of: strs}}

	skill := object{
		req("id", str{}), req("name", str{}), req("description", str{}), req("tags", strs),
		opt("examples", strs), opt("inputModes", strs), opt("outputModes", strs),
	}
	if v030 {
		skill = append(skill, opt("security", security))
	}

	scopes := dict{of: str{}}
	flows := object{
		opt("authorizationCode", object{req("authorizationUrl", str{}), req("tokenUrl", str{}), req("scopes", scopes), opt("refreshUrl", str{})}),
		opt("clientCredentials", object{req("tokenUrl", str{}), req("scopes", scopes), opt("refreshUrl", str{})}),
		opt("implicit", object{req("authorizationUrl", str{}), req("scopes", scopes), opt("refreshUrl", str{})}),
		opt("password", object{req("tokenUrl", str{}), req("scopes", scopes), opt("refreshUrl", str{})}),
	}
	description := opt("description", str{})
	oauth2 := object{req("type", str{}), req("flows", flows), description}
	if v030 {
		oauth2 = append(oauth2, opt("oauth2MetadataUrl", str{}))
	}
	scheme := union{
		"apiKey":        {req("type", str{}), req("in", str{oneOf: []string{"cookie", "header", "query"}}), req("name", str{}), description},
		"http":          {req("type", str{}), req("scheme", str{}), opt("bearerFormat", str{}), description},
		"oauth2":        oauth2,
		"openIdConnect": {req("type", str{}), req("openIdConnectUrl", str{}), description},
	}
	if v030 {
		scheme["mutualTLS"] = object{req("type", str{}), description}
	}

	card := object{
		req("name", str{}),
		req("description", str{}),
		req("url", str{}),
		req("version", str{}),
		req("protocolVersion", str{}),
		req("capabilities", object{
			opt("streaming", boolean{}), opt("pushNotifications", boolean{}), opt("stateTransitionHistory", boolean{}),
			opt("extensions", array{of: object{req("uri", str{}), opt("description", str{}), opt("required", boolean{}), opt("params", dict{})}}),
		}),
		req("defaultInputModes", strs),
		req("defaultOutputModes", strs),
		req("skills", array{of: skill}),
		opt("preferredTransport", str{}),
		opt("additionalInterfaces", array{of: object{req("url", str{}), req("transport", str{})}}),
		opt("iconUrl", str{}),
		opt("documentationUrl", str{}),
		opt("provider", object{req("organization", str{}), req("url", str{})}),
		opt("securitySchemes", dict{of: scheme}),
		opt("security", security),
		opt("supportsAuthenticatedExtendedCard", boolean{}),
	}
	if v030 {
		card = append(card, opt("signatures", array{of: object{req("protected", str{}), req("signature", str{}), opt("header", dict{})}}))
	}
	return card
}

// kind names the JSON type of a decoded value.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
