package wsauth

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Environment variables of the settings (read by supervaizer.ReadEnv, parsed
// by [ParseSettings]).
const (
	EnvRequired      = "SUPERVAIZER_WORKSPACE_AUTH_REQUIRED"
	EnvIssuer        = "SUPERVAIZER_WORKSPACE_AUTH_ISSUER"
	EnvAudience      = "SUPERVAIZER_WORKSPACE_AUTH_AUDIENCE"
	EnvPublicKey     = "SUPERVAIZER_WORKSPACE_AUTH_PUBLIC_KEY"
	EnvJWKSURL       = "SUPERVAIZER_WORKSPACE_AUTH_JWKS_URL"
	EnvLeewaySeconds = "SUPERVAIZER_WORKSPACE_AUTH_LEEWAY_SECONDS"
)

// DefaultLeeway is the clock leeway applied to exp and iat when none is set.
const DefaultLeeway = 30 * time.Second

// AudiencePrefix prefixes the server id in the default expected audience.
const AudiencePrefix = "supervaizer-server:"

// Settings configures workspace authorization (V2WorkspaceAuthorizationSettings,
// the workspace-token rules). The zero value is "disabled, nothing configured".
type Settings struct {
	// Enabled turns verification on. A disabled verifier answers every
	// request with CodeNotConfigured; the local-mode bypass is the caller's.
	Enabled bool
	// Issuer is the expected iss claim.
	Issuer string
	// Audience is the expected aud claim. Usually left empty and supplied by
	// Studio in the registration handshake ([Verifier.SetAudience]); when
	// empty the expected audience is AudiencePrefix + the server id.
	Audience string
	// PublicKeyPEM is Studio's Ed25519 public key in PEM (SubjectPublicKeyInfo)
	// form. When set, JWKSURL is ignored.
	PublicKeyPEM string
	// JWKSURL is the http(s) URL of Studio's JWKS.
	JWKSURL string
	// Leeway is the clock leeway for exp and iat, in whole seconds (a
	// fraction of a second is truncated). It applies only when LeewaySet is
	// true; otherwise DefaultLeeway is used.
	Leeway time.Duration
	// LeewaySet reports whether Leeway was configured (so that an explicit
	// zero leeway can be told apart from "unset").
	LeewaySet bool
}

// Values are the values of the variables above, as read from the
// environment ("" when unset).
type Values struct {
	Required, Issuer, Audience, PublicKey, JWKSURL, LeewaySeconds string
}

// ParseSettings turns the values of the variables above into settings.
// Empty and blank values count as unset. SUPERVAIZER_WORKSPACE_AUTH_REQUIRED
// is true for "1", "true", "yes" or "on" (case-insensitive, trimmed) and false
// otherwise. The error, if any, names the offending variable; ParseSettings
// does not call [Settings.Validate].
func ParseSettings(v Values) (Settings, error) {
	get := func(v string) string {
		if strings.TrimSpace(v) == "" {
			return ""
		}
		return v
	}
	s := Settings{
		Issuer:       get(v.Issuer),
		Audience:     get(v.Audience),
		PublicKeyPEM: get(v.PublicKey),
		JWKSURL:      get(v.JWKSURL),
	}
	switch strings.ToLower(strings.TrimSpace(v.Required)) {
	case "1", "true", "yes", "on":
		s.Enabled = true
	}
	if raw := strings.TrimSpace(v.LeewaySeconds); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 || n > math.MaxInt64/int64(time.Second) {
			return Settings{}, fmt.Errorf("%s must be an integer number of seconds >= 0, got %q", EnvLeewaySeconds, raw)
		}
		s.Leeway, s.LeewaySet = time.Duration(n)*time.Second, true
	}
	return s, nil
}

// EffectiveLeeway returns the leeway in force: Leeway when LeewaySet, else
// DefaultLeeway.
func (s Settings) EffectiveLeeway() time.Duration {
	if s.LeewaySet {
		return s.Leeway
	}
	return DefaultLeeway
}

// AnyConfigured reports whether any workspace-authorization setting is
// configured: Enabled, or any of Issuer, Audience, PublicKeyPEM and JWKSURL.
// The local-mode bypass applies only when it is false.
func (s Settings) AnyConfigured() bool {
	return s.Enabled || s.Issuer != "" || s.Audience != "" || s.PublicKeyPEM != "" || s.JWKSURL != ""
}

// Validate reports configuration errors that must stop the controller at
// startup. Disabled settings are always valid (they
// make every verification fail with CodeNotConfigured). Enabled settings
// need an issuer and a key source; an unparsable or non-Ed25519 PEM, a JWKS
// URL that is not an absolute http(s) URL and a negative leeway are reported
// too, so that startup fails early instead of every request failing later.
// Every message names the environment variable(s) involved.
func (s Settings) Validate() error {
	if !s.Enabled {
		return nil
	}
	var errs []error
	if s.Issuer == "" {
		errs = append(errs, fmt.Errorf("%s is required when %s is true", EnvIssuer, EnvRequired))
	}
	switch {
	case s.PublicKeyPEM != "":
		if _, err := parsePublicKeyPEM(s.PublicKeyPEM); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvPublicKey, err))
		}
	case s.JWKSURL != "":
		if err := checkJWKSURL(s.JWKSURL); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvJWKSURL, err))
		}
	default:
		errs = append(errs, fmt.Errorf("%s or %s is required when %s is true", EnvPublicKey, EnvJWKSURL, EnvRequired))
	}
	if s.LeewaySet && s.Leeway < 0 {
		errs = append(errs, fmt.Errorf("%s must be >= 0, got %v", EnvLeewaySeconds, s.Leeway))
	}
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return fmt.Errorf("invalid workspace authorization settings: %s", strings.Join(msgs, "; "))
}

// parsePublicKeyPEM parses an Ed25519 public key in PEM SubjectPublicKeyInfo
// form.
func parsePublicKeyPEM(pemText string) (ed25519.PublicKey, error) {
	key, err := jwt.ParseEdPublicKeyFromPEM([]byte(pemText))
	switch {
	case errors.Is(err, jwt.ErrKeyMustBePEMEncoded):
		if looksLikePath(pemText) {
			return nil, fmt.Errorf("not a PEM-encoded public key: it holds the PEM text of the key (-----BEGIN PUBLIC KEY----- …), "+
				"not a file path, and %q looks like a path; set it to the file's content, e.g. %s=\"$(cat %s)\"", pemText, EnvPublicKey, pemText)
		}
		return nil, errors.New("not a PEM-encoded public key: it holds the PEM text of the key (-----BEGIN PUBLIC KEY----- …)")
	case errors.Is(err, jwt.ErrNotEdPublicKey):
		return nil, errors.New("not an Ed25519 public key")
	case err != nil:
		return nil, errors.New("not a PEM SubjectPublicKeyInfo public key")
	}
	pub, ok := key.(ed25519.PublicKey)
	if !ok || len(pub) != ed25519.PublicKeySize {
		return nil, errors.New("not an Ed25519 public key")
	}
	return pub, nil
}

// checkJWKSURL requires an absolute http or https URL with a host.
func checkJWKSURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a valid URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http or https URL")
	}
	return nil
}

// looksLikePath reports whether v, which is not PEM, looks like a file path
// (one line naming a folder or a key file) rather than key material.
func looksLikePath(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" || strings.ContainsAny(v, "\n") || strings.Contains(v, "-----") {
		return false
	}
	for _, p := range []string{"/", "./", "../", "~", `\`} {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	if len(v) > 2 && v[1] == ':' && (v[2] == '\\' || v[2] == '/') { // C:\keys
		return true
	}
	for _, ext := range []string{".pem", ".pub", ".key", ".crt"} {
		if strings.HasSuffix(strings.ToLower(v), ext) {
			return true
		}
	}
	return false // base64 key material may hold a "/" too
}
