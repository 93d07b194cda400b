package auth

import (
	"context"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// FuzzVerify feeds arbitrary input to Verify: it must never panic, must
// return claims exactly when it returns no error, must always name a
// reason, and must never echo a token-shaped input in its error.
func FuzzVerify(f *testing.F) {
	keys := testKeys()
	srv := newJWKSServer(f, pubJWK(keys[0], "k0"), pubJWK(keys[1], "k1"))
	clock := newFakeClock()
	v := newTestVerifier(f, srv.URL, clock)
	now := clock.Now()

	valid := sign(f, keys[0], jose.RS256, "k0", validClaims(now))
	parts := strings.Split(valid, ".")
	seeds := []string{
		valid,
		sign(f, keys[2], jose.RS256, "k9", validClaims(now)),
		sign(f, keys[0], jose.RS256, "", validClaims(now)),
		parts[0] + "." + parts[1] + ".",
		parts[0] + ".." + parts[2],
		"." + parts[1] + "." + parts[2],
		b64(`{"alg":"none"}`) + "." + parts[1] + ".",
		b64(`{"alg":"RS256","crit":["exp"],"exp":1}`) + "." + parts[1] + "." + parts[2],
		b64(`{"alg":"RS256","kid":["k0"]}`) + "." + parts[1] + "." + parts[2],
		parts[0] + "." + b64(`{"iss":null,"aud":[1,{}],"exp":"x"}`) + "." + parts[2],
		parts[0] + "." + b64(`null`) + "." + parts[2],
		"", ".", "..", "....", "a.b.c", "{}", "{\"payload\":\"\"}",
		strings.Repeat("A", 100) + ".." + strings.Repeat("_", 10),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := v.Verify(context.Background(), s)
		if (err == nil) != (c != nil) {
			t.Fatalf("claims %v with error %v", c, err)
		}
		if err == nil {
			if c.Subject == "" || c.Issuer != testIssuer {
				t.Fatalf("accepted invalid claims %+v", c)
			}
			return
		}
		if ReasonOf(err) == "" {
			t.Fatalf("error without reason: %v", err)
		}
		if len(s) >= 24 && strings.Count(s, ".") >= 2 && strings.Contains(err.Error(), s) {
			t.Fatalf("token echoed in error")
		}
	})
}

// FuzzParseJWKS: arbitrary key set documents never panic and never yield
// more than MaxJWKSKeys keys or a non-public key.
func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"","y":""}]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"AAAA"}],"x":1}`))
	f.Add([]byte(`{"keys":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		keys, err := parseJWKS(body)
		if err != nil {
			return
		}
		if len(keys) == 0 || len(keys) > MaxJWKSKeys {
			t.Fatalf("%d keys accepted", len(keys))
		}
		for _, k := range keys {
			if !k.IsPublic() || !k.Valid() {
				t.Fatal("non-public or invalid key accepted")
			}
		}
	})
}
