package auth

import (
	"context"
	"slices"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// BenchmarkVerifyAndAuthorize measures the per-request cost with a warm key
// cache, for a client reusing its token: token verification (RS256,
// 2048-bit; the signature memo skips the repeated RSA operation, every
// other check runs) plus an authorization decision over a realistic grant
// list. It also reports the median.
func BenchmarkVerifyAndAuthorize(b *testing.B) {
	benchVerifyAndAuthorize(b, true)
}

// BenchmarkVerifyAndAuthorizeNoMemo is the same with the memo disabled: a
// full RSA signature verification on every call (a first-seen token).
func BenchmarkVerifyAndAuthorizeNoMemo(b *testing.B) {
	benchVerifyAndAuthorize(b, false)
}

func benchVerifyAndAuthorize(b *testing.B, memo bool) {
	k0 := testKeys()[0]
	srv := newJWKSServer(b, pubJWK(k0, "k0"), pubJWK(testKeys()[1], "k1"))
	clock := newFakeClock()
	v := newTestVerifier(b, srv.URL, clock)
	tok := sign(b, k0, jose.RS256, "k0", validClaims(clock.Now()))
	ctx := context.Background()
	if !memo {
		v.memo = nil
	}
	if _, err := v.Verify(ctx, tok); err != nil { // warm the cache
		b.Fatal(err)
	}
	principal := Principal{ID: "user-1", Kind: KindHuman, Issuer: testIssuer, Subject: "user-1"}
	grants := []Grant{
		{ID: "a", PrincipalID: "someone-else", Scope: scopeTenantA, Role: RoleTenantAdmin},
		{ID: "b", PrincipalID: "user-1", Scope: scopeTenantB, Role: RoleOperator},
		{ID: "c", PrincipalID: "user-1", Scope: scopeProjA2, Role: RoleDeveloper},
		{ID: "d", PrincipalID: "user-1", Scope: scopeTenantA, Role: RoleViewer, Revoked: true},
		{ID: "e", PrincipalID: "user-1", Scope: scopeProjA1, Role: RoleDeployer},
		{ID: "f", PrincipalID: "user-1", Scope: scopeEnvA1x, Role: RoleOperator},
	}
	durations := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		c, err := v.Verify(ctx, tok)
		if err != nil {
			b.Fatal(err)
		}
		if c.Subject != principal.Subject {
			b.Fatal("subject mismatch")
		}
		if d := Authorize(grants, principal, CapRunCancel, scopeResEnv); !d.Allowed || d.GrantID != "f" {
			b.Fatalf("unexpected decision %+v", d)
		}
		durations = append(durations, time.Since(start))
	}
	if srv.hits.Load() != 1 {
		b.Fatalf("cache not warm: %d fetches", srv.hits.Load())
	}
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds()), "median-ns")
}

// BenchmarkAuthorize isolates the grant decision.
func BenchmarkAuthorize(b *testing.B) {
	principal := Principal{ID: "user-1", Kind: KindHuman}
	grants := []Grant{
		{ID: "a", PrincipalID: "someone-else", Scope: scopeTenantA, Role: RoleTenantAdmin},
		{ID: "b", PrincipalID: "user-1", Scope: scopeTenantB, Role: RoleOperator},
		{ID: "e", PrincipalID: "user-1", Scope: scopeProjA1, Role: RoleDeployer},
		{ID: "f", PrincipalID: "user-1", Scope: scopeEnvA1x, Role: RoleOperator},
	}
	b.ReportAllocs()
	for b.Loop() {
		if !Authorize(grants, principal, CapRunCancel, scopeResEnv).Allowed {
			b.Fatal("denied")
		}
	}
}
