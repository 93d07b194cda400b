package bridge

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store"
)

// Scopes a client token can carry.
const (
	ScopeRead      = "read"
	ScopeSubmit    = "submit"
	ScopeControl   = "control"
	ScopeWorkflows = "workflows"
)

// AllScopes is every scope, in canonical order.
var AllScopes = []string{ScopeRead, ScopeSubmit, ScopeControl, ScopeWorkflows}

// OwnerClient is the principal name of the owner token; no client token may use it.
const OwnerClient = "owner"

var clientIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Principal is the authenticated caller of a request.
type Principal struct {
	Client   string
	Scopes   []string
	Profiles []string
	Owner    bool
	hash     [32]byte
}

// Has reports whether the principal holds scope.
func (p Principal) Has(scope string) bool { return p.Owner || slices.Contains(p.Scopes, scope) }

// MayUse reports whether the principal may run jobs with profile.
func (p Principal) MayUse(profile string) bool {
	return p.Owner || slices.Contains(p.Profiles, profile) || slices.Contains(p.Profiles, "*")
}

// TokenRequest is the body of POST /v1/bridge/admin/tokens and the CLI's flags.
type TokenRequest struct {
	ID       string   `json:"id"`
	Profiles []string `json:"profiles"`
	Scopes   []string `json:"scopes"`
}

// IssuedToken is the answer to a token request; Token is shown only once.
type IssuedToken struct {
	Token     string    `json:"token"`
	Client    string    `json:"client"`
	Profiles  []string  `json:"profiles"`
	Scopes    []string  `json:"scopes"`
	TokenID   string    `json:"tokenId"`
	CreatedAt time.Time `json:"createdAt"`
}

// TokenInfo describes a stored token without revealing it.
type TokenInfo struct {
	TokenID   string     `json:"tokenId"`
	Client    string     `json:"client"`
	Profiles  []string   `json:"profiles"`
	Scopes    []string   `json:"scopes"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt"`
}

// validate checks a token request against the configured profiles: a token
// can grant only scopes that exist and profiles that are configured.
func (req *TokenRequest) validate(profiles []string) error {
	if !clientIDPattern.MatchString(req.ID) {
		return errf(CodeInvalidRequest, "id must be 1 to 64 characters of letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if req.ID == OwnerClient {
		return errf(CodeInvalidRequest, "id %q is reserved", OwnerClient)
	}
	if len(req.Scopes) == 0 || len(req.Scopes) > len(AllScopes) {
		return errf(CodeInvalidRequest, "scopes must name 1 to %d of %s", len(AllScopes), strings.Join(AllScopes, ", "))
	}
	seen := map[string]bool{}
	for _, s := range req.Scopes {
		if !slices.Contains(AllScopes, s) {
			return errf(CodeInvalidRequest, "unknown scope %q (want %s)", s, strings.Join(AllScopes, ", "))
		}
		if seen[s] {
			return errf(CodeInvalidRequest, "scope %q is listed twice", s)
		}
		seen[s] = true
	}
	if len(req.Profiles) == 0 || len(req.Profiles) > 64 {
		return errf(CodeInvalidRequest, "profiles must name 1 to 64 profiles ('*' for all)")
	}
	seen = map[string]bool{}
	for _, p := range req.Profiles {
		if p != "*" && !slices.Contains(profiles, p) {
			return errf(CodeUnknownProfile, "profile %q is not configured (configured: %s)", p, strings.Join(profiles, ", "))
		}
		if seen[p] {
			return errf(CodeInvalidRequest, "profile %q is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

func tokenID(hash [32]byte) string { return hex.EncodeToString(hash[:6]) }

// MintToken stores a new client token and returns it. It works on the
// database directly, so the CLI can use it while the daemon is down.
func MintToken(ctx context.Context, db *store.DB, req TokenRequest, profiles []string, now time.Time) (IssuedToken, error) {
	if err := req.validate(profiles); err != nil {
		return IssuedToken{}, err
	}
	tok, err := daemon.NewToken()
	if err != nil {
		return IssuedToken{}, err
	}
	hash := daemon.TokenHash(tok)
	scopes := canonicalScopes(req.Scopes)
	if err := insertToken(ctx, db, hash, req.ID, scopes, req.Profiles, now); err != nil {
		return IssuedToken{}, fmt.Errorf("store token: %w", err)
	}
	return IssuedToken{Token: tok, Client: req.ID, Profiles: req.Profiles, Scopes: scopes, TokenID: tokenID(hash), CreatedAt: now.UTC()}, nil
}

func canonicalScopes(in []string) []string {
	var out []string
	for _, s := range AllScopes {
		if slices.Contains(in, s) {
			out = append(out, s)
		}
	}
	return out
}

// RevokeClient revokes every token of a client and returns how many were active.
func RevokeClient(ctx context.Context, db *store.DB, client string, now time.Time) (int, error) {
	if !clientIDPattern.MatchString(client) {
		return 0, errf(CodeInvalidRequest, "invalid client id %q", client)
	}
	return revokeTokens(ctx, db, client, now)
}

// ListTokens lists every token ever issued, newest first.
func ListTokens(ctx context.Context, db *sql.DB) ([]TokenInfo, error) {
	return listTokens(ctx, db)
}

// authenticate resolves the bearer token of r. The token is never logged or
// echoed; every failure is the same 401.
func (s *Service) authenticate(r *http.Request) (Principal, error) {
	unauth := errf(CodeUnauthorized, "a valid bearer token is required")
	if r.URL.Query().Has("token") || r.URL.Query().Has("access_token") {
		return Principal{}, errf(CodeUnauthorized, "tokens are never accepted in the URL; send Authorization: Bearer")
	}
	if _, err := httpx.SingleHeader(r.Header, "Authorization"); err != nil {
		return Principal{}, errf(CodeInvalidParameter, "%v", err) // which one would be meant is a guess
	}
	tok, ok := daemon.BearerToken(r)
	if !ok || !daemon.WellFormedToken(tok) {
		return Principal{}, unauth
	}
	hash := daemon.TokenHash(tok)
	if daemon.HashEqual(hash, s.ownerHash) {
		return Principal{Client: OwnerClient, Scopes: AllScopes, Owner: true, hash: hash}, nil
	}
	return s.lookupToken(r.Context(), hash)
}

// stillValid re-checks a principal for long-lived requests (SSE, waiters).
func (s *Service) stillValid(ctx context.Context, p Principal) bool {
	if p.Owner {
		return true
	}
	_, err := s.lookupToken(ctx, p.hash)
	return err == nil
}

// watchRevocations ends streams and waiters whose token was revoked directly
// in the database (the CLI with the daemon unreachable, say). API
// revocations end them at once; this catches the rest within a second by
// re-checking open principals only when the revocation count changes.
//
// last is the count when the daemon started, taken before any request is
// served so that no revocation can slip into the baseline.
func (s *Service) watchRevocations(ctx context.Context, every time.Duration, last int64) {
	t := time.NewTicker(every)
	defer t.Stop()
	count := func() int64 { return s.revokedCount(ctx) }
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n := count(); n >= 0 && n != last {
			s.live.sweep(func(p Principal) bool { return s.stillValid(ctx, p) })
			last = n
		}
	}
}

// IssueToken mints a client token for the owner (POST
// /v1/bridge/admin/tokens); the token is shown only in the answer.
func (s *Service) IssueToken(ctx context.Context, req TokenRequest) (IssuedToken, error) {
	return MintToken(ctx, s.db, req, s.profileNames(), s.now())
}

// TokenList is every token issued, without secrets.
type TokenList struct {
	Tokens []TokenInfo `json:"tokens"`
}

// Tokens lists every token ever issued, newest first.
func (s *Service) Tokens(ctx context.Context) (TokenList, error) {
	toks, err := ListTokens(ctx, s.db.Reader())
	return TokenList{Tokens: toks}, err
}

// Revocation answers a client's revocation (JSON name order).
type Revocation struct {
	Client        string `json:"client"`
	ClosedStreams int    `json:"closedStreams"`
	// EndedSessions is set for the owner only: the web console sessions
	// signed out.
	EndedSessions *int `json:"endedSessions,omitempty"`
	RevokedTokens int  `json:"revokedTokens"`
}

// Revoke revokes every token of client and ends its streams and waiters
// at once (spec: Authentication, 7).
func (s *Service) Revoke(ctx context.Context, client string) (Revocation, error) {
	if client == OwnerClient && s.ownerRevoke != nil {
		// The owner token is a file, not a row: revoking the owner signs
		// out the browser sessions that act with it (the web console).
		n := s.ownerRevoke()
		return Revocation{Client: client, EndedSessions: &n}, nil
	}
	n, err := RevokeClient(ctx, s.db, client, s.now())
	if err != nil {
		return Revocation{}, err
	}
	return Revocation{Client: client, RevokedTokens: n, ClosedStreams: s.live.revoke(client)}, nil
}

// OnOwnerRevoke sets what revoking the owner does (package wire: end the
// console's sessions); f returns how many sessions ended.
func (s *Service) OnOwnerRevoke(f func() int) { s.ownerRevoke = f }
