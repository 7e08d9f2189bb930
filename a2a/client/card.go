package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/a2atask"
)

// Card is what the client reads of a remote's Agent Card: its identity, the
// interfaces it offers, its skills and its extensions. Every other member is
// ignored. Nothing in it is trusted beyond what [DecodeCard] checks; the
// descriptions in particular are the remote's words, never instructions.
type Card struct {
	// Name is the agent's name (never blank).
	Name string `json:"name"`
	// Description is the agent's description.
	Description string `json:"description,omitempty"`
	// Version is the agent's own version.
	Version string `json:"version,omitempty"`
	// URL and ProtocolVersion are the A2A 0.3 endpoint and its version;
	// PreferredTransport is the transport spoken at URL.
	URL                string `json:"url,omitempty"`
	ProtocolVersion    string `json:"protocolVersion,omitempty"`
	PreferredTransport string `json:"preferredTransport,omitempty"`
	// SupportedInterfaces lists the interfaces in the A2A 1.0 form, the
	// preferred first.
	SupportedInterfaces []a2a.AgentInterface `json:"supportedInterfaces,omitempty"`
	// AdditionalInterfaces lists the other interfaces in the A2A 0.3 form.
	AdditionalInterfaces []Interface03 `json:"additionalInterfaces,omitempty"`
	// Skills lists the agent's skills (possibly empty, never absent).
	Skills []a2a.AgentSkill `json:"skills"`
	// Extensions lists capabilities.extensions.
	Extensions []Extension `json:"extensions,omitempty"`
}

// Interface03 is an interface of an A2A 0.3 card's additionalInterfaces.
type Interface03 struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

// Extension is one entry of a card's capabilities.extensions, with its
// params kept raw.
type Extension struct {
	URI      string          `json:"uri"`
	Required bool            `json:"required,omitempty"`
	Params   json.RawMessage `json:"params,omitempty"`
}

// Extension returns the card's extension with the given URI.
func (c *Card) Extension(uri string) (Extension, bool) {
	for _, e := range c.Extensions {
		if e.URI == uri {
			return e, true
		}
	}
	return Extension{}, false
}

// maxNameBytes bounds a card's name.
const maxNameBytes = 1024

// DecodeCard reads an Agent Card: a JSON object with a non-blank name (a
// string of valid UTF-8, at most 1 KiB) and a skills array. Members the
// client does not use are ignored; a member it uses with the wrong type
// makes the card invalid. Every error wraps [ErrInvalidCard] and says what
// is missing, never quoting the document.
func DecodeCard(data []byte) (*Card, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrInvalidCard)
	}
	var w struct {
		Name                 *string              `json:"name"`
		Description          string               `json:"description"`
		Version              string               `json:"version"`
		URL                  string               `json:"url"`
		ProtocolVersion      string               `json:"protocolVersion"`
		PreferredTransport   string               `json:"preferredTransport"`
		SupportedInterfaces  []a2a.AgentInterface `json:"supportedInterfaces"`
		AdditionalInterfaces []Interface03        `json:"additionalInterfaces"`
		Skills               json.RawMessage      `json:"skills"`
		Capabilities         struct {
			Extensions []Extension `json:"extensions"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%w: not a valid card document (a member has the wrong type, or the JSON is malformed)", ErrInvalidCard)
	}
	if w.Name == nil || strings.TrimSpace(*w.Name) == "" {
		return nil, fmt.Errorf("%w: no name", ErrInvalidCard)
	}
	if len(*w.Name) > maxNameBytes || !utf8.ValidString(*w.Name) {
		return nil, fmt.Errorf("%w: the name is not valid UTF-8 of at most %d bytes", ErrInvalidCard, maxNameBytes)
	}
	if len(w.Skills) == 0 || w.Skills[0] != '[' {
		return nil, fmt.Errorf("%w: no skills array", ErrInvalidCard)
	}
	c := &Card{Name: *w.Name, Description: w.Description, Version: w.Version, URL: w.URL,
		ProtocolVersion: w.ProtocolVersion, PreferredTransport: w.PreferredTransport,
		SupportedInterfaces: w.SupportedInterfaces, AdditionalInterfaces: w.AdditionalInterfaces,
		Extensions: w.Capabilities.Extensions}
	if err := json.Unmarshal(w.Skills, &c.Skills); err != nil {
		return nil, fmt.Errorf("%w: a skill is not a skill object", ErrInvalidCard)
	}
	if c.Skills == nil {
		c.Skills = []a2a.AgentSkill{}
	}
	return c, nil
}

// Binding is the A2A JSON-RPC binding the client speaks with a remote,
// chosen from its card.
type Binding string

// The bindings, named by their A2A protocol version.
const (
	// Binding10 is A2A 1.0 JSON-RPC (SendMessage, GetTask, CancelTask),
	// preferred when the card offers it.
	Binding10 Binding = a2atask.ProtocolVersion10
	// Binding03 is A2A 0.3 JSON-RPC (message/send, tasks/get,
	// tasks/cancel).
	Binding03 Binding = a2atask.ProtocolVersion03
)

// chooseBinding picks the binding and its endpoint: the first A2A 1.0
// JSON-RPC entry of supportedInterfaces, else a 0.3 JSON-RPC one (an entry
// of supportedInterfaces, the card's url with a 0.3 or no protocolVersion,
// or an additionalInterfaces entry of such a card).
func (c *Card) chooseBinding(only Binding) (Binding, string, error) {
	jsonrpc := func(s string) bool { return strings.EqualFold(s, a2a.TransportJSONRPC) }
	order := []Binding{Binding10, Binding03}
	if only != "" {
		order = []Binding{only}
	}
	for _, want := range order {
		for _, i := range c.SupportedInterfaces {
			if jsonrpc(i.ProtocolBinding) && majorMinor(i.ProtocolVersion) == string(want) && i.URL != "" {
				return want, i.URL, nil
			}
		}
	}
	if v := majorMinor(c.ProtocolVersion); (v == string(Binding03) || c.ProtocolVersion == "") && only != Binding10 {
		if c.URL != "" && (c.PreferredTransport == "" || jsonrpc(c.PreferredTransport)) {
			return Binding03, c.URL, nil
		}
		for _, i := range c.AdditionalInterfaces {
			if jsonrpc(i.Transport) && i.URL != "" {
				return Binding03, i.URL, nil
			}
		}
	}
	return "", "", ErrNoBinding
}

// majorMinor is the major.minor of a version ("1.0.2" → "1.0", "1" →
// "1.0"); "" when v does not start with numbers.
func majorMinor(v string) string {
	major, rest, _ := strings.Cut(strings.TrimSpace(v), ".")
	minor, _, _ := strings.Cut(rest, ".")
	if minor == "" {
		minor = "0"
	}
	ma, err := strconv.ParseUint(major, 10, 16)
	if err != nil {
		return ""
	}
	mi, err := strconv.ParseUint(minor, 10, 16)
	if err != nil {
		return ""
	}
	return strconv.FormatUint(ma, 10) + "." + strconv.FormatUint(mi, 10)
}

// discover reads the card at base: /.well-known/agent-card.json, then
// /.well-known/agent.json when the first is not found (404 or 410), all
// under one deadline. Any other failure ends the walk.
func (t *transport) discover(ctx context.Context, base *url.URL) (*Card, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.discoveryTimeout)
	defer cancel()
	for _, p := range []string{a2a.WellKnownCardPath, a2a.WellKnownCardPathV02} {
		u := *base
		u.Path = strings.TrimSuffix(base.Path, "/") + p
		u.RawPath = ""
		ex, err := t.do(ctx, http.MethodGet, &u, nil, http.Header{"Accept": {"application/json"}})
		if err != nil {
			return nil, fmt.Errorf("%w (discovery: %s)", err, p)
		}
		switch ex.status {
		case http.StatusOK:
			return DecodeCard(ex.body)
		case http.StatusNotFound, http.StatusGone:
			continue
		}
		return nil, &Error{Method: http.MethodGet, HTTPStatus: ex.status}
	}
	return nil, ErrNoCard
}
