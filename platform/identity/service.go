// Package identity is the platform's access foundation (docs/platform-api.md,
// "Identity and sign-in settings", "Authentication", "Provisioning"):
// principals linked to sign-ins, scoped grants, the scope hierarchy of
// tenants, projects and environments, the local workspace bootstrap, the
// access audit, and their HTTP routes. Token verification and the grant
// rules themselves live in platform/auth; the shared HTTP rules in
// platform/api.
package identity

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/store"
)

// Options configures New.
type Options struct {
	DB *store.DB
	// Verifier verifies bearer tokens of every configured provider; nil
	// when none is configured (every token is then refused).
	Verifier *auth.Verifier
	// LocalIssuer is the built-in provider's issuer URL ("" when disabled).
	LocalIssuer string
	// ExternalIssuers are the issuers of the configured external providers.
	ExternalIssuers []string
	// IsOwner recognises the daemon owner token.
	IsOwner func(*http.Request) bool
	// ClientConfiguration is what GET /api/v1/client-configuration publishes.
	ClientConfiguration ClientConfiguration
	Logger              *slog.Logger
	Now                 func() time.Time
}

// Service serves the identity routes and authenticates platform requests.
type Service struct {
	db          *store.DB
	verifier    *auth.Verifier
	localIssuer string
	external    map[string]bool
	isOwner     func(*http.Request) bool
	clientCfg   ClientConfiguration
	log         *slog.Logger
	now         func() time.Time
	cache       *accessCache
}

// cacheEntries bounds the access cache (sign-ins with a cached principal).
const cacheEntries = 10_000

// New builds the service.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ext := make(map[string]bool, len(o.ExternalIssuers))
	for _, iss := range o.ExternalIssuers {
		ext[iss] = true
	}
	if o.ClientConfiguration.SignIn == nil {
		o.ClientConfiguration.SignIn = []SignInEntry{}
	}
	return &Service{
		db: o.DB, verifier: o.Verifier, localIssuer: o.LocalIssuer, external: ext, isOwner: o.IsOwner,
		clientCfg: o.ClientConfiguration, log: o.Logger, now: o.Now, cache: newAccessCache(cacheEntries),
	}
}

// Invalidate makes every cached principal and grant list stale; the store
// calls it after each committed access change.
func (s *Service) Invalidate() { s.cache.invalidate() }

// linkableIssuer maps the issuer of a principal to create to the stored
// form: a configured external issuer as is, the built-in provider's URL or
// LocalIssuer to LocalIssuer. Others are refused.
func (s *Service) linkableIssuer(iss string) (string, bool) {
	switch {
	case s.external[iss]:
		return iss, true
	case iss == LocalIssuer || (s.localIssuer != "" && iss == s.localIssuer):
		return LocalIssuer, true
	}
	return "", false
}

// newID returns a new time-ordered canonical UUID (version 7), so id order
// is creation order.
func newID() string { return uuid.Must(uuid.NewV7()).String() }

func (s *Service) nowMS() time.Time { return s.now().UTC().Truncate(time.Millisecond) }
