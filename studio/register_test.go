package studio

import (
	"bytes"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/supervaize/supervaizer-go/internal/tools/studiotest"
)

var macURI = regexp.MustCompile(`^server:[0-9A-F]{2}(-[0-9A-F]{2}){5}$`)

func TestDecryptParameters(t *testing.T) {
	t.Parallel()
	key, _ := studiotest.ControllerRSA(t)
	plain := `[{"name":"OPENAI_API_KEY","value":"sk-1"},{"name":"MAX_SOURCES","value":12},{"name":"NOTES","value":null},{"name":"FLAGS","value":{"a": true}}]`
	got, err := decryptParameters(key, studiotest.EncryptParameters(t, &key.PublicKey, []byte(plain)))
	require.NoError(t, err)
	assert.Equal(t, []AgentParameter{{"OPENAI_API_KEY", "sk-1"}, {"MAX_SOURCES", "12"}, {"NOTES", ""}, {"FLAGS", `{"a":true}`}}, got)

	valid := studiotest.EncryptParameters(t, &key.PublicKey, []byte(`[]`))
	raw, _ := base64.StdEncoding.DecodeString(valid)
	tamperedKey := bytes.Clone(raw)
	tamperedKey[10] ^= 0xff
	// CBC: flipping the last byte of the block before the last flips the last
	// plaintext byte, the padding length of `[]` (14), into 0xf1: invalid
	// padding every time (flipping a byte of the last block would leave a
	// valid padding once in about 256 runs).
	tamperedPad := bytes.Clone(raw)
	tamperedPad[len(tamperedPad)-1-16] ^= 0xff
	tests := []struct {
		name, in, want string
	}{
		{"not base64", "***", "not standard base64"},
		{"too short", base64.StdEncoding.EncodeToString(raw[:100]), "is not an encrypted key"},
		{"not whole blocks", base64.StdEncoding.EncodeToString(append(bytes.Clone(raw), 1)), "is not an encrypted key"},
		{"wrong key", base64.StdEncoding.EncodeToString(tamperedKey), "cannot be decrypted"},
		{"bad padding", base64.StdEncoding.EncodeToString(tamperedPad), "padding"},
		{"not an array", studiotest.EncryptParameters(t, &key.PublicKey, []byte(`{"name":"a"}`)), "not a JSON array"},
		{"item without name", studiotest.EncryptParameters(t, &key.PublicKey, []byte(`[{"value":"a"}]`)), "non-blank string name"},
		{"duplicate names", studiotest.EncryptParameters(t, &key.PublicKey, []byte(`[{"name":"a"},{"name":"a"}]`)), "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decryptParameters(key, tt.in)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestServerURI(t *testing.T) {
	t.Parallel()
	assert.Regexp(t, macURI, ServerURI("srv"))
	a, b := fallbackMAC("srv-1"), fallbackMAC("srv-1")
	assert.Equal(t, a, b, "deterministic")
	assert.NotEqual(t, a, fallbackMAC("srv-2"))
	assert.Regexp(t, macURI, "server:"+a)
	first, _ := hexByte(a[:2])
	assert.Equal(t, byte(0x02), first&0x03, "locally administered, unicast")
}

func hexByte(s string) (byte, error) {
	var b byte
	for _, c := range s {
		b <<= 4
		switch {
		case c >= '0' && c <= '9':
			b |= byte(c - '0')
		case c >= 'A' && c <= 'F':
			b |= byte(c-'A') + 10
		default:
			return 0, errors.New("not hex")
		}
	}
	return b, nil
}

func FuzzParseHandshake(f *testing.F) {
	f.Add([]byte(`{"id":"srv_01","supervaizer_handshake":{"server_id":"studio-server-1","controller_api_key_match":true,"workspace_authorization":{"audience":"supervaizer-server:studio-server-1","agents":[{"id":"studio-agent-42","slug":"research-agent"},{"id":"studio-agent-43","slug":"second-agent"}]}}}`))
	f.Add([]byte(`{"supervaizer_handshake":{"controller_api_key_match":false,"reason":"stored_controller_api_key_mismatch"}}`))
	f.Add([]byte(`{"supervaizer_handshake":{"controller_api_key_match":true,"workspace_authorization":{"audience":" ","agents":{}}}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[{"supervaizer_handshake":1}]`))
	local := []LocalAgent{{Slug: "research-agent"}, {Slug: "second-agent", StudioID: "studio-agent-43"}}
	f.Fuzz(func(t *testing.T, body []byte) {
		hs, err := parseHandshake(body, "215345834bf2", "", local)
		if err != nil {
			if !errors.Is(err, ErrHandshake) {
				t.Fatalf("error %v does not wrap ErrHandshake", err)
			}
			return
		}
		if strings.TrimSpace(hs.Audience) == "" || len(hs.Links) != len(local) {
			t.Fatalf("accepted handshake %+v", hs)
		}
		for i, l := range hs.Links {
			if l.Slug != local[i].Slug || strings.TrimSpace(l.ID) == "" || (local[i].StudioID != "" && l.ID != local[i].StudioID) {
				t.Fatalf("bad link %+v for %+v", l, local[i])
			}
		}
	})
}

func FuzzParseAgentDetail(f *testing.F) {
	f.Add([]byte(`{"object":{"id":"studio-agent-42","status":"active","onboarding_status":"configured","parameters_encrypted":"AAAA"}}`))
	f.Add([]byte(`{"data":{"id":42}}`))
	f.Add([]byte(`{"agent":[],"id":-1.5e3}`))
	f.Add([]byte(`"x"`))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := parseAgentDetail(body)
		if err == nil && d.id != strings.TrimSpace(d.id) {
			t.Fatalf("id %q not trimmed", d.id)
		}
	})
}

func FuzzParseParameters(f *testing.F) {
	f.Add([]byte(`[{"name":"REGION","value":"eu"},{"name":"N","value":3},{"name":"X","value":null}]`))
	f.Add([]byte(`[{"name":"a"},{"name":"a"}]`))
	f.Add([]byte(`{"name":"a"}`))
	f.Fuzz(func(t *testing.T, plain []byte) {
		ps, err := parseParameters(plain)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, p := range ps {
			if strings.TrimSpace(p.Name) == "" || seen[p.Name] {
				t.Fatalf("bad parameter list %v", ps)
			}
			seen[p.Name] = true
		}
	})
}

func BenchmarkParseHandshake(b *testing.B) {
	body := []byte(`{"id":"srv_01","supervaizer_handshake":{"server_id":"studio-server-1","controller_api_key_match":true,"stored_controller_api_key_fingerprint":"215345834bf2","reason":null,"workspace_authorization":{"audience":"supervaizer-server:studio-server-1","studio_server_id":"studio-server-1","agents":[{"id":"studio-agent-42","slug":"research-agent"}]}}}`)
	local := []LocalAgent{{Slug: "research-agent"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseHandshake(body, "215345834bf2", "", local); err != nil {
			b.Fatal(err)
		}
	}
}
