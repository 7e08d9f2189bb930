package client_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a"
	"github.com/supervaize/supervaizer-go/a2a/client"
)

func TestDecodeCard(t *testing.T) {
	c, err := client.DecodeCard([]byte(`{"name":"Remote","description":"d","version":"2.1.0","skills":[{"id":"s","name":"S","description":"does s","tags":["a"]}],
		"capabilities":{"streaming":true,"extensions":[{"uri":"urn:x","required":true,"params":{"k":[1]}}]},
		"developer":"a string where a Supervaizer card has an object","securitySchemes":{"oauth":{"type":"oauth2","flows":{}}}}`))
	require.NoError(t, err, "members the client does not read are ignored, whatever their type")
	assert.Equal(t, "Remote", c.Name)
	assert.Equal(t, []a2a.AgentSkill{{ID: "s", Name: "S", Description: "does s", Tags: []string{"a"}}}, c.Skills)
	ext, ok := c.Extension("urn:x")
	require.True(t, ok)
	assert.Equal(t, client.Extension{URI: "urn:x", Required: true, Params: json.RawMessage(`{"k":[1]}`)}, ext)
	_, ok = c.Extension("urn:y")
	assert.False(t, ok)

	for name, doc := range map[string]string{
		"empty":            ``,
		"malformed":        `{"name":"R","skills":[]`,
		"name not string":  `{"name":7,"skills":[]}`,
		"name too long":    `{"name":"` + strings.Repeat("n", 1025) + `","skills":[]}`,
		"skill not object": `{"name":"R","skills":["s"]}`,
		"skills string":    `{"name":"R","skills":"s"}`,
		"interfaces wrong": `{"name":"R","skills":[],"supportedInterfaces":{}}`,
	} {
		_, err := client.DecodeCard([]byte(doc))
		assert.ErrorIs(t, err, client.ErrInvalidCard, name)
	}
}

// TestChooseBinding: A2A 1.0 JSON-RPC wherever the card lists it, else
// 0.3 JSON-RPC, else none.
func TestChooseBinding(t *testing.T) {
	tests := []struct {
		name string
		card string
		want client.Binding
	}{
		{"1.0 listed second", `{"name":"R","skills":[],"supportedInterfaces":[{"url":"{{base}}/v03","protocolBinding":"JSONRPC","protocolVersion":"0.3.0"},{"url":"{{base}}/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, client.Binding10},
		{"1.0 patch version", `{"name":"R","skills":[],"supportedInterfaces":[{"url":"{{base}}/a2a","protocolBinding":"jsonrpc","protocolVersion":"1.0.3"}]}`, client.Binding10},
		{"0.3 in supportedInterfaces", `{"name":"R","skills":[],"supportedInterfaces":[{"url":"{{base}}/a2a","protocolBinding":"GRPC","protocolVersion":"1.0"},{"url":"{{base}}/a2a","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`, client.Binding03},
		{"0.3 card url", card03, client.Binding03},
		{"0.3 no preferred transport", `{"name":"R","skills":[],"url":"{{base}}/a2a","protocolVersion":"0.3.0"}`, client.Binding03},
		{"0.3 additional interface", `{"name":"R","skills":[],"url":"{{base}}/grpc","preferredTransport":"GRPC","protocolVersion":"0.3.0","additionalInterfaces":[{"url":"{{base}}/a2a","transport":"JSONRPC"}]}`, client.Binding03},
		{"the Supervaizer card", `{"name":"R","skills":[],"url":"{{base}}/a2a","protocolVersion":"0.3.0","preferredTransport":"JSONRPC","supportedInterfaces":[{"url":"{{base}}/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"},{"url":"{{base}}/a2a","protocolBinding":"JSONRPC","protocolVersion":"0.3.0"}]}`, client.Binding10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRemote(t, true, tt.card, nil)
			assert.Equal(t, tt.want, r.dial(t).Binding())
		})
	}
	r := newRemote(t, true, `{"name":"R","skills":[],"url":"{{base}}/a2a","preferredTransport":"HTTP+JSON","protocolVersion":"0.3.0"}`, nil)
	_, err := client.New(context.Background(), r.srv.URL, r.opts()...)
	require.ErrorIs(t, err, client.ErrNoBinding)
}

// TestWithBinding: the caller may restrict the client to one binding.
func TestWithBinding(t *testing.T) {
	both := `{"name":"R","skills":[],"url":"{{base}}/a2a","protocolVersion":"0.3.0","supportedInterfaces":[{"url":"{{base}}/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`
	r := newRemote(t, true, both, nil)
	assert.Equal(t, client.Binding03, r.dial(t, client.WithBinding(client.Binding03)).Binding())
	assert.Equal(t, client.Binding10, r.dial(t, client.WithBinding(client.Binding10)).Binding())
	only03 := newRemote(t, true, card03, nil)
	_, err := client.New(context.Background(), only03.srv.URL, only03.opts(client.WithBinding(client.Binding10))...)
	require.ErrorIs(t, err, client.ErrNoBinding)
	_, err = client.New(context.Background(), only03.srv.URL, only03.opts(client.WithBinding("2.0"))...)
	require.ErrorContains(t, err, "not a binding")
}
