package wsauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func valuesFrom(m map[string]string) Values {
	return Values{Required: m[EnvRequired], Issuer: m[EnvIssuer], Audience: m[EnvAudience],
		PublicKey: m[EnvPublicKey], JWKSURL: m[EnvJWKSURL], LeewaySeconds: m[EnvLeewaySeconds]}
}

func TestParseSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    Settings
		wantErr string // substring; "" means no error
	}{
		{name: "empty", env: nil, want: Settings{}},
		{name: "all set", env: map[string]string{
			EnvRequired: "true", EnvIssuer: testIssuer, EnvAudience: testAudience,
			EnvPublicKey: "PEM", EnvJWKSURL: "https://studio.example/jwks", EnvLeewaySeconds: "45",
		}, want: Settings{
			Enabled: true, Issuer: testIssuer, Audience: testAudience, PublicKeyPEM: "PEM",
			JWKSURL: "https://studio.example/jwks", Leeway: 45 * time.Second, LeewaySet: true,
		}},
		{name: "required 1", env: map[string]string{EnvRequired: "1"}, want: Settings{Enabled: true}},
		{name: "required YES trimmed", env: map[string]string{EnvRequired: "  YES\t"}, want: Settings{Enabled: true}},
		{name: "required On", env: map[string]string{EnvRequired: "On"}, want: Settings{Enabled: true}},
		{name: "required TRUE", env: map[string]string{EnvRequired: "TRUE"}, want: Settings{Enabled: true}},
		{name: "required false", env: map[string]string{EnvRequired: "false"}, want: Settings{}},
		{name: "required 0", env: map[string]string{EnvRequired: "0"}, want: Settings{}},
		{name: "required enabled (not a true word)", env: map[string]string{EnvRequired: "enabled"}, want: Settings{}},
		{name: "required y (not a true word)", env: map[string]string{EnvRequired: "y"}, want: Settings{}},
		{name: "blank values are unset", env: map[string]string{
			EnvIssuer: " ", EnvAudience: "\t", EnvPublicKey: "\n", EnvJWKSURL: "", EnvLeewaySeconds: "  ",
		}, want: Settings{}},
		{name: "values kept verbatim", env: map[string]string{EnvIssuer: " iss "}, want: Settings{Issuer: " iss "}},
		{name: "leeway 0", env: map[string]string{EnvLeewaySeconds: "0"}, want: Settings{LeewaySet: true}},
		{name: "leeway trimmed", env: map[string]string{EnvLeewaySeconds: " 5 "}, want: Settings{Leeway: 5 * time.Second, LeewaySet: true}},
		{name: "leeway negative", env: map[string]string{EnvLeewaySeconds: "-1"}, wantErr: EnvLeewaySeconds},
		{name: "leeway fractional", env: map[string]string{EnvLeewaySeconds: "1.5"}, wantErr: EnvLeewaySeconds},
		{name: "leeway word", env: map[string]string{EnvLeewaySeconds: "thirty"}, wantErr: EnvLeewaySeconds},
		{name: "leeway too large", env: map[string]string{EnvLeewaySeconds: "9223372037"}, wantErr: EnvLeewaySeconds},
		{name: "leeway overflow", env: map[string]string{EnvLeewaySeconds: "99999999999999999999"}, wantErr: EnvLeewaySeconds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSettings(valuesFrom(tt.env))
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestSettingsEffectiveLeeway(t *testing.T) {
	t.Parallel()
	assert.Equal(t, DefaultLeeway, Settings{}.EffectiveLeeway())
	assert.Equal(t, DefaultLeeway, Settings{Leeway: time.Minute}.EffectiveLeeway())
	assert.Equal(t, time.Duration(0), Settings{LeewaySet: true}.EffectiveLeeway())
	assert.Equal(t, time.Minute, Settings{Leeway: time.Minute, LeewaySet: true}.EffectiveLeeway())
}

func TestSettingsAnyConfigured(t *testing.T) {
	t.Parallel()
	assert.False(t, Settings{}.AnyConfigured())
	assert.False(t, Settings{Leeway: time.Second, LeewaySet: true}.AnyConfigured())
	for _, s := range []Settings{
		{Enabled: true}, {Issuer: "i"}, {Audience: "a"}, {PublicKeyPEM: "p"}, {JWKSURL: "u"},
	} {
		assert.True(t, s.AnyConfigured(), "%+v", s)
	}
}

func pemOf(typ string, der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

func TestSettingsValidate(t *testing.T) {
	t.Parallel()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ecDER, err := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	require.NoError(t, err)
	rsaDER, err := x509.MarshalPKIXPublicKey(&rsaTestKey().PublicKey)
	require.NoError(t, err)
	privDER, err := x509.MarshalPKCS8PrivateKey(mainKey.priv)
	require.NoError(t, err)

	good := pemSettings(t)
	tests := []struct {
		name string
		s    Settings
		want []string // substrings of the error; nil means valid
	}{
		{name: "disabled and empty", s: Settings{}},
		{name: "disabled with junk", s: Settings{PublicKeyPEM: "junk", JWKSURL: "ftp://x", Leeway: -1, LeewaySet: true}},
		{name: "PEM", s: good},
		{name: "JWKS", s: Settings{Enabled: true, Issuer: testIssuer, JWKSURL: "https://studio.example/jwks"}},
		{name: "PEM wins over a bad JWKS URL", s: Settings{Enabled: true, Issuer: testIssuer, PublicKeyPEM: good.PublicKeyPEM, JWKSURL: "::"}},
		{name: "no issuer", s: Settings{Enabled: true, PublicKeyPEM: good.PublicKeyPEM}, want: []string{EnvIssuer, EnvRequired}},
		{name: "no key source", s: Settings{Enabled: true, Issuer: testIssuer}, want: []string{EnvPublicKey, EnvJWKSURL, EnvRequired}},
		{name: "nothing", s: Settings{Enabled: true}, want: []string{EnvIssuer, EnvPublicKey, EnvJWKSURL}},
		{name: "PEM garbage", s: Settings{Enabled: true, Issuer: testIssuer, PublicKeyPEM: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"}, want: []string{EnvPublicKey}},
		{name: "not PEM", s: Settings{Enabled: true, Issuer: testIssuer, PublicKeyPEM: b64(mainKey.pub)}, want: []string{EnvPublicKey, "PEM", "holds the PEM text"}},
		{name: "a file path, not the PEM text", s: Settings{Enabled: true, Issuer: testIssuer, PublicKeyPEM: "/etc/studio/ed25519.pem"},
			want: []string{EnvPublicKey, "holds the PEM text", `"/etc/studio/ed25519.pem" looks like a path`, EnvPublicKey + `="$(cat /etc/studio/ed25519.pem)"`}},
		{name: "a relative key file name", s: Settings{Enabled: true, Issuer: testIssuer, PublicKeyPEM: "studio.pub"}, want: []string{"holds the PEM text", "looks like a path"}},
		{name: "a home path", s: Settings{Enabled: true, Issuer: testIssuer, PublicKeyPEM: "~/keys/studio"}, want: []string{"holds the PEM text", "looks like a path"}},
		{name: "RSA PEM", s: Settings{Enabled: true, Issuer: testIssuer, PublicKeyPEM: pemOf("PUBLIC KEY", rsaDER)}, want: []string{EnvPublicKey, "Ed25519"}},
		{name: "EC PEM", s: Settings{Enabled: true, Issuer: testIssuer, PublicKeyPEM: pemOf("PUBLIC KEY", ecDER)}, want: []string{EnvPublicKey, "Ed25519"}},
		{name: "private key PEM", s: Settings{Enabled: true, Issuer: testIssuer, PublicKeyPEM: pemOf("PRIVATE KEY", privDER)}, want: []string{EnvPublicKey}},
		{name: "JWKS URL not http", s: Settings{Enabled: true, Issuer: testIssuer, JWKSURL: "ftp://studio.example/jwks"}, want: []string{EnvJWKSURL}},
		{name: "JWKS URL relative", s: Settings{Enabled: true, Issuer: testIssuer, JWKSURL: "/jwks"}, want: []string{EnvJWKSURL}},
		{name: "JWKS URL unparsable", s: Settings{Enabled: true, Issuer: testIssuer, JWKSURL: "https://x/%zz"}, want: []string{EnvJWKSURL}},
		{name: "negative leeway", s: Settings{Enabled: true, Issuer: testIssuer, PublicKeyPEM: good.PublicKeyPEM, Leeway: -time.Second, LeewaySet: true}, want: []string{EnvLeewaySeconds}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.s.Validate()
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			_, err = New(tt.s, testServerID, newTestDir())
			assert.Error(t, err, "New must refuse what Validate refuses")
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	_, err := New(pemSettings(t), "", newTestDir())
	assert.ErrorContains(t, err, "server id")
	_, err = New(pemSettings(t), testServerID, nil)
	assert.ErrorContains(t, err, "Directory")
	_, err = New(pemSettings(t), testServerID, newTestDir(), WithClock(nil), WithLogger(nil), WithHTTPClient(nil))
	assert.NoError(t, err, "nil options fall back to defaults")
}

func TestVerifyNotConfigured(t *testing.T) {
	t.Parallel()
	tok := mintWith(t, nil)
	for name, s := range map[string]Settings{
		"nothing":                        {},
		"trust material without enabled": {Issuer: testIssuer, PublicKeyPEM: mainKey.pem(t), Audience: testAudience},
	} {
		v, err := New(s, testServerID, newTestDir())
		require.NoError(t, err, name)
		for _, header := range []string{"", tok} { // step 1 precedes the token check
			_, err = v.Verify(context.Background(), testRequest(header))
			var e *Error
			require.ErrorAs(t, err, &e, name)
			assert.Equal(t, CodeNotConfigured, e.Code, name)
		}
	}
	var nilV *Verifier
	_, err := nilV.Verify(context.Background(), testRequest(tok))
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, CodeNotConfigured, e.Code)

	// Step 2, should a verifier ever be left without an issuer or key.
	v := newPEMVerifier(t)
	v.pemKey = nil
	_, err = v.Verify(context.Background(), testRequest(tok))
	require.ErrorAs(t, err, &e)
	assert.Equal(t, CodeNotConfigured, e.Code)
}

func TestExpectedAudienceAndServer(t *testing.T) {
	t.Parallel()
	const local = "local-7f3a"
	tests := []struct {
		name, configured, set string
		wantAud, wantServer   string
	}{
		{name: "default", wantAud: AudiencePrefix + local, wantServer: local},
		{name: "configured Studio audience", configured: testAudience, wantAud: testAudience, wantServer: testServerID},
		{name: "configured custom audience", configured: "my-audience", wantAud: "my-audience", wantServer: local},
		{name: "handshake audience", set: testAudience, wantAud: testAudience, wantServer: testServerID},
		{name: "handshake replaces configured", configured: "my-audience", set: testAudience, wantAud: testAudience, wantServer: testServerID},
		{name: "prefix only", set: AudiencePrefix, wantAud: AudiencePrefix, wantServer: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := pemSettings(t)
			s.Audience = tt.configured
			v, err := New(s, local, newTestDir(), WithClock(func() time.Time { return testNow }))
			require.NoError(t, err)
			if tt.set != "" {
				v.SetAudience(tt.set)
			}
			assert.Equal(t, tt.wantAud, v.ExpectedAudience())
			_, err = v.Verify(context.Background(), testRequest(mintWith(t, func(_, c map[string]any) {
				c["aud"], c["server_id"] = tt.wantAud, tt.wantServer
			})))
			assert.NoError(t, err)
			_, err = v.Verify(context.Background(), testRequest(mintWith(t, func(_, c map[string]any) {
				c["aud"], c["server_id"] = tt.wantAud, tt.wantServer+"x"
			})))
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, CodeWrongServer, e.Code)
		})
	}
}

func TestSetAudienceEmptyRestoresDefault(t *testing.T) {
	t.Parallel()
	v := newPEMVerifier(t)
	v.SetAudience("supervaizer-server:other")
	assert.Equal(t, "supervaizer-server:other", v.ExpectedAudience())
	v.SetAudience("")
	assert.Equal(t, testAudience, v.ExpectedAudience())
}

func TestLooksLikePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    string
		want bool
	}{
		{"/etc/studio/ed25519.pem", true},
		{"./studio.pem", true},
		{"studio.pub", true},
		{"~/keys/studio", true},
		{`C:\keys\studio`, true},
		{"MCowBQYDK2VwAyEA0123456789abcdefghijklmnopqrstuvwxyzABCD", false},
		{"MCowBQYDK2VwAyEA01234/6789abcdefghijklmnopqrstuvwxyzAB+=", false},
		{"keys/studio.PEM", true},
		{"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", false},
		{"", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, looksLikePath(tt.v), tt.v)
	}
}
