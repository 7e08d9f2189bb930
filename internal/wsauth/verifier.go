package wsauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Directory tells the verifier which agents the controller serves and their
// Studio agent ids (learned at the registration handshake or by agent
// lookup). It is consulted on every call, so its answers may change at run
// time; implementations must be safe for concurrent use.
type Directory interface {
	// Serves reports whether agentSlug is an agent of this controller.
	Serves(agentSlug string) bool
	// StudioAgentID returns the id Studio assigned to the agent, if known.
	StudioAgentID(agentSlug string) (id string, ok bool)
}

// Request is what one call asks the verifier to authorize.
type Request struct {
	// Header is the raw X-Supervaize-Workspace-Authorization value ("" when
	// absent); see [ExtractToken].
	Header string
	// WorkspaceID is the request's workspace.id.
	WorkspaceID string
	// WorkspaceSlug is the request's workspace.slug, "" when absent.
	WorkspaceSlug string
	// AgentSlug is the request's agent_slug.
	AgentSlug string
	// Scopes are the scopes the call requires, e.g.
	// {"supervaizer/action.invoke", "job.start"}.
	Scopes []string
}

// Context is the verified workspace context (V2VerifiedWorkspaceContext,
// the workspace-token rules). Every value comes from the verified claims; the
// slices and pointers are not shared with the verifier.
type Context struct {
	GrantID           string
	WorkspaceID       string
	WorkspaceSlug     *string // nil when the token has no workspace_slug
	AgentID           string
	AgentSlug         string
	ServerID          string
	Scopes            []string
	AgentWorkspaceRef *string // nil when the token has no agent_workspace_ref
}

// Option configures a [Verifier].
type Option func(*options)

type options struct {
	now      func() time.Time
	client   *http.Client
	logger   *slog.Logger
	interval time.Duration
	maxAge   time.Duration
	size     int
}

// WithClock sets the clock used for exp/iat checks and for rate limiting
// JWKS refetches. Default: time.Now.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithHTTPClient sets the client used to fetch the JWKS. Its CheckRedirect is
// replaced (on a copy) by the same-host policy of [MaxJWKSRedirects]; every
// fetch is bounded by [JWKSFetchTimeout]. Default: a client with
// http.DefaultTransport.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.client = c } }

// WithLogger sets the logger. Default: none (a nil logger discards). Logs
// never carry tokens; rejections are logged at debug level with a short
// SHA-256 fingerprint of the token.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithJWKSRefetchInterval sets the minimum time between two JWKS fetches.
// While a refetch is not allowed, a kid missing from the key cache is
// resolved against the last fetched key set (usually CodeUnknownKID) without
// fetching, so forged kids cannot make every request trigger a fetch; the
// cost is that a key published after the last fetch is seen at most d late.
// A zero or negative d removes the limit (concurrent misses are still
// coalesced into one fetch). Default: [DefaultJWKSRefetchInterval].
func WithJWKSRefetchInterval(d time.Duration) Option {
	return func(o *options) { o.interval = d }
}

// WithJWKSKeyMaxAge sets how long the keys of a successful JWKS fetch are
// trusted without another successful fetch. Past it, the next request that
// needs a key (a cached token included) refetches the set, subject to the
// refetch interval and coalesced with concurrent misses; a failed fetch keeps
// the previous set only until its maximum age, then requests fail with
// CodeJWKSUnavailable until a fetch succeeds. d is raised to the refetch
// interval when shorter; zero or negative means the default,
// [DefaultJWKSKeyMaxAge].
func WithJWKSKeyMaxAge(d time.Duration) Option { return func(o *options) { o.maxAge = d } }

// WithCacheSize sets how many verified tokens are cached; n <= 0 disables the
// cache. Default: [DefaultCacheSize]. A token is cached from its second
// verification on (see the package documentation); the table that records
// tokens verified once takes 16 bytes per cached token, at most 512 KiB.
func WithCacheSize(n int) Option { return func(o *options) { o.size = n } }

// Verifier verifies workspace authorization tokens. It is safe for
// concurrent use.
type Verifier struct {
	enabled bool
	issuer  string
	leeway  int64 // whole seconds
	server  string
	dir     Directory
	pemKey  *verifyKey  // set when the key comes from a PEM
	jwks    *jwksSource // set when the key comes from a JWKS
	aud     atomic.Pointer[expected]
	cache   *tokenCache // nil when disabled
	now     func() time.Time
	logger  *slog.Logger
}

// expected is the audience and server id tokens must carry, with the
// jwt/v5 parser and validator that check the registered claims against
// them.
type expected struct {
	audience  string
	serverID  string
	parser    *jwt.Parser    // steps 4–6, 8 and 10–13 of a token not yet verified
	rawParser *jwt.Parser    // parser, for a token without '=' padding
	validator *jwt.Validator // steps 10–13 of a cached token
}

// parserFor returns the parser for tok. Both accept the same tokens: with
// padding allowed, jwt/v5 appends '=' to every segment before decoding it
// (a copy of each segment), which a token without padding does not need.
func (e *expected) parserFor(tok string) *jwt.Parser {
	if strings.IndexByte(tok, '=') < 0 {
		return e.rawParser
	}
	return e.parser
}

// newExpected returns the expectations for audience ("" means the
// default). The parser accepts alg EdDSA only; it and the validator check
// iss, aud, exp (required), iat and nbf (when present) with the leeway,
// against now in whole seconds.
func (v *Verifier) newExpected(audience string) *expected {
	exp := &expected{audience: audience, serverID: v.server}
	if audience == "" {
		exp.audience = AudiencePrefix + v.server
	} else if rest, ok := strings.CutPrefix(audience, AudiencePrefix); ok {
		exp.serverID = rest
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithStrictDecoding(),
		jwt.WithIssuer(v.issuer),
		jwt.WithAudience(exp.audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(time.Duration(v.leeway) * time.Second),
		jwt.WithTimeFunc(func() time.Time { return time.Unix(v.now().Unix(), 0) }),
	}
	exp.rawParser = jwt.NewParser(opts...)
	exp.parser = jwt.NewParser(append(opts, jwt.WithPaddingAllowed())...)
	exp.validator = jwt.NewValidator(opts...)
	return exp
}

// New returns a verifier for the settings s, the controller's server id
// (SUPERVAIZER_SERVER_ID) and the agent directory dir. It fails when s does
// not pass [Settings.Validate] (so an unusable key stops startup instead of
// failing every request), when serverID is empty or when dir is nil. A
// verifier built from disabled settings answers every call with
// CodeNotConfigured.
func New(s Settings, serverID string, dir Directory, opts ...Option) (*Verifier, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if serverID == "" {
		return nil, errors.New("wsauth: empty server id")
	}
	if dir == nil {
		return nil, errors.New("wsauth: nil Directory")
	}
	o := options{now: time.Now, interval: DefaultJWKSRefetchInterval, maxAge: DefaultJWKSKeyMaxAge, size: DefaultCacheSize}
	for _, opt := range opts {
		opt(&o)
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.client == nil {
		o.client = &http.Client{}
	}
	v := &Verifier{
		enabled: s.Enabled,
		issuer:  s.Issuer,
		leeway:  int64(s.EffectiveLeeway() / time.Second),
		server:  serverID,
		dir:     dir,
		cache:   newTokenCache(o.size),
		now:     o.now,
		logger:  o.logger,
	}
	v.aud.Store(v.newExpected(s.Audience))
	if !s.Enabled {
		return v, nil
	}
	if s.PublicKeyPEM != "" {
		key, err := parsePublicKeyPEM(s.PublicKeyPEM)
		if err != nil { // unreachable: Validate parsed it
			return nil, err
		}
		v.pemKey = newVerifyKey(key)
	} else {
		v.jwks = newJWKSSource(s.JWKSURL, o.client, o.interval, o.maxAge, o.now, o.logger)
	}
	return v, nil
}

// SetAudience installs the audience Studio supplied in the registration
// handshake. It replaces Settings.Audience: the expected audience becomes
// aud, and the expected server id the part after "supervaizer-server:" when
// aud has that prefix. An empty aud restores the
// default, "supervaizer-server:" + the server id. The verified-token cache is
// cleared.
func (v *Verifier) SetAudience(aud string) {
	v.aud.Store(v.newExpected(aud))
	v.cache.clear()
}

// ExpectedAudience returns the audience tokens must carry.
func (v *Verifier) ExpectedAudience() string { return v.aud.Load().audience }

// Verify runs the verification algorithm of the workspace-token rules for r and
// returns the verified context. The first failing step determines the error,
// which is always an *Error. ctx bounds a JWKS fetch the call may need.
//
// Times are compared in whole seconds: now is truncated to the second, so a
// token is accepted up to and including now == exp + leeway (until the next
// second begins) and rejected as expired from exp + leeway + 1; likewise it
// is not yet valid while now < iat − leeway, or now < nbf − leeway when the
// token carries nbf.
func (v *Verifier) Verify(ctx context.Context, r Request) (*Context, error) {
	vc, tok, e := v.verify(ctx, r)
	if e != nil {
		if v != nil && v.logger.Enabled(ctx, slog.LevelDebug) {
			attrs := []slog.Attr{slog.String("code", string(e.Code)), slog.String("agent_slug", r.AgentSlug)}
			if tok != "" {
				attrs = append(attrs, slog.String("token_fingerprint", fingerprint(tok)))
			}
			v.logger.LogAttrs(ctx, slog.LevelDebug, "workspace authorization rejected", attrs...)
		}
		return nil, e
	}
	return vc, nil
}

// tokenKey returns the verifier cache key of a token: its SHA-256. The
// token is fed to the hash through a small buffer on the stack, cleared
// afterwards, instead of []byte(tok), which would copy the whole credential
// to the heap on every call (a cache hit included): no allocation, and no
// heap copy of the token.
func tokenKey(tok string) (sum [sha256.Size]byte) {
	h := sha256.New()
	var buf [8 * sha256.BlockSize]byte
	for len(tok) > 0 {
		n := copy(buf[:], tok)
		h.Write(buf[:n])
		tok = tok[n:]
	}
	clear(buf[:])
	h.Sum(sum[:0])
	return sum
}

// fingerprint returns the first 12 hex characters of the token's SHA-256.
func fingerprint(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:6])
}

func (v *Verifier) verify(ctx context.Context, r Request) (*Context, string, *Error) {
	// Steps 1–2: the configuration gate.
	if v == nil || !v.enabled {
		return nil, "", fail(CodeNotConfigured)
	}
	if v.issuer == "" || (v.pemKey == nil && v.jwks == nil) {
		return nil, "", fail(CodeNotConfigured)
	}
	// Step 3.
	tok := ExtractToken(r.Header)
	if tok == "" {
		return nil, "", fail(CodeMissing)
	}
	if len(tok) > MaxTokenBytes {
		return nil, tok, failf(CodeMalformed, "token longer than %d bytes", MaxTokenBytes)
	}
	now := v.now()
	key := tokenKey(tok)
	// A cached token counts as verified only while the JWKS key that
	// verified it is still trusted (not removed, changed or past its
	// maximum age), and only for the audience it was verified for;
	// otherwise it takes the full path, which refetches.
	if tc, keyGen, ok := v.cache.get(key); ok && tc.verifiedFor == v.aud.Load() && (v.jwks == nil || v.jwks.trusts(keyGen, now)) {
		// Steps 4–11 passed for these exact bytes and this audience.
		// Steps 12–13: within the validity window the parser accepted,
		// the token still passes; outside it, jwt/v5's validator says how
		// it fails. 14–21 always run.
		if !tc.inWindow(now.Unix(), v.leeway) {
			if e := claimsError(tc.verifiedFor.validator.Validate(tc), tc); e != nil {
				return nil, tok, e
			}
		}
		vc, e := v.check(&tc.claims, tc.verifiedFor, r)
		return vc, tok, e
	}
	gen := v.cache.generation()
	exp := v.aud.Load()
	tc, keyGen, e := v.verifyToken(ctx, tok, exp)
	// A token whose signature, claim types, issuer, audience and server id
	// hold is cached even when it is expired or not yet valid: steps 12–13
	// run again on every hit.
	if tc != nil && (e == nil || e.Code == CodeExpired || e.Code == CodeNotYetValid) && tc.serverID == exp.serverID {
		tc.verifiedFor = exp
		v.cache.put(key, tc, keyGen, satAdd(tc.exp, v.leeway), gen)
	}
	if e != nil {
		return nil, tok, e
	}
	vc, e := v.check(&tc.claims, exp, r)
	return vc, tok, e
}

// verifyToken runs steps 4–13 through jwt/v5's parser, after the format
// checks it lacks (checkFormat), and maps its errors to the spec's codes in
// the spec's order. It returns the claims once the signature and claim
// types are verified (with the error of steps 10–13, if any), and the
// generation of the JWKS key set that held the key (0 for a PEM key).
func (v *Verifier) verifyToken(ctx context.Context, tok string, exp *expected) (*tokenClaims, uint64, *Error) {
	if e := checkFormat(tok); e != nil {
		return nil, 0, e
	}
	tc := &tokenClaims{}
	var keyGen uint64
	token, err := exp.parserFor(tok).ParseWithClaims(tok, tc, func(t *jwt.Token) (any, error) {
		// Step 7, reached once the alg is EdDSA; a token malformed in a
		// way the parser does not see stops here, before any JWKS fetch.
		if e := formatError(t, tc); e != nil {
			return nil, e
		}
		key, gen, e := v.resolveKey(ctx, t.Header)
		if e != nil {
			return nil, e
		}
		keyGen = gen
		return key.jwt, nil
	})
	switch {
	case err == nil:
		return tc, keyGen, nil
	case errors.Is(err, jwt.ErrTokenMalformed): // step 5: base64url or JSON
		return nil, 0, malformedError(tok)
	}
	if e := formatError(token, tc); e != nil {
		return nil, 0, e
	}
	var e *Error
	switch {
	case token.Header["alg"] != jwt.SigningMethodEdDSA.Alg():
		// Step 6. The parser gives up on an alg it does not know before
		// it decodes the signature, which must be base64url too (step 5).
		if _, ok := decodeSegment(tok[strings.LastIndexByte(tok, '.')+1:]); !ok {
			return nil, 0, failf(CodeMalformed, "invalid base64url segment")
		}
		return nil, 0, fail(CodeUnsupportedAlg)
	case errors.As(err, &e): // step 7, from the key function
		return nil, 0, e
	case errors.Is(err, jwt.ErrInvalidKey): // a key that is not 32 bytes
		return nil, 0, fail(CodeInvalidKey)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid): // step 8
		return nil, 0, fail(CodeBadSignature)
	case tc.invalid != nil: // step 9
		return nil, 0, tc.invalid
	}
	if e := claimsError(err, tc); e != nil { // steps 10–13
		return tc, keyGen, e
	}
	// Unreachable: every error the parser returns is mapped above.
	return nil, 0, failf(CodeMalformed, "unexpected token error")
}

// claimsError maps the error of jwt/v5's claim validation (all failures
// joined) to the first failing step of 9–13, nil when err is nil.
func claimsError(err error, tc *tokenClaims) *Error {
	switch {
	case err == nil:
		return nil
	case tc.invalid != nil: // step 9
		return tc.invalid
	// The parser reports an empty iss or aud as a missing claim. Claim
	// types were checked (exp is present), so iss comes first, then aud.
	case errors.Is(err, jwt.ErrTokenInvalidIssuer), errors.Is(err, jwt.ErrTokenRequiredClaimMissing) && tc.iss == "":
		return fail(CodeWrongIssuer)
	case errors.Is(err, jwt.ErrTokenInvalidAudience), errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return fail(CodeWrongAudience)
	case errors.Is(err, jwt.ErrTokenExpired):
		return fail(CodeExpired)
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued), errors.Is(err, jwt.ErrTokenNotValidYet):
		return fail(CodeNotYetValid)
	}
	return failf(CodeInvalidClaims, "unexpected claim error")
}

// resolveKey is step 7.
func (v *Verifier) resolveKey(ctx context.Context, header map[string]any) (*verifyKey, uint64, *Error) {
	switch {
	case v.pemKey != nil:
		return v.pemKey, 0, nil
	case v.jwks == nil:
		return nil, 0, fail(CodeNotConfigured)
	}
	kid, _ := header["kid"].(string)
	if kid == "" {
		return nil, 0, fail(CodeMissingKID)
	}
	return v.jwks.resolve(ctx, kid)
}

// check runs steps 14–22 on claims that passed steps 4–13.
func (v *Verifier) check(cl *claims, exp *expected, r Request) (*Context, *Error) {
	// 14.
	if cl.serverID != exp.serverID {
		return nil, fail(CodeWrongServer)
	}
	// 15–18.
	if !v.dir.Serves(r.AgentSlug) {
		return nil, fail(CodeUnknownAgent)
	}
	if cl.agentSlug != r.AgentSlug {
		return nil, failf(CodeWrongAgent, "agent_slug differs")
	}
	studioID, ok := v.dir.StudioAgentID(r.AgentSlug)
	if !ok || studioID == "" {
		return nil, fail(CodeAgentNotRegistered)
	}
	if cl.agentID != studioID {
		return nil, failf(CodeWrongAgent, "agent_id differs")
	}
	// 19–20.
	if cl.workspaceID != r.WorkspaceID {
		return nil, failf(CodeWrongWorkspace, "workspace_id differs")
	}
	if cl.workspaceSlug != nil && *cl.workspaceSlug != "" && r.WorkspaceSlug != "" && *cl.workspaceSlug != r.WorkspaceSlug {
		return nil, failf(CodeWrongWorkspace, "workspace slug differs")
	}
	// 21.
	var missing []string
	for _, s := range r.Scopes {
		if !slices.Contains(cl.scopes, s) && !slices.Contains(missing, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return nil, missingScopes(missing)
	}
	// 22. One allocation holds the context, the strings its pointers refer
	// to and, up to blockScopes of them, its scopes; nothing is shared with
	// the cached claims.
	out := &contextBlock{Context: Context{
		GrantID:     cl.grantID,
		WorkspaceID: cl.workspaceID,
		AgentID:     cl.agentID,
		AgentSlug:   cl.agentSlug,
		ServerID:    cl.serverID,
	}}
	if n := len(cl.scopes); n <= len(out.scopes) {
		copy(out.scopes[:], cl.scopes)
		out.Scopes = out.scopes[:n:n] // an append reallocates
	} else {
		out.Scopes = slices.Clone(cl.scopes)
	}
	if cl.workspaceSlug != nil {
		out.workspaceSlug = *cl.workspaceSlug
		out.WorkspaceSlug = &out.workspaceSlug
	}
	if cl.agentWorkspaceRef != nil {
		out.agentWorkspaceRef = *cl.agentWorkspaceRef
		out.AgentWorkspaceRef = &out.agentWorkspaceRef
	}
	return &out.Context, nil
}

// contextBlock is a Context with the storage of its two optional strings
// and of up to four scopes (a token usually grants a method and an action
// or surface, for a call or two).
type contextBlock struct {
	Context
	workspaceSlug     string
	agentWorkspaceRef string
	scopes            [4]string
}

// satAdd returns a + b (b >= 0), saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
