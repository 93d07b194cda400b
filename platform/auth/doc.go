// Package auth authenticates and authorizes platform API requests (docs/platform-api.md,
// "Authentication"): bearer JWTs verified offline against the identity
// providers' published keys, the daemon's built-in identity provider, and
// local scoped grants. It has no storage and no routing; callers load
// principals and grants and map every token rejection to 401
// PF-UNAUTHENTICATED and every denial to 403 PF-FORBIDDEN.
//
// # Token verification
//
// Verifier.Verify accepts only a compact JWS of at most 32 KiB, signed with
// an allowed asymmetric algorithm (RS256 by default; HS* and none can never
// be configured), whose payload carries typ "Bearer", the exact configured
// issuer, the configured audience, an allowed client (azp, else client_id),
// a non-empty sub and an exp; exp, nbf and iat are checked with a leeway
// (30 s by default). Each failure has its own Reason (see errors.go).
// Claims are checked before the key lookup and the signature, so a token
// with wrong claims never causes a key fetch or an RSA operation. A bounded
// memo (4096 entries) remembers exact token bytes whose signature already
// verified under the identical, still published key object, so a client
// reusing its token skips the ~30 µs RSA operation; parsing and all claim
// checks run on every call, and a key refresh invalidates the memo entries
// of replaced or removed keys.
//
// # Key sets (JWKS)
//
// Keys are fetched only from each issuer's configured JWKS URL (https, or
// http on loopback), with a client that ignores proxy environment variables,
// refuses redirects and gives up after 5 s. A response over 256 KiB or a set
// of more than 64 keys is rejected whole; only public RSA (>= 2048 bits) and
// EC keys with use "sig" or no use are kept. The cache policy per issuer:
//
//   - keys younger than 300 s are used as they are;
//   - older keys are still used while one background refresh runs
//     (stale-while-revalidate), so no request waits for a periodic refresh;
//     a failed refresh keeps the previous keys, up to MaxStale (1 h by
//     default) after their last successful fetch; after that, or before the
//     first fetch, requests wait for a fetch;
//   - an unknown kid triggers one coordinated refresh: concurrent callers
//     share the same fetch, and another unknown-kid refresh starts no sooner
//     than 5 s later; tokens with unknown kids arriving in between are
//     rejected without a fetch;
//   - after a failed fetch no new fetch starts for 5 s.
//
// A key removed from the published set stops verifying after the next
// refresh (at most about 300 s, or at once when a new kid forces a refresh).
//
// # Built-in identity provider
//
// IdP serves, relative to its issuer URL: PathDiscovery (metadata),
// PathJWKS (current and previous public keys), PathDeviceCode,
// PathToken (RFC 8628 device grant), PathDevice (instructions) and
// PathDeviceApprove (approval by the local operator, authenticated by a
// pluggable DeviceApprover that checks the owner token). The platform
// verifies its tokens through a normal Verifier configured with
// IdP.VerifierIssuer, i.e. over the same JWKS fetch path as any external
// provider. Pending device authorizations live in memory: a restart drops
// pending logins only.
//
// # Grants
//
// Capabilities, roles and the rules are listed in ROLES.md, generated from
// RoleDefinitions. Authorize, CheckDelegation and CheckRevocation are pure
// functions over the grants the caller loaded, so disabling a principal or
// revoking a grant applies on the next request regardless of token expiry.
package auth
